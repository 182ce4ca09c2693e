// Command admission-check is what a Kueue admission check controller would ask the decider
// before letting a JobSet start: its pod sets (the quota it requests) and what happens if one
// of its Jobs fails right after it starts. It prints both and the state the check would write
// to the Workload's status.admissionChecks (Ready, Retry, Rejected or Pending).
//
//	go run ./examples/admission-check --server localhost:50051 -f examples/leader-workers.yaml
//	kubectl get jobset,jobs -o yaml | go run ./examples/admission-check --server ... -f -
//
// The policy: a JobSet the decider refuses is Rejected (Kueue evicts and deactivates it); with
// --require-recovery, so is one that a single Job failure would fail outright (no restart
// left). A decider that cannot answer now (unreachable, shedding load past the client's
// retries, out of time) is Retry, so Kueue asks again after --retry-after. A simulation that
// cannot conclude (the Job never exists, the pass limit) is Pending. Anything else is Ready.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/jobset-decider/jobset-decider/clients/go/decider"
	deciderv1 "github.com/jobset-decider/jobset-decider/clients/go/decider/v1"
)

// Kueue's AdmissionCheckState values (kueue.x-k8s.io/v1beta2 CheckState).
const (
	stateReady    = "Ready"
	stateRetry    = "Retry"
	stateRejected = "Rejected"
	statePending  = "Pending"
)

// check is the entry the controller would write to Workload.status.admissionChecks.
type check struct {
	State               string `json:"state"`
	Message             string `json:"message"`
	RequeueAfterSeconds int32  `json:"requeueAfterSeconds,omitempty"`
}

type files []string

func (f *files) String() string     { return strings.Join(*f, ",") }
func (f *files) Set(v string) error { *f = append(*f, v); return nil }

type config struct {
	server, name, failJob, reason, output, now string
	caFile, certFile, keyFile, serverName      string
	files                                      files
	timeout, retryAfter                        time.Duration
	requireRecovery                            bool
}

func main() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }

// run is the command; exit 0 when a decision was printed, 2 for bad flags or input.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var cfg config
	fs := flag.NewFlagSet("admission-check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.server, "server", "", "the decider, HOST:PORT or dns:///NAME:PORT (required)")
	fs.Var(&cfg.files, "f", "a file of YAML or JSON objects, as kubectl prints them (- is stdin); repeatable")
	fs.StringVar(&cfg.name, "name", "", "the JobSet to check, NAME or NAMESPACE/NAME, when the input holds several")
	fs.StringVar(&cfg.failJob, "fail", "", "the child Job whose failure is simulated (default: the JobSet's first, <jobset>-<replicatedJob>-0)")
	fs.StringVar(&cfg.reason, "reason", "", "the failure's reason (default BackoffLimitExceeded; PodFailurePolicy for a matched pod failure policy)")
	fs.StringVar(&cfg.now, "now", "", "the time of the check, RFC 3339 (default: now)")
	fs.BoolVar(&cfg.requireRecovery, "require-recovery", false, "reject a JobSet that one Job failure would fail outright")
	fs.DurationVar(&cfg.retryAfter, "retry-after", 30*time.Second, "requeueAfterSeconds of a Retry")
	fs.DurationVar(&cfg.timeout, "timeout", 10*time.Second, "deadline of each call, retries included")
	fs.StringVar(&cfg.caFile, "ca-file", "", "TLS: the CA of the decider's certificate")
	fs.StringVar(&cfg.certFile, "cert-file", "", "mutual TLS: this client's certificate")
	fs.StringVar(&cfg.keyFile, "key-file", "", "mutual TLS: this client's key")
	fs.StringVar(&cfg.serverName, "server-name", "", "TLS: the name to check in the decider's certificate")
	fs.StringVar(&cfg.output, "o", "text", "output: text or json")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if cfg.server == "" || len(cfg.files) == 0 || (cfg.output != "text" && cfg.output != "json") {
		fmt.Fprintln(stderr, "admission-check: --server and -f are required; -o is text or json")
		return 2
	}
	now := time.Now()
	if cfg.now != "" {
		var err error
		if now, err = time.Parse(time.RFC3339, cfg.now); err != nil {
			fmt.Fprintf(stderr, "admission-check: --now: %v\n", err)
			return 2
		}
	}
	var objects []object
	for _, path := range cfg.files {
		text, err := readInput(path, stdin)
		if err != nil {
			fmt.Fprintf(stderr, "admission-check: -f %s: %v\n", path, err)
			return 2
		}
		read, err := readObjects(text, path)
		if err != nil {
			fmt.Fprintf(stderr, "admission-check: %v\n", err)
			return 2
		}
		objects = append(objects, read...)
	}
	jobset, owned, err := pick(objects, cfg.name)
	if err != nil {
		fmt.Fprintf(stderr, "admission-check: %v\n", err)
		return 2
	}
	if cfg.failJob == "" {
		if len(jobset.Spec.ReplicatedJobs) == 0 {
			fmt.Fprintln(stderr, "admission-check: the JobSet has no replicatedJobs: name one with --fail")
			return 2
		}
		cfg.failJob = fmt.Sprintf("%s-%s-0", jobset.Metadata.Name, jobset.Spec.ReplicatedJobs[0].Name)
	}
	opts := decider.Options{Timeout: cfg.timeout}
	if cfg.caFile != "" || cfg.certFile != "" || cfg.keyFile != "" || cfg.serverName != "" {
		opts.TLS = &decider.TLSFiles{CAFile: cfg.caFile, CertFile: cfg.certFile, KeyFile: cfg.keyFile,
			ServerName: cfg.serverName}
	}
	client, err := decider.Dial(cfg.server, opts)
	if err != nil {
		fmt.Fprintf(stderr, "admission-check: %v\n", err)
		return 2
	}
	defer client.Close()

	r := ask(context.Background(), client, cfg, jobset, owned, now)
	if cfg.output == "json" {
		return printJSON(stdout, stderr, r)
	}
	printText(stdout, jobset.key(), cfg.failJob, r)
	return 0
}

