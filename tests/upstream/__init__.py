"""Upstream-parity scenarios: kubernetes-sigs/jobset's unit and integration tests, ported."""
