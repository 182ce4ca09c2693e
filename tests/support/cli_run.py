"""The decider CLI run in the test's own process, its output captured by pytest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from decider.cli import main as cli

LEADER_WORKERS = Path(__file__).resolve().parents[2] / "examples" / "leader-workers.yaml"


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """(exit code, standard output, standard error) of `decider ARGS`: argparse, observe,
    convert (or gRPC), render, as a user's command would run them."""
    try:
        code = cli.main(list(args))
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def leader_workers_failed() -> tuple[dict[str, Any], dict[str, Any]]:
    """examples/leader-workers.yaml's JobSet and its Job trainer-workers-1 failed with
    BackoffLimitExceeded: the input of the CLI tests that ask what a failure does."""
    js = yaml.safe_load(LEADER_WORKERS.read_text())
    job = {"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"name": "trainer-workers-1", "namespace": "default", "uid": "j1",
                        "labels": {"jobset.sigs.k8s.io/replicatedjob-name": "workers",
                                   "jobset.sigs.k8s.io/restart-attempt": "0",
                                   "jobset.sigs.k8s.io/job-index": "1"},
                        "ownerReferences": [{"apiVersion": "jobset.x-k8s.io/v1alpha2",
                                             "kind": "JobSet", "name": "trainer",
                                             "uid": js["metadata"]["uid"], "controller": True}]},
           "spec": {"parallelism": 2, "completions": 2},
           "status": {"failed": 1, "conditions": [
               {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
                "message": "Job has reached the specified backoff limit",
                "lastTransitionTime": "2025-12-31T23:59:00Z"}]}}
    return js, job
