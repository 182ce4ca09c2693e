"""What the API server stores, the decider reconciles as upstream's controller does
(kubernetes-sigs/jobset pkg/controllers @08dfbdfd and newer), rather than refusing it:

- a counter below zero in `status` (the CRD sets no minimum there): jobset_controller.go
  calculateReplicatedJobStatuses recomputes `replicatedJobsStatus` from the Jobs (keeping only
  the `jobRestarts` lists), and executeFailurePolicy adds one to a restart counter wherever it is;
- a pod's in-place restart attempt annotation that strconv.Atoi refuses (or that is below zero):
  in_place_restart.go getPodInPlaceRestartAttempts returns an error, so reconcile returns it
  after the steps before it (deletes, creates, resumes) have acted, and Reconcile writes no
  status (it returns before updateJobSetStatus);
- an attempt past int32: `int32(podInPlaceRestartAttempt)`, the low 32 bits;
- pods of the namespace without the JobSet's `jobset.sigs.k8s.io/jobset-name` label:
  getAssociatedPods lists pods by that label (the PodsIndexByJobSetKey index), so they count
  for nothing.

Each plan also says, in a sentence, what was odd in the input.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from decider.contract.convert import decide_request
from decider.core import constants as c
from decider.core.errors import InvalidInput
from decider.core.model import ObservedPod
from decider_client import observe
from support.builders import NOW, condition, job, jobset, kinds, rjob, rjs, run, service, types
from support.cli_run import run_cli

IPR = {c.GATE_IN_PLACE_RESTART: True}


def _said(plan: Any, *parts: str) -> str:
    hits = [s for s in plan.explanation if all(p in s for p in parts)]
    assert hits, plan.explanation
    return hits[0]


# ---- (a) counters below zero ----------------------------------------------------------------

@pytest.mark.parametrize(("status", "restarts", "counted"), [
    pytest.param({"restarts": -2, "restartsCountTowardsMax": -2}, -1, -1,
                 id="RestartJobSet-counts-on-from-below-zero"),
    pytest.param({"restarts": -1, "restartsCountTowardsMax": 0}, 0, 1,
                 id="only-restarts-below-zero"),
])
def test_a_negative_restart_counter_counts_on(status: dict[str, Any], restarts: int,
                                              counted: int) -> None:
    """executeFailurePolicy: RestartsCountTowardsMax >= MaxRestarts fails (-2 >= 2 does not);
    else both counters += 1."""
    js = jobset(rjob("w", 2), failurePolicy={"maxRestarts": 2}, status=status)
    attempt = status["restarts"]
    jobs = [job("w", 0, attempt=attempt, active=1), job("w", 1, attempt=attempt, state="failed")]
    plan = run(js, jobs, objects=[service()])
    assert (plan.status["restarts"], plan.status["restartsCountTowardsMax"]) == (restarts,
                                                                               counted)
    assert condition(plan, c.RESTARTING)["status"] == "True"  # type: ignore[index]
    assert condition(plan, c.FAILED) is None
    _said(plan, "below zero", f"status.restarts is {attempt}")


def test_negative_replicated_job_counts_are_recomputed_from_the_jobs() -> None:
    stored = [{"name": "w", "ready": -1, "succeeded": -4, "failed": -2, "active": -7,
               "suspended": 0}]
    js = jobset(rjob("w", 2), status={"replicatedJobsStatus": stored})
    jobs = [job("w", 0, active=1, ready=1), job("w", 1, active=1)]
    plan = run(js, jobs, objects=[service()])
    assert rjs(plan, "w") == {"name": "w", "ready": 1, "succeeded": 0, "failed": 0,
                              "active": 2, "suspended": 0}
    assert ("UpdateStatus", "js") in types(plan)
    _said(plan, "status.replicatedJobsStatus[0].ready is -1", "recomputed from the Jobs")


def test_negative_job_restarts_are_kept_and_label_the_recreated_job() -> None:
    """RestartJob: calculateReplicatedJobStatuses keeps jobRestarts as stored;
    labelAndAnnotateObject writes strconv.Itoa of the entry into job-restart-attempt."""
    stored = [{"name": "w", "ready": 0, "succeeded": 0, "failed": 0, "active": 1,
               "suspended": 0, "jobRestarts": [0, -3]}]
    js = jobset(rjob("w", 2), status={"replicatedJobsStatus": stored})
    plan = run(js, [job("w", 0, active=1, job_attempt=0)], objects=[service()],
               gates={c.GATE_RESTART_JOB: True})
    (create,) = [a for a in plan.actions if a.type == "CreateJob"]
    assert create.name == "js-w-1"
    assert create.object["metadata"]["labels"][c.JOB_RESTART_ATTEMPT] == "-3"
    assert rjs(plan, "w")["jobRestarts"] == [0, -3]
    _said(plan, "jobRestarts[1] is -3")


def test_the_decide_rpc_answers_a_negative_counter_instead_of_refusing() -> None:
    js = jobset(rjob("w", 1), status={"restarts": -5, "restartsCountTowardsMax": -5})
    req = observe.build_decide_request(js, [], NOW)
    response = decide_request(req).response
    assert "js-w-0" in [a.name for a in response.actions]
    assert any("status.restarts is -5" in s for s in response.explanation)


# ---- (b) and (c) the pod's in-place restart attempt -----------------------------------------

def _in_place(attempts: list[str | None], status: dict[str, Any] | None = None,
              jobs: list[Any] | None = None, suspend: bool = False) -> Any:
    fp = {"maxRestarts": 3, "restartStrategy": "InPlaceRestart"}
    stored = [{"name": "w", "ready": 2, "succeeded": 0, "failed": 0, "active": 2,
               "suspended": 0}]
    js = jobset(rjob("w", 2), failurePolicy=fp,
                status={**(status or {}), "replicatedJobsStatus": stored})
    if jobs is None:
        jobs = [job("w", i, ready=1, active=1) for i in range(2)]
    pods = [ObservedPod(name=f"p{i}", phase="Running",
                        annotations={} if a is None else {c.IN_PLACE_RESTART_ATTEMPT: a})
            for i, a in enumerate(attempts)]
    return run(js, jobs, objects=[service()], pods=pods, gates=IPR)


@pytest.mark.parametrize("raw", [
    pytest.param("x", id="Atoi-refuses-letters"),
    pytest.param(" 1", id="Atoi-refuses-a-space"),
    pytest.param("1_0", id="Atoi-refuses-underscores"),
    pytest.param("", id="Atoi-refuses-empty"),
    pytest.param("-1", id="below-zero"),
    pytest.param("9223372036854775808", id="Atoi-out-of-int64"),
])
def test_an_attempt_atoi_refuses_acts_first_then_reports_without_a_status_write(
        raw: str) -> None:
    """Everything before the in-place step acts: the previous attempt's Job is deleted, the
    missing one created, the suspended one resumed; then the error, and no status write."""
    jobs = [job("w", 0, attempt=-1, active=1),  # of an earlier attempt (restarts is 0)
            job("w", 1, active=0, suspend=True)]
    plan = _in_place(["1", raw], jobs=jobs)
    assert kinds(plan, "DeleteJob") == ["js-w-0"]
    assert [a.name for a in plan.actions if a.type in ("ResumeJob", "UpdateJob", "PatchJob")
            ] == ["js-w-1"]
    assert "UpdateStatus" not in {a.type for a in plan.actions}
    assert plan.requeue_after_seconds >= 1
    sentence = _said(plan, "pod p1", repr(raw), "not a non-negative integer")
    assert "without a status write" in sentence


@pytest.mark.parametrize(("raws", "want"), [
    pytest.param(["+1", "1"], {"currentInPlaceRestartAttempt": 1}, id="Atoi-takes-a-plus-sign"),
    pytest.param(["002", "3"], {"previousInPlaceRestartAttempt": 2},
                 id="Atoi-takes-leading-zeros"),
    pytest.param(["4294967297", "4294967297"], {"currentInPlaceRestartAttempt": 1},
                 id="int32-wraps-2^32+1-to-1"),
    pytest.param(["4294967296", "4294967297"], {"previousInPlaceRestartAttempt": 0},
                 id="int32-wraps-2^32-to-0"),
    pytest.param(["2147483648", "2147483648"], {"currentInPlaceRestartAttempt": -2147483648},
                 id="int32-wraps-2^31-to-its-minimum"),
])
def test_the_attempt_is_read_as_atoi_then_int32(raws: list[str], want: dict[str, int]) -> None:
    plan = _in_place(raws, status={"currentInPlaceRestartAttempt": 0}
                     if "previousInPlaceRestartAttempt" in want else None)
    got = {k: plan.status[k] for k in want}
    assert got == want
    assert condition(plan, c.FAILED) is None
    if any(int(r) > 2**31 - 1 for r in raws):
        _said(plan, "past int32", "low 32 bits")


# ---- (d) pods without the JobSet's label -----------------------------------------------------

def _in_place_documents() -> list[dict[str, Any]]:
    js = jobset(rjob("w", 2), name="trainer",
                failurePolicy={"maxRestarts": 3, "restartStrategy": "InPlaceRestart"})
    js["metadata"]["uid"] = "uid-trainer"

    def pod(name: str, attempt: str, labels: dict[str, str]) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": "default", "labels": labels,
                             "annotations": {c.IN_PLACE_RESTART_ATTEMPT: attempt}},
                "status": {"phase": "Running"}}

    mine = {"jobset.sigs.k8s.io/jobset-name": "trainer"}
    return [js, pod("trainer-w-0-a", "1", mine), pod("trainer-w-1-b", "1", mine),
            # Another workload's pod in the namespace, at attempt 9: counted, it would make
            # the attempts disagree (and 9 exceeds maxRestarts 3: the JobSet would fail).
            pod("notebook-0", "9", {"app": "notebook"}),
            pod("other-0", "9", {"jobset.sigs.k8s.io/jobset-name": "other"})]


def test_build_decide_request_sends_only_the_jobsets_labelled_pods() -> None:
    js, *owned = _in_place_documents()
    req = observe.build_decide_request(js, owned, NOW, feature_gates=IPR)
    assert [p.name for p in req.pods] == ["trainer-w-0-a", "trainer-w-1-b"]


def test_observed_json_leaves_out_pods_without_the_label_and_says_so() -> None:
    js, *owned = _in_place_documents()
    response = decide_request(observe.build_raw_decide_request(js, owned, NOW,
                                                               feature_gates=IPR)).response
    assert response.status.current_in_place_restart_attempt == 1
    assert not any(cd.type == c.FAILED for cd in response.status.conditions)
    assert any("2 pod(s)" in s and "notebook-0, other-0" in s and "not counted" in s
               for s in response.explanation), list(response.explanation)


def test_the_cli_counts_only_the_labelled_pods_and_says_so(tmp_path: Any, capsys: Any) -> None:
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump_all(_in_place_documents()))
    code, out, err = run_cli(capsys, "decide", "-f", str(path), "--now", "2026-01-01T12:00:00Z",
                             "--feature-gates", "InPlaceRestart=true", "-o", "json")
    assert code == 0, err
    plan = json.loads(out)
    assert plan["status"]["currentInPlaceRestartAttempt"] == 1
    assert not any(cd["type"] == "Failed" for cd in plan["status"].get("conditions", []))
    assert any("notebook-0, other-0" in s and "jobset.sigs.k8s.io/jobset-name=trainer" in s
               for s in plan["explanation"]), plan["explanation"]


@pytest.mark.parametrize("key", ["jobRestarts", "jobRestartsCountTowardsMax"])
def test_a_null_in_a_counter_list_is_refused_naming_it(key: str) -> None:
    """A count below zero is stored; a null entry is no count (hypothesis found it once the
    minimum was gone: INTERNAL writing the status)."""
    stored = [{"name": "w", "ready": 0, "succeeded": 0, "failed": 0, "active": 0,
               "suspended": 0, key: [0, None]}]
    js = jobset(rjob("w", 2), status={"replicatedJobsStatus": stored})
    with pytest.raises(InvalidInput) as err:
        run(js, [], objects=[service()], gates={c.GATE_RESTART_JOB: True})
    assert [e.field for e in err.value.errors] == [f"status.replicatedJobsStatus[0].{key}[1]"]