func readInput(path string, stdin io.Reader) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(stdin)
	}
	return os.ReadFile(path)
}

// result is what the decider answered and the check's decision.
type result struct {
	podSets  *deciderv1.PodSetsResponse
	outcome  *deciderv1.SimulationOutcome
	decision check
}

// ask calls PodSets and Simulate and decides.
func ask(ctx context.Context, client *decider.Client, cfg config, jobset object, owned []object, now time.Time) result {
	var r result
	req, err := decider.NewPodSetsRequest(jobset.raw, nil)
	if err == nil {
		r.podSets, err = client.PodSets(ctx, req)
	}
	if err != nil {
		r.decision = failed("PodSets", err, cfg.retryAfter)
		return r
	}
	observed := make([]interface{}, len(owned))
	for i, o := range owned {
		observed[i] = o.raw
	}
	var resume []*deciderv1.SimulationEvent
	if suspended(jobset) {
		// Under Kueue the JobSet waits suspended; admission resumes it, so the question is
		// what happens once it runs.
		resume = append(resume, decider.Event(deciderv1.SimulationEventType_SIMULATION_EVENT_TYPE_JOBSET_RESUMED, "", 0))
	}
	sim, err := decider.NewSimulateRequest(decider.SimulateInput{
		DecideInput: decider.DecideInput{JobSet: jobset.raw, Observed: observed, Now: now},
		Events:      append(resume, decider.JobFails(cfg.failJob, 0, cfg.reason, "simulated by the admission check")),
	})
	var answer *deciderv1.SimulateResponse
	if err == nil {
		answer, err = client.Simulate(ctx, sim)
	}
	if err != nil {
		r.decision = failed("Simulate", err, cfg.retryAfter)
		return r
	}
	r.outcome = answer.Outcome
	r.decision = decide(r.podSets, r.outcome, cfg)
	return r
}

func suspended(jobset object) bool {
	var spec struct {
		Spec struct {
			Suspend bool `json:"suspend"`
		} `json:"spec"`
	}
	return json.Unmarshal(jobset.raw, &spec) == nil && spec.Spec.Suspend
}

// failed is the check's state when a call did not answer.
func failed(rpc string, err error, retryAfter time.Duration) check {
	st, _ := status.FromError(err)
	switch st.Code() {
	case codes.InvalidArgument:
		// The decider will never decide this JobSet: Kueue should not run it.
		return check{State: stateRejected, Message: fmt.Sprintf("the decider refuses the JobSet (%s): %s", rpc, st.Message())}
	case codes.Unavailable, codes.ResourceExhausted, codes.DeadlineExceeded, codes.Canceled, codes.Aborted:
		return check{State: stateRetry, RequeueAfterSeconds: int32(retryAfter / time.Second),
			Message: fmt.Sprintf("the decider did not answer %s: %s: %s", rpc, st.Code(), st.Message())}
	}
	return check{State: statePending, Message: fmt.Sprintf("%s: %s: %s", rpc, st.Code(), st.Message())}
}

