package decider_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"sigs.k8s.io/yaml"

	"github.com/jobset-decider/jobset-decider/clients/go/decider"
	deciderv1 "github.com/jobset-decider/jobset-decider/clients/go/decider/v1"
	"github.com/jobset-decider/jobset-decider/clients/go/internal/decidertest"
)

var now = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// example reads a YAML file of the repository's examples/ as the JSON objects in it.
func example(t *testing.T, name string) []json.RawMessage {
	t.Helper()
	text, err := os.ReadFile(filepath.Join(decidertest.Root(t), "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	var out []json.RawMessage
	for _, doc := range strings.Split("\n"+string(text), "\n---\n") {
		j, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		if string(j) != "null" {
			out = append(out, j)
		}
	}
	return out
}

func dial(t *testing.T, address string, opts decider.Options) *decider.Client {
	t.Helper()
	if opts.Timeout == 0 {
		opts.Timeout = 30 * time.Second
	}
	c, err := decider.Dial(address, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestEveryRPCAgainstARealDecider(t *testing.T) {
	address := decidertest.Serve(t, "--workers", "1")
	c := dial(t, address, decider.Options{})
	ctx := context.Background()
	jobset := example(t, "leader-workers.yaml")[0]

	t.Run("Decide creates the Jobs and the Service", func(t *testing.T) {
		req, err := decider.NewDecideRequest(decider.DecideInput{JobSet: jobset, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		plan, err := c.Decide(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		var creates []string
		for _, a := range plan.Actions {
			if a.Type == deciderv1.ActionType_ACTION_TYPE_CREATE_JOB {
				creates = append(creates, a.Name)
			}
		}
		want := "trainer-leader-0 trainer-workers-0 trainer-workers-1 trainer-workers-2"
		if strings.Join(creates, " ") != want {
			t.Fatalf("created %v, want %s", creates, want)
		}
		if plan.DecisionId == "" || len(plan.Explanation) == 0 {
			t.Fatalf("no decision id or explanation: %v", plan)
		}
	})

	t.Run("Decide reads the owned objects sent whole", func(t *testing.T) {
		objects := example(t, "trainer-restarted.yaml")
		observed := make([]interface{}, 0, len(objects)-1)
		for _, o := range objects[1:] {
			observed = append(observed, o)
		}
		req, err := decider.NewDecideRequest(decider.DecideInput{JobSet: objects[0], Observed: observed, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		plan, err := c.Decide(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if plan.Status.Restarts != 1 {
			t.Fatalf("restarts %d, want the 1 the Jobs' labels say", plan.Status.Restarts)
		}
		for _, a := range plan.Actions {
			if a.Type == deciderv1.ActionType_ACTION_TYPE_CREATE_JOB {
				t.Fatalf("the Jobs exist, yet the plan creates %s", a.Name)
			}
		}
	})

	t.Run("Simulate", func(t *testing.T) {
		req, err := decider.NewSimulateRequest(decider.SimulateInput{
			DecideInput: decider.DecideInput{JobSet: jobset, Now: now},
			Events:      []*deciderv1.SimulationEvent{decider.JobFails("trainer-workers-1", 30*time.Second, "", "")},
		})
		if err != nil {
			t.Fatal(err)
		}
		answer, err := c.Simulate(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		o := answer.Outcome
		if o.TerminalState != "Failed" || o.Reason != "FailedJobs" || !o.Settled {
			t.Fatalf("outcome %v, want Failed (FailedJobs): the JobSet has no failure policy", o)
		}
		if len(o.FailurePolicy) != 1 || o.FailurePolicy[0].Job != "trainer-workers-1" {
			t.Fatalf("failure policy %v", o.FailurePolicy)
		}
	})

	t.Run("Validate defaults a valid JobSet and names the fields of an invalid one", func(t *testing.T) {
		req, err := decider.NewValidateRequest(jobset, nil, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		ok, err := c.Validate(ctx, req)
		if err != nil || !ok.Valid || ok.ObjectJson == "" {
			t.Fatalf("valid JobSet: %v %v", ok, err)
		}
		bad := strings.Replace(string(jobset), `"replicas":3`, `"replicas":-1`, 1)
		req, err = decider.NewValidateRequest(bad, nil, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		answer, err := c.Validate(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if answer.Valid || len(answer.Errors) != 1 || answer.Errors[0].Field != "spec.replicatedJobs[1].replicas" {
			t.Fatalf("invalid JobSet: %v", answer)
		}
	})

	t.Run("PlanGang", func(t *testing.T) {
		req, err := decider.NewPlanGangRequest(example(t, "gang-jobset.yaml")[0], nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		plan, err := c.PlanGang(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if plan.Mode != "perReplicatedJob" || len(plan.ObjectsJson) == 0 || len(plan.PodTemplatePatches) == 0 {
			t.Fatalf("gang plan %v", plan)
		}
	})

	t.Run("PodSets", func(t *testing.T) {
		req, err := decider.NewPodSetsRequest(jobset, nil)
		if err != nil {
			t.Fatal(err)
		}
		answer, err := c.PodSets(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, ps := range answer.PodSets {
			got = append(got, ps.Name+"="+strings.TrimSpace(strings.Repeat("x", int(ps.Count))))
		}
		if strings.Join(got, " ") != "leader=x workers=xxxxxx" {
			t.Fatalf("pod sets %v: want leader 1 pod, workers 3 x 2 pods", got)
		}
	})

	t.Run("the connection serves the health service too", func(t *testing.T) {
		answer, err := grpc_health_v1.NewHealthClient(c.Conn()).Check(ctx,
			&grpc_health_v1.HealthCheckRequest{Service: "decider.v1.Decider"})
		if err != nil || answer.Status != grpc_health_v1.HealthCheckResponse_SERVING {
			t.Fatalf("health: %v %v", answer, err)
		}
	})
}

func TestErrorsKeepTheServersFieldPath(t *testing.T) {
	address := decidertest.Serve(t, "--workers", "1")
	c := dial(t, address, decider.Options{})
	jobset := strings.Replace(string(example(t, "leader-workers.yaml")[0]), `"name":"workers"`, `"name":""`, 1)
	req, err := decider.NewDecideRequest(decider.DecideInput{JobSet: jobset, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Decide(context.Background(), req)
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("got %v, want INVALID_ARGUMENT", err)
	}
	field, problem, ok := decider.InvalidField(err)
	if !ok || field != "spec.replicatedJobs[1].name" || problem != "Required value" {
		t.Fatalf("InvalidField(%v) = %q, %q, %t", err, field, problem, ok)
	}
	if c.Retries() != 0 {
		t.Fatalf("an INVALID_ARGUMENT was retried %d times", c.Retries())
	}
	// A child Job with a malformed restart label, observed whole: the path names the object in
	// the request (observed_json[0]) and its field.
	job := `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"trainer-leader-0","uid":"j1",
		"labels":{"jobset.sigs.k8s.io/restart-attempt":"abc"},"ownerReferences":[{"apiVersion":
		"jobset.x-k8s.io/v1alpha2","kind":"JobSet","name":"trainer","controller":true,
		"uid":"6f1d2c3b-0a9e-4c47-9a43-8d7b3f2e1a05"}]}}`
	req, err = decider.NewDecideRequest(decider.DecideInput{JobSet: example(t, "leader-workers.yaml")[0],
		Observed: []interface{}{job}, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Decide(context.Background(), req)
	if field, _, ok := decider.InvalidField(err); !ok || !strings.HasPrefix(field, "observed_json[0].metadata.labels") {
		t.Fatalf("a malformed observed Job: %v", err)
	}
}

func TestRequestsRefuseObjectsTheDeciderCouldNotSort(t *testing.T) {
	typedInformerJob := map[string]interface{}{"metadata": map[string]interface{}{"name": "trainer-leader-0"}}
	for name, in := range map[string]decider.DecideInput{
		"no JobSet":            {},
		"a JSON array":         {JobSet: "[1]"},
		"not JSON":             {JobSet: []byte("{nope")},
		"no TypeMeta":          {JobSet: example(t, "leader-workers.yaml")[0], Observed: []interface{}{typedInformerJob}},
		"a value JSON refuses": {JobSet: map[string]interface{}{"f": func() {}}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := decider.NewDecideRequest(in)
			if err == nil {
				t.Fatal("no error")
			}
			want := "jobset:"
			if name == "no TypeMeta" {
				want = "observed[0]: apiVersion and kind: Required value"
			}
			if !strings.HasPrefix(err.Error(), want) {
				t.Fatalf("%v: want it to start %q", err, want)
			}
		})
	}
}

func TestDeadlines(t *testing.T) {
	address := decidertest.Serve(t, "--workers", "1")
	req, err := decider.NewDecideRequest(decider.DecideInput{JobSet: example(t, "leader-workers.yaml")[0], Now: now})
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, address, decider.Options{})
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	if _, err := c.Decide(ctx, req); status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("a deadline already passed: %v", err)
	}
	// The client's own timeout bounds a call whose context has none.
	short := dial(t, address, decider.Options{Timeout: time.Nanosecond})
	if _, err := short.Decide(context.Background(), req); status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("Options.Timeout 1ns: %v", err)
	}
	// A context's deadline wins over the client's timeout.
	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := short.Decide(ctx, req); err != nil {
		t.Fatalf("a 30 s context on a client of 1 ns: %v", err)
	}
}

func TestTLSAndMutualTLS(t *testing.T) {
	pki := decidertest.MakePKI(t)
	req, err := decider.NewPodSetsRequest(example(t, "leader-workers.yaml")[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	call := func(address string, opts decider.Options) error {
		opts.Retry = &decider.NoRetry
		opts.Timeout = 10 * time.Second
		c := dial(t, address, opts)
		_, err := c.PodSets(context.Background(), req)
		return err
	}
	tlsOnly := decidertest.Serve(t, "--workers", "1", "--tls-cert-file", pki.ServerCert, "--tls-key-file", pki.ServerKey)
	if err := call(tlsOnly, decider.Options{TLS: &decider.TLSFiles{CAFile: pki.CA}}); err != nil {
		t.Fatalf("TLS: %v", err)
	}
	if err := call("dns:///localhost:"+port(tlsOnly), decider.Options{TLS: &decider.TLSFiles{CAFile: pki.CA}}); err != nil {
		t.Fatalf("TLS to dns:///localhost: %v", err)
	}
	if err := call(tlsOnly, decider.Options{}); status.Code(err) != codes.Unavailable {
		t.Fatalf("plaintext to a TLS server: %v", err)
	}
	if err := call(tlsOnly, decider.Options{TLS: &decider.TLSFiles{}}); status.Code(err) != codes.Unavailable {
		t.Fatalf("a certificate the system's CAs do not know: %v", err)
	}
	mutual := decidertest.Serve(t, "--workers", "1", "--tls-cert-file", pki.ServerCert,
		"--tls-key-file", pki.ServerKey, "--tls-client-ca-file", pki.CA)
	files := &decider.TLSFiles{CAFile: pki.CA, CertFile: pki.ClientCert, KeyFile: pki.ClientKey}
	if err := call(mutual, decider.Options{TLS: files}); err != nil {
		t.Fatalf("mutual TLS: %v", err)
	}
	if err := call(mutual, decider.Options{TLS: &decider.TLSFiles{CAFile: pki.CA}}); err == nil {
		t.Fatal("a server that asks for a client certificate answered a client without one")
	}
	if _, err := decider.Dial(mutual, decider.Options{TLS: &decider.TLSFiles{CAFile: pki.CA, CertFile: pki.ClientCert}}); err == nil {
		t.Fatal("a certificate without its key was taken")
	}
}

func port(address string) string { return address[strings.LastIndex(address, ":")+1:] }

// Round robin: a target resolving to two deciders spreads calls over both. Which decider
// answered is read from each one's decision log.
func TestRoundRobinOverEveryAddress(t *testing.T) {
	dir := t.TempDir()
	logs := []string{filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")}
	a := decidertest.Serve(t, "--workers", "1", "--decision-log", logs[0])
	b := decidertest.Serve(t, "--workers", "1", "--decision-log", logs[1])
	r := staticResolver(t, a, b)
	c := dial(t, r.Scheme()+":///decider", decider.Options{DialOptions: []grpc.DialOption{grpc.WithResolvers(r)}})
	req, err := decider.NewPodSetsRequest(example(t, "leader-workers.yaml")[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	lines := func(path string) int {
		text, _ := os.ReadFile(path)
		return strings.Count(string(text), "\n")
	}
	// Round robin picks among the connections that are ready, so the first calls may all go
	// to whichever connected first: call until both have answered, a bounded number of times.
	for i := 0; i < 200 && (lines(logs[0]) == 0 || lines(logs[1]) == 0); i++ {
		if _, err := c.PodSets(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		waitLogged(t, logs, i+1, lines)
	}
	if lines(logs[0]) == 0 || lines(logs[1]) == 0 {
		t.Fatalf("200 calls, decisions logged %d and %d: not spread", lines(logs[0]), lines(logs[1]))
	}
}

// waitLogged waits until the logs hold n lines in all (a record is written after the answer).
func waitLogged(t *testing.T, logs []string, n int, lines func(string) int) {
	deadline := time.Now().Add(30 * time.Second)
	for lines(logs[0])+lines(logs[1]) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d calls answered, %d logged", n, lines(logs[0])+lines(logs[1]))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
