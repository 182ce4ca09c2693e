package decider

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	deciderv1 "github.com/jobset-decider/jobset-decider/clients/go/decider/v1"
)

// An object is a Kubernetes object as the API server serves it, in any form a Go program
// holds one: JSON ([]byte, json.RawMessage, string) or a value encoding/json turns into it
// (*unstructured.Unstructured, map[string]interface{}, *batchv1.Job...). It must carry its
// apiVersion and kind: the decider sorts objects by them, and client-go's typed informers
// leave them empty (set TypeMeta before sending such an object).

// DecideInput is what a controller or scheduler watched: a JobSet and the objects around it.
type DecideInput struct {
	// JobSet (jobset.x-k8s.io/v1alpha2), spec and status.
	JobSet interface{}
	// Observed: batch/v1 Jobs, Pods, the headless Service, PVCs, Workloads, PodGroups, in any
	// order. They travel whole (observed_json): the decider summarizes them with the same
	// code as the Python client, so the answer is the one the shim gets.
	Observed []interface{}
	// Now is the decision's clock (zero: time.Now()).
	Now time.Time
	// Options: controller name, feature gates, gang scheduling choices (nil: defaults).
	Options *deciderv1.Options
}

// NewDecideRequest builds a DecideRequest. A bad object is an error naming it (jobset,
// observed[2]...), before anything is sent.
func NewDecideRequest(in DecideInput) (*deciderv1.DecideRequest, error) {
	js, _, err := objectJSON(in.JobSet, "jobset")
	if err != nil {
		return nil, err
	}
	now := in.Now
	if now.IsZero() {
		now = time.Now()
	}
	req := &deciderv1.DecideRequest{JobsetJson: js, Now: timestamppb.New(now), Options: in.Options}
	for i, obj := range in.Observed {
		text, _, err := objectJSON(obj, fmt.Sprintf("observed[%d]", i))
		if err != nil {
			return nil, err
		}
		req.ObservedJson = append(req.ObservedJson, text)
	}
	return req, nil
}

// SimulateInput is a DecideInput (Now is when the simulation starts) and what may happen.
type SimulateInput struct {
	DecideInput
	// Events, e.g. JobFails("trainer-workers-1", 30*time.Second, "PodFailurePolicy", "").
	Events []*deciderv1.SimulationEvent
	// MaxPasses: Decide passes to run at most (0: the server's default, 100).
	MaxPasses int32
}

// NewSimulateRequest builds a SimulateRequest.
func NewSimulateRequest(in SimulateInput) (*deciderv1.SimulateRequest, error) {
	observed, err := NewDecideRequest(in.DecideInput)
	if err != nil {
		return nil, err
	}
	return &deciderv1.SimulateRequest{Observed: observed, Events: in.Events, MaxPasses: in.MaxPasses}, nil
}

// JobFails is a simulation event: the child Job fails `at` after the start, with the reason its
// Failed condition would carry ("": BackoffLimitExceeded; "PodFailurePolicy" for an eviction a
// pod failure policy matched).
func JobFails(job string, at time.Duration, reason, message string) *deciderv1.SimulationEvent {
	e := Event(deciderv1.SimulationEventType_SIMULATION_EVENT_TYPE_JOB_FAILED, job, at)
	e.Reason, e.Message = reason, message
	return e
}

// Event is a simulation event of any type ("" job for the JobSet's own events).
func Event(t deciderv1.SimulationEventType, job string, at time.Duration) *deciderv1.SimulationEvent {
	return &deciderv1.SimulationEvent{Type: t, Job: job, AtSeconds: int64(at / time.Second)}
}

// NewValidateRequest builds admission's request: a JobSet (or a batch/v1 Job), the stored one
// for an update (nil on create), and the PVCs (or, for a Job, PodGroups) that exist.
func NewValidateRequest(object, old interface{}, existing []interface{}, opts *deciderv1.Options) (*deciderv1.ValidateRequest, error) {
	text, _, err := objectJSON(object, "object")
	if err != nil {
		return nil, err
	}
	req := &deciderv1.ValidateRequest{ObjectJson: text, Options: opts}
	if old != nil {
		if req.OldObjectJson, _, err = objectJSON(old, "old"); err != nil {
			return nil, err
		}
	}
	if req.Objects, err = observedObjects(existing); err != nil {
		return nil, err
	}
	return req, nil
}