// decide turns the answers into the check's state.
func decide(podSets *deciderv1.PodSetsResponse, outcome *deciderv1.SimulationOutcome, cfg config) check {
	if len(outcome.EventsNotApplied) > 0 {
		return check{State: statePending, Message: "the simulated failure did not apply: " + strings.Join(outcome.EventsNotApplied, "; ")}
	}
	if !outcome.Settled {
		return check{State: statePending, Message: fmt.Sprintf("the simulation did not settle in %d passes", outcome.Passes)}
	}
	what := fmt.Sprintf("%s; if %s fails now: %s", quota(podSets), cfg.failJob, outcome.Summary)
	if outcome.TerminalState == "Failed" && cfg.requireRecovery {
		return check{State: stateRejected, Message: "one Job failure fails this JobSet (--require-recovery): " + what}
	}
	return check{State: stateReady, Message: what}
}

// quota sums the pod sets' pods and total requests.
func quota(resp *deciderv1.PodSetsResponse) string {
	var pods int64
	totals := map[string]int64{}
	for _, ps := range resp.PodSets {
		pods += ps.Count
		for res, n := range ps.TotalRequests {
			totals[res] += n
		}
	}
	return fmt.Sprintf("%d pod(s)%s", pods, requests(totals))
}

func requests(m map[string]int64) string {
	if len(m) == 0 {
		return ""
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
		if k == "cpu" {
			parts[i] += "m" // Kueue counts cpu in millicores
		}
	}
	return " requesting " + strings.Join(parts, " ")
}

func printText(w io.Writer, key, job string, r result) {
	fmt.Fprintf(w, "JobSet %s\n", key)
	if r.podSets != nil {
		fmt.Fprintln(w, "pod sets (PodSets):")
		for _, ps := range r.podSets.PodSets {
			fmt.Fprintf(w, "  %-12s count %d", ps.Name, ps.Count)
			if len(ps.PodRequests) > 0 {
				fmt.Fprintf(w, "  per pod:%s", strings.TrimPrefix(requests(ps.PodRequests), " requesting"))
			}
			if ps.Gang != nil {
				fmt.Fprintf(w, "  gang %s", ps.Gang.PodGroup)
			}
			fmt.Fprintln(w)
			for _, warning := range ps.Warnings {
				fmt.Fprintf(w, "    warning: %s\n", warning)
			}
		}
	}
	if o := r.outcome; o != nil {
		fmt.Fprintf(w, "if %s fails now (Simulate):\n  %s\n", job, o.Summary)
		state := o.TerminalState
		if state == "" {
			state = "running"
		}
		fmt.Fprintf(w, "  terminal state: %s", state)
		if o.Reason != "" {
			fmt.Fprintf(w, " (%s)", o.Reason)
		}
		fmt.Fprintf(w, "; restarts %d, restarts left %d; %d pass(es), settled %t\n",
			o.Restarts, o.RestartsLeft, o.Passes, o.Settled)
		for _, fp := range o.FailurePolicy {
			rule := fp.Rule
			if rule == "" {
				rule = "(no rule matched)"
			}
			fmt.Fprintf(w, "  failure policy: %s %s -> %s\n", fp.Job, rule, fp.Action)
		}
	}
	fmt.Fprintf(w, "admission check: %s\n  %s\n", r.decision.State, r.decision.Message)
	if r.decision.RequeueAfterSeconds > 0 {
		fmt.Fprintf(w, "  requeueAfterSeconds: %d\n", r.decision.RequeueAfterSeconds)
	}
}

func printJSON(stdout, stderr io.Writer, r result) int {
	out := map[string]interface{}{"admissionCheck": r.decision}
	if r.podSets != nil {
		out["podSets"] = json.RawMessage(protojson.Format(r.podSets))
	}
	if r.outcome != nil {
		out["simulated"] = json.RawMessage(protojson.Format(r.outcome))
	}
	text, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		fmt.Fprintf(stderr, "admission-check: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, string(text))
	return 0
}
