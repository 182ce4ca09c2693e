package deciderv1_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// The committed stubs are what clients/go/generate.sh makes of the .proto now, byte for byte
// and file for file (as tests/test_contract.py checks the Python stubs). They carry the versions
// of the plugins that made them (tools.sh pins them): another version reads as stale.
// generate.sh installs the pinned programs with `go install` when they are missing
// (.ci/ensure-go does it first in CI), so this needs nothing but Go and the module proxy.
func TestGeneratedStubsAreFresh(t *testing.T) {
	out := t.TempDir()
	cmd := exec.Command("bash", filepath.Join("..", "..", "generate.sh"), out)
	if text, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("generate.sh: %v\n%s", err, text)
	}
	generated := filepath.Join(out, "clients", "go", "decider", "v1")
	names := func(dir string) []string {
		found, err := filepath.Glob(filepath.Join(dir, "*.pb.go"))
		if err != nil {
			t.Fatal(err)
		}
		for i, path := range found {
			found[i] = filepath.Base(path)
		}
		return found
	}
	freshNames, committedNames := names(generated), names(".")
	if !slices.Equal(freshNames, committedNames) || len(freshNames) == 0 {
		t.Fatalf("generate.sh makes %v, clients/go/decider/v1 holds %v: run `bash clients/go/generate.sh`",
			freshNames, committedNames)
	}
	for _, name := range freshNames {
		fresh, err := os.ReadFile(filepath.Join(generated, name))
		if err != nil {
			t.Fatal(err)
		}
		committed, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if string(fresh) != string(committed) {
			t.Errorf("clients/go/decider/v1/%s is stale: run `bash clients/go/generate.sh`", name)
		}
	}
}
