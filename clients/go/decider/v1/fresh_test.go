package deciderv1_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// The committed stubs are what clients/go/generate.sh makes of the .proto now, byte for byte
// (as tests/test_contract.py checks the Python stubs). They carry the versions of protoc and
// protoc-gen-go that made them: another version reads as stale.
func TestGeneratedStubsAreFresh(t *testing.T) {
	out := t.TempDir()
	cmd := exec.Command("bash", filepath.Join("..", "..", "generate.sh"), out)
	if text, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("generate.sh: %v\n%s(it needs protoc, protoc-gen-go and protoc-gen-go-grpc: "+
			"apt-get install protobuf-compiler protoc-gen-go protoc-gen-go-grpc)", err, text)
	}
	for _, name := range []string{"decider.pb.go", "decider_grpc.pb.go"} {
		fresh, err := os.ReadFile(filepath.Join(out, "decider", "v1", name))
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
