"""bench/shim_scale_real.py's bookkeeping of what its watches saw: which JobSets have all their
Jobs of an attempt, whose pods are ready, and when the Job controller ended their Jobs (the
point from which the JobSet controller's own share of a stage is timed)."""

from __future__ import annotations

from typing import Any

import pytest

from bench.shim_scale_real import JOBS, REPLICAS, Live


def job(jobset: str, index: int, attempt: str = "0", ready: int = 0, ended: str = "",
        deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": f"{jobset}-w-{index}-a{attempt}",
        "labels": {"jobset.sigs.k8s.io/jobset-name": jobset,
                   "jobset.sigs.k8s.io/restart-attempt": attempt}}
    if deleting:
        meta["deletionTimestamp"] = "2026-11-29T00:00:00Z"
    status: dict[str, Any] = {"ready": ready}
    if ended:
        status["conditions"] = [{"type": ended, "status": "True"}]
    return {"metadata": meta, "status": status}


def seen(*events: tuple[str, dict[str, Any]]) -> Live:
    live = Live()
    for kind, obj in events:
        live.on_store(JOBS, kind, obj)
    return live


ALL = [("ADDED", job("a", i, ready=1)) for i in range(REPLICAS)]


@pytest.mark.parametrize(("events", "attempt", "expected"), [
    pytest.param(ALL, "0", True, id="every-job-of-the-attempt-ready"),
    pytest.param(ALL[:-1], "0", False, id="one-job-missing"),
    pytest.param(ALL, "1", False, id="ready-jobs-of-another-attempt-do-not-count"),
    pytest.param([*ALL[:-1], ("ADDED", job("a", REPLICAS - 1, ready=0))], "0", False,
                 id="a-job-whose-pod-is-not-ready"),
    pytest.param([*ALL, ("MODIFIED", job("a", 0, ready=1, deleting=True))], "0", False,
                 id="a-job-being-deleted-no-longer-counts"),
    pytest.param([*ALL, ("DELETED", job("a", 0, ready=1))], "0", False,
                 id="a-deleted-job-no-longer-counts"),
])
def test_ready(events: list[tuple[str, dict[str, Any]]], attempt: str, expected: bool) -> None:
    assert seen(*events).ready(["a"], attempt) is expected


@pytest.mark.parametrize(("events", "count", "ended"), [
    pytest.param([("MODIFIED", job("a", 0, ended="Failed"))], 1, True,
                 id="first-failed-job-is-the-restart-verdict"),
    pytest.param([("MODIFIED", job("a", i, ended="Complete")) for i in range(REPLICAS - 1)],
                 REPLICAS, False, id="not-every-job-complete-yet"),
    pytest.param([("MODIFIED", job("a", i, ended="Complete")) for i in range(REPLICAS)],
                 REPLICAS, True, id="every-job-complete"),
    pytest.param([("MODIFIED", job("a", 0, ended="Suspended"))], 1, False,
                 id="other-conditions-are-no-verdict"),
])
def test_last_ended(events: list[tuple[str, dict[str, Any]]], count: int, ended: bool) -> None:
    assert ("a" in seen(*events).last_ended(["a"], "0", count)) is ended


def test_an_ended_job_keeps_its_first_sighting() -> None:
    live = seen(("MODIFIED", job("a", 0, ended="Failed")))
    first = live.last_ended(["a"], "0", 1)["a"]
    live.on_store(JOBS, "MODIFIED", job("a", 0, ended="Failed", deleting=True))
    assert live.last_ended(["a"], "0", 1)["a"] == first
