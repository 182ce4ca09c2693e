// Package decidertest starts a real decider (`decider serve`) for the Go tests: the Python
// server of this repository, from $DECIDER, the repository's .venv, or the PATH.
package decidertest

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Root is the repository's root: the directory above the test's holding pyproject.toml.
func Root(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "pyproject.toml")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("decidertest: no pyproject.toml above the test's directory")
		}
		dir = parent
	}
}

// Command is the decider to run: $DECIDER, else the repository's .venv/bin/decider, else
// `decider` on the PATH.
func Command(t testing.TB) string {
	t.Helper()
	if path := os.Getenv("DECIDER"); path != "" {
		return path
	}
	venv := filepath.Join(Root(t), ".venv", "bin", "decider")
	if _, err := os.Stat(venv); err == nil {
		return venv
	}
	path, err := exec.LookPath("decider")
	if err != nil {
		t.Fatal("decidertest: no decider: set DECIDER, or install the repository in .venv " +
			"(python3 -m venv .venv && .venv/bin/pip install -e .)")
	}
	return path
}

// Serve starts `decider serve` on a free loopback port with the extra flags and returns its
// address; it is stopped (SIGTERM, then waited for) when the test ends.
func Serve(t testing.TB, flags ...string) string {
	t.Helper()
	args := append([]string{"serve", "--host", "127.0.0.1", "--port", "0", "--drain-delay", "0",
		"--grace", "1"}, flags...)
	cmd := exec.Command(Command(t), args...)
	cmd.Dir = Root(t)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("decidertest: %v", err)
	}
	exited := make(chan struct{})
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	// "decider: serving decider.v1.Decider on HOST:PORT" is the first line once it listens.
	first := make(chan string, 1)
	go func() {
		scanner := bufio.NewScanner(stdout)
		line := ""
		if scanner.Scan() {
			line = scanner.Text()
		}
		first <- line
		for scanner.Scan() { // drained, so the server never blocks on a full pipe
		}
		_ = cmd.Wait()
		close(exited)
	}()
	line := <-first
	const prefix = "decider: serving decider.v1.Decider on "
	if !strings.HasPrefix(line, prefix) {
		<-exited
		t.Fatalf("decidertest: decider %s did not start: %q\n%s", strings.Join(args, " "), line, stderr.String())
	}
	return strings.TrimPrefix(line, prefix)
}