// NewPlanGangRequest builds gang scheduling's request: a Job or JobSet and the Workloads and
// PodGroups that exist (Jobs and Pods among them are left out: the gang plan never reads them).
func NewPlanGangRequest(object interface{}, existing []interface{}, opts *deciderv1.Options) (*deciderv1.PlanGangRequest, error) {
	text, _, err := objectJSON(object, "object")
	if err != nil {
		return nil, err
	}
	req := &deciderv1.PlanGangRequest{ObjectJson: text, Options: opts}
	if req.Objects, err = observedObjects(existing); err != nil {
		return nil, err
	}
	return req, nil
}

// NewPodSetsRequest builds Kueue pod sets' request for a Job or JobSet.
func NewPodSetsRequest(object interface{}, opts *deciderv1.Options) (*deciderv1.PodSetsRequest, error) {
	text, _, err := objectJSON(object, "object")
	if err != nil {
		return nil, err
	}
	return &deciderv1.PodSetsRequest{ObjectJson: text, Options: opts}, nil
}

// ObservedObject summarizes an object for the typed lists of PlanGang and Validate: its
// apiVersion, kind, name, uid, its controller's uid, and the object whole.
func ObservedObject(object interface{}, field string) (*deciderv1.ObservedObject, error) {
	text, head, err := objectJSON(object, field)
	if err != nil {
		return nil, err
	}
	o := &deciderv1.ObservedObject{ApiVersion: head.APIVersion, Kind: head.Kind,
		Name: head.Metadata.Name, Uid: head.Metadata.UID, ObjectJson: text}
	for _, ref := range head.Metadata.OwnerReferences {
		if ref.Controller != nil && *ref.Controller {
			o.ControllerUid = ref.UID
			break
		}
	}
	return o, nil
}

func observedObjects(objects []interface{}) ([]*deciderv1.ObservedObject, error) {
	var out []*deciderv1.ObservedObject
	for i, obj := range objects {
		field := fmt.Sprintf("objects[%d]", i)
		_, head, err := objectJSON(obj, field)
		if err != nil {
			return nil, err
		}
		if head.Kind == "Job" || head.Kind == "Pod" {
			continue
		}
		o, err := ObservedObject(obj, field)
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}

// header is what the client reads of an object; the decider reads the rest.
type header struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name            string `json:"name"`
		UID             string `json:"uid"`
		OwnerReferences []struct {
			UID        string `json:"uid"`
			Controller *bool  `json:"controller"`
		} `json:"ownerReferences"`
	} `json:"metadata"`
}

// objectJSON is the object as one JSON text, checked to be a JSON object with an apiVersion and
// a kind. field names it in errors.
func objectJSON(object interface{}, field string) (string, header, error) {
	var raw []byte
	switch v := object.(type) {
	case nil:
		return "", header{}, fmt.Errorf("%s: Required value", field)
	case []byte:
		raw = v
	case json.RawMessage:
		raw = v
	case string:
		raw = []byte(v)
	default:
		var err error
		if raw, err = json.Marshal(v); err != nil {
			return "", header{}, fmt.Errorf("%s: %v", field, err)
		}
	}
	raw = bytes.TrimSpace(raw)
	var head header
	if len(raw) == 0 || raw[0] != '{' {
		return "", head, fmt.Errorf("%s: must be a JSON object", field)
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return "", head, fmt.Errorf("%s: %v", field, err)
	}
	if head.APIVersion == "" || head.Kind == "" {
		return "", head, fmt.Errorf("%s: apiVersion and kind: Required value (an object from a "+
			"typed client-go informer has an empty TypeMeta: set it before sending)", field)
	}
	return string(raw), head, nil
}

// InvalidField splits the message of the decider's INVALID_ARGUMENT into the field it names
// and the problem: "spec.replicatedJobs[1].name: Required value" is
// ("spec.replicatedJobs[1].name", "Required value"). ok is false for any other error.
func InvalidField(err error) (field, problem string, ok bool) {
	st, isStatus := status.FromError(err)
	if !isStatus || st.Code() != codes.InvalidArgument {
		return "", "", false
	}
	i := strings.Index(st.Message(), ": ")
	if i <= 0 || strings.ContainsAny(st.Message()[:i], " \t") {
		return "", st.Message(), false
	}
	return st.Message()[:i], st.Message()[i+2:], true
}
