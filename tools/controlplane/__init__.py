"""A real Kubernetes control plane for the e2e suite: built from the Go module proxy, cached by
version, run on loopback with KWOK's simulated nodes, jobset-decider installed from deploy/.
`python -m tools.controlplane up --dir D` / `down --dir D`; docs/e2e.md."""
