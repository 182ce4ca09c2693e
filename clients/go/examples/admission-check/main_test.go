package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/jobset-decider/jobset-decider/clients/go/internal/decidertest"
)

func runCheck(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	var stdout, stderr strings.Builder
	code := run(args, strings.NewReader(stdin), &stdout, &stderr)
	return stdout.String(), stderr.String(), code
}

func TestTheExampleAgainstARealDecider(t *testing.T) {
	address := decidertest.Serve(t, "--workers", "1")
	// The README's command, from clients/go: examples/leader-workers.yaml links to the
	// repository's.
	example := filepath.Join("..", "leader-workers.yaml")

	t.Run("pod sets, the simulated failure and Ready", func(t *testing.T) {
		out, errs, code := runCheck(t, "", "--server", address, "-f", example, "--now", "2026-01-01T00:00:00Z")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		for _, want := range []string{
			"JobSet default/trainer\n",
			"  leader       count 1\n",
			"  workers      count 6\n",
			"if trainer-leader-0 fails now (Simulate):\n",
			"  terminal state: Failed (FailedJobs); restarts 0, restarts left 0;",
			"admission check: Ready\n  7 pod(s); if trainer-leader-0 fails now:",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("no %q in:\n%s", want, out)
			}
		}
	})

	t.Run("--require-recovery rejects a JobSet one failure fails", func(t *testing.T) {
		out, _, code := runCheck(t, "", "--server", address, "-f", example, "--require-recovery", "-o", "json")
		var doc struct {
			AdmissionCheck check
			Simulated      struct{ TerminalState string }
			PodSets        struct{ PodSets []struct{ Name string } }
		}
		if code != 0 || json.Unmarshal([]byte(out), &doc) != nil {
			t.Fatalf("exit %d: %s", code, out)
		}
		if doc.AdmissionCheck.State != "Rejected" || doc.Simulated.TerminalState != "Failed" || len(doc.PodSets.PodSets) != 2 {
			t.Fatalf("%+v", doc)
		}
	})

	t.Run("a restart left: Ready even with --require-recovery; stdin, a List, the JobSet's own Jobs", func(t *testing.T) {
		text, err := os.ReadFile(filepath.Join(decidertest.Root(t), "examples", "trainer-restarted.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var items []json.RawMessage
		for _, doc := range strings.Split(string(text), "\n---\n") {
			j, err := yaml.YAMLToJSON([]byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			items = append(items, j)
		}
		list, _ := json.Marshal(map[string]interface{}{"apiVersion": "v1", "kind": "List", "items": items})
		out, errs, code := runCheck(t, string(list), "--server", address, "-f", "-", "--require-recovery",
			"--fail", "trainer-workers-2")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		for _, want := range []string{"restarts 2, restarts left 0", "admission check: Ready",
			"failure policy: trainer-workers-2 (no rule matched) -> RestartJobSet"} {
			if !strings.Contains(out, want) {
				t.Errorf("no %q in:\n%s", want, out)
			}
		}
	})

	t.Run("a JobSet the decider refuses is Rejected, naming the field", func(t *testing.T) {
		bad := "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: bad}\n" +
			"spec: {replicatedJobs: [{name: w, replicas: 1, template: {spec: {template: {spec: " +
			"{containers: [{name: c, image: i}]}}}}}, {name: w, replicas: 1}]}\n"
		out, _, code := runCheck(t, bad, "--server", address, "-f", "-")
		if code != 0 || !strings.Contains(out, "admission check: Rejected\n  the decider refuses the JobSet") ||
			!strings.Contains(out, "spec.replicatedJobs[1].template: Required value") {
			t.Fatalf("exit %d:\n%s", code, out)
		}
	})

	t.Run("a decider that cannot answer is Retry", func(t *testing.T) {
		out, _, code := runCheck(t, "", "--server", "127.0.0.1:1", "-f", example, "--timeout", "1s", "--retry-after", "45s")
		if code != 0 || !strings.Contains(out, "admission check: Retry\n") || !strings.Contains(out, "requeueAfterSeconds: 45") {
			t.Fatalf("exit %d:\n%s", code, out)
		}
	})

	t.Run("a Job that never exists leaves the check Pending", func(t *testing.T) {
		out, _, code := runCheck(t, "", "--server", address, "-f", example, "--fail", "trainer-nope-0")
		if code != 0 || !strings.Contains(out, "admission check: Pending\n  the simulated failure did not apply") {
			t.Fatalf("exit %d:\n%s", code, out)
		}
	})
}

func TestBadInputExits2(t *testing.T) {
	for name, c := range map[string]struct {
		stdin string
		args  []string
		want  string
	}{
		"no --server":      {"", []string{"-f", "x.yaml"}, "--server and -f are required"},
		"no such file":     {"", []string{"--server", "x:1", "-f", "nope.yaml"}, "-f nope.yaml: open nope.yaml"},
		"no JobSet":        {"kind: Job\napiVersion: batch/v1\n", []string{"--server", "x:1", "-f", "-"}, "the input holds no JobSet"},
		"two JobSets":      {"kind: JobSet\nmetadata: {name: a}\n---\nkind: JobSet\nmetadata: {name: b}\n", []string{"--server", "x:1", "-f", "-"}, "pick one with --name"},
		"not YAML":         {"a: [", []string{"--server", "x:1", "-f", "-"}, "-: document 1: not valid YAML"},
		"not JSON":         {"{\"a\": ", []string{"--server", "x:1", "-f", "-"}, "-: not valid JSON"},
		"a scalar":         {"[1]", []string{"--server", "x:1", "-f", "-"}, "must be a Kubernetes object, not an array"},
		"a malformed time": {"kind: JobSet", []string{"--server", "x:1", "-f", "-", "--now", "yesterday"}, "--now: parsing time"},
	} {
		t.Run(name, func(t *testing.T) {
			_, errs, code := runCheck(t, c.stdin, c.args...)
			if code != 2 || !strings.Contains(errs, c.want) {
				t.Fatalf("exit %d, stderr %q, want 2 and %q", code, errs, c.want)
			}
		})
	}
}

func TestYAMLDocumentsSplitAtSeparatorLinesOnly(t *testing.T) {
	docs := yamlDocuments([]byte("a: 1\n---\nb: '---'\n--- \nc: |\n  x---\n"))
	if len(docs) != 3 || !strings.Contains(string(docs[1]), "'---'") || !strings.Contains(string(docs[2]), "x---") {
		t.Fatalf("%q", docs)
	}
}
