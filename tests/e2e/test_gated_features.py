"""The alpha features behind a gate, on a real control plane: activeDeadlineSeconds on the real
clock (KEP-1186, JobSetActiveDeadlineSeconds) and execution attempts (KEP-1282,
ExecutionAttemptsTracking).

The session's product runs with no gate, as deploy/ installs it (`--feature-gates=`), and every
other scenario means that. These run on a control plane of their own (module-scoped), whose
product is installed from deploy/ the same way with both gates given where a user gives them:
the shim's `--feature-gates` and the decider's `--webhook-feature-gates` (product.install's
feature_gates). The webhook needs the gate too: with it off, it refuses activeDeadlineSeconds."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.e2e.conftest import E2E
from tests.e2e.framework import (
    JOBSETS,
    condition,
    conditions,
    eventually,
    has_condition,
    jobset,
    phases,
    replicated_job,
)
from tests.e2e.lifecycle_support import (
    EXECUTION_ATTEMPT,
    RESTART_ATTEMPT,
    alive,
    end,
    gated_control_plane,
    own_namespace,
    running,
    when,
)

pytestmark = [pytest.mark.e2e, pytest.mark.waits]


@pytest.fixture(scope="module")
def gated() -> Iterator[E2E]:
    with gated_control_plane(os.environ.get("E2E_KUBERNETES_VERSION", "v1.37.2")) as plane:
        yield plane


@pytest.fixture
def gns(gated: E2E, request: pytest.FixtureRequest) -> Iterator[str]:
    """The conftest's `ns`, on the gated control plane."""
    with own_namespace(gated, request, "e2e-gated") as name:
        yield name


def test_active_deadline_fails_the_jobset_on_the_real_clock(gated, gns):
    kube, ns = gated.kube, gns
    deadline = 10
    kube.create_jobset(jobset(ns, "bounded", [replicated_job("w", replicas=2)],
                              activeDeadlineSeconds=deadline))
    pods = running(kube, ns, "bounded", 2)
    js = eventually("status.startTime", lambda: kube.jobset(ns, "bounded"),
                    lambda j: bool((j.get("status") or {}).get("startTime")),
                    show=lambda j: j.get("status"))
    started = when(js["status"]["startTime"])
    assert not has_condition(js, "Failed"), conditions(js)

    # Nothing ends the pods: the deadline does, and the active Jobs go with the JobSet failed.
    js = eventually("JobSet bounded Failed", lambda: kube.jobset(ns, "bounded"),
                    lambda j: has_condition(j, "Failed"), show=conditions)
    failed = condition(js, "Failed")
    assert failed["reason"] == "DeadlineExceeded", conditions(js)
    assert failed["message"] == ("JobSet was active for longer than the specified deadline "
                                 f"of {deadline} seconds")
    assert js["status"].get("terminalState") == "Failed"
    assert (when(failed["lastTransitionTime"]) - started).total_seconds() >= deadline
    assert js["status"].get("restarts", 0) == 0
    eventually("the Jobs deleted", lambda: kube.jobs(ns, "bounded"), lambda js: js == [],
               show=lambda js: [(j["metadata"]["name"], j["metadata"].get("deletionTimestamp"))
                                for j in js])
    eventually("the pods gone", lambda: alive(kube.pods(ns, "bounded")), lambda ps: ps == [],
               show=phases)
    assert not {p["metadata"]["uid"] for p in pods} & {
        p["metadata"]["uid"] for p in kube.pods(ns, "bounded")}
    # The shim records the condition's event after the status write.
    warned = eventually("a DeadlineExceeded event on the JobSet", lambda: [
        e for e in kube.events(ns) if e["involvedObject"].get("kind") == "JobSet"
        and e.get("reason") == "DeadlineExceeded"], bool)
    assert [e["type"] for e in warned] == ["Warning"], warned
    assert warned[0]["message"] == failed["message"]


def attempt_of(obj: dict) -> str | None:
    return (obj["metadata"].get("annotations") or {}).get(EXECUTION_ATTEMPT)


def test_execution_attempts_count_each_run(gated, gns):
    kube, ns = gated.kube, gns
    path = f"{JOBSETS}/namespaces/{ns}/jobsets/counted"
    kube.create_jobset(jobset(ns, "counted", [replicated_job("w", replicas=2)], suspend=True,
                              failurePolicy={"maxRestarts": 1}))

    def attempts(j):
        return (j.get("status") or {}).get("executionAttempts")

    def jobs_attempts(js):
        return {j["metadata"]["name"]: (
            attempt_of(j), attempt_of(j["spec"]["template"]),
            j["metadata"]["labels"].get(RESTART_ATTEMPT), j["spec"].get("suspend"))
            for j in js}

    # Created suspended, it never ran: no count, no annotation.
    eventually("JobSet counted Suspended", lambda: kube.jobset(ns, "counted"),
               lambda j: has_condition(j, "Suspended"), show=conditions)
    jobs = eventually("2 suspended Jobs", lambda: kube.jobs(ns, "counted"),
                      lambda js: len(js) == 2 and all(j["spec"].get("suspend") for j in js),
                      show=jobs_attempts)
    assert attempts(kube.jobset(ns, "counted")) is None
    assert {attempt_of(j) for j in jobs} == {None}

    def run(expected: int, restart: str = "0") -> None:
        seen = str(expected)
        eventually(f"executionAttempts {expected}", lambda: kube.jobset(ns, "counted"),
                   lambda j: attempts(j) == expected, show=lambda j: j.get("status"))
        eventually(f"the Jobs of attempt {seen} running", lambda: kube.jobs(ns, "counted"),
                   lambda js: len(js) == 2 and all(
                       v == (seen, seen, restart, False) for v in jobs_attempts(js).values()),
                   show=jobs_attempts)
        pods = running(kube, ns, "counted", 2)
        assert {attempt_of(p) for p in pods} == {seen}, [p["metadata"] for p in pods]

    # The first run is attempt 0; each resume and each restart of the whole JobSet one more.
    kube.patch(path, {"spec": {"suspend": False}})
    run(0)
    kube.patch(path, {"spec": {"suspend": True}})
    eventually("the pods gone once suspended", lambda: alive(kube.pods(ns, "counted")),
               lambda ps: ps == [], show=phases)
    assert attempts(kube.jobset(ns, "counted")) == 0
    kube.patch(path, {"spec": {"suspend": False}})
    run(1)

    pods = running(kube, ns, "counted", 2)
    end(kube, ns, pods[:1], code=1)
    run(2, restart="1")
    js = kube.jobset(ns, "counted")
    assert js["status"]["restarts"] == 1

    end(kube, ns, running(kube, ns, "counted", 2))
    done = eventually("JobSet counted Completed", lambda: kube.jobset(ns, "counted"),
                      lambda j: has_condition(j, "Completed"), show=conditions)
    assert attempts(done) == 2
