"""DecideRequest.observed_json: objects as the API server serves them, summarized by the server.

The upstream tables compare both forms at every pass (tests/upstream/sim.py, raw_parity.py);
here: mixing both forms, the errors naming `observed_json[i]`, the limits, the gRPC path, and
that the shared summarizer stays on the contract's side of the house.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import grpc
import pytest

from decider.contract import convert
from decider.contract.limits import Limits
from decider.core.errors import InvalidInput, TooLarge
from decider.service.server import BackgroundServer
from decider_api import summarize
from decider_api.v1 import decider_pb2 as pb
from decider_api.v1 import decider_pb2_grpc as pb_grpc
from decider_client import observe
from support.builders import NOW, UID, jobset, rjob

JS = jobset(rjob("leader", 1), rjob("workers", 3),
            failurePolicy={"maxRestarts": 2,
                           "rules": [{"name": "no-retry", "action": "FailJobSet",
                                      "onJobFailureReasons": ["PodFailurePolicy"]}]},
            status={"restarts": 1, "restartsCountTowardsMax": 1})


def child(rjob_name: str, index: int, *, failed: str = "", attempt: int = 1) -> dict:
    status: dict = {"active": 1, "ready": 1, "startTime": "2026-01-01T10:00:00Z"}
    if failed:
        status = {"failed": 1, "conditions": [
            {"type": "FailureTarget", "status": "True", "reason": failed, "message": "boom",
             "lastTransitionTime": "2026-01-01T11:00:00Z"},
            {"type": "Failed", "status": "True", "reason": failed, "message": "boom",
             "lastTransitionTime": "2026-01-01T11:00:00Z"}]}
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": f"js-{rjob_name}-{index}", "namespace": "default",
                         "uid": f"uid-{rjob_name}-{index}", "resourceVersion": "3",
                         "creationTimestamp": "2026-01-01T10:00:00Z",
                         "labels": {"jobset.sigs.k8s.io/replicatedjob-name": rjob_name,
                                    "jobset.sigs.k8s.io/job-index": str(index),
                                    "jobset.sigs.k8s.io/restart-attempt": str(attempt)},
                         "ownerReferences": [{"apiVersion": "jobset.x-k8s.io/v1alpha2",
                                              "kind": "JobSet", "name": "js", "uid": UID,
                                              "controller": True}]},
            "spec": {"parallelism": 1, "completions": 1, "suspend": False,
                     "template": {"metadata": {"labels": {"app": "x"}},
                                  "spec": {"nodeSelector": {"pool": "a"},
                                           "containers": [{"name": "c", "image": "i"}]}}},
            "status": status}


SERVICE = {"apiVersion": "v1", "kind": "Service",
           "metadata": {"name": "js", "namespace": "default", "uid": "uid-svc"}}
# Labelled with the JobSet's name: a request carries only the JobSet's pods (summarize.pod_of).
POD = {"apiVersion": "v1", "kind": "Pod",
       "metadata": {"name": "js-workers-0-0-abc",
                    "labels": {"jobset.sigs.k8s.io/jobset-name": "js"}},
       "status": {"phase": "Running", "containerStatuses": [{"name": "c", "restartCount": 2}]}}


def owned(failed: str = "") -> list[dict]:
    return [child("leader", 0), child("workers", 0), child("workers", 1, failed=failed),
            child("workers", 2), copy.deepcopy(SERVICE), copy.deepcopy(POD)]


def answer(req: pb.DecideRequest) -> bytes:
    return convert.decide_response(req).SerializeToString(deterministic=True)


@pytest.mark.parametrize("failed", ["", "BackoffLimitExceeded", "PodFailurePolicy"],
                         ids=["steady", "default-restart", "rule-no-retry"])
def test_raw_typed_and_mixed_requests_decide_alike(failed: str) -> None:
    objs = owned(failed)
    typed = observe.build_decide_request(JS, objs, NOW)
    raw = observe.build_raw_decide_request(JS, objs, NOW)
    # Half summarized by the client, half sent whole: typed entries first, then observed_json.
    mixed = observe.build_decide_request(JS, objs[:2], NOW)
    mixed.observed_json.extend(json.dumps(o) for o in objs[2:])
    assert answer(raw) == answer(typed) == answer(mixed)


def test_the_failure_policy_decision_is_in_the_answer() -> None:
    got = convert.decide_response(observe.build_raw_decide_request(
        JS, owned("PodFailurePolicy"), NOW))
    assert (got.failure_policy.job, got.failure_policy.rule, got.failure_policy.action) == (
        "js-workers-1", "no-retry", "FailJobSet")
    assert got.status.terminal_state == "Failed"
    steady = convert.decide_response(observe.build_raw_decide_request(JS, owned(), NOW))
    assert not steady.HasField("failure_policy")


@pytest.mark.parametrize("mutate,field", [
    (lambda objs: objs.__setitem__(1, "{not json"), "observed_json[1]"),
    (lambda objs: objs.__setitem__(1, "[]"), "observed_json[1]"),
    (lambda objs: objs[1]["metadata"].pop("name"), "observed_json[1].metadata.name"),
    (lambda objs: objs[2]["metadata"]["labels"].__setitem__("x", 1),
     "observed_json[2].metadata.labels[x]"),
    (lambda objs: objs[2]["status"].__setitem__("active", "1"), "observed_json[2].status.active"),
    (lambda objs: objs[5]["status"].__setitem__("phase", 3), "observed_json[5].status.phase"),
    (lambda objs: objs[2]["metadata"].__setitem__("name", "j" * 300),
     "observed_json[2].metadata.name"),
    (lambda objs: objs[2]["metadata"]["annotations"].__setitem__("big", "x" * 300_000)
     if "annotations" in objs[2]["metadata"]
     else objs[2]["metadata"].__setitem__("annotations", {"big": "x" * 300_000}),
     "observed_json[2].annotations[big]"),
], ids=["not-json", "not-an-object", "job-without-name", "label-not-a-string",
        "count-not-an-integer", "pod-phase-not-a-string", "name-too-long", "string-too-long"])
def test_bad_raw_objects_are_invalid_naming_the_index(mutate, field) -> None:
    objs = owned()
    mutate(objs)
    req = observe.build_raw_decide_request(JS, [], NOW)
    req.observed_json.extend(o if isinstance(o, str) else json.dumps(o) for o in objs)
    with pytest.raises(InvalidInput) as err:
        convert.decide_response(req)
    assert str(err.value).startswith(field + ":"), str(err.value)


def test_raw_objects_are_held_to_the_request_limits() -> None:
    lim = Limits(max_observed=3, max_object_bytes=2000)
    req = observe.build_raw_decide_request(JS, owned()[:4], NOW)
    with pytest.raises(TooLarge, match=r"^observed_json: 4 observed objects"):
        convert.decide_response(req, lim)
    # Typed and raw Jobs count together against the same limit.
    req = observe.build_decide_request(JS, owned()[:2], NOW)
    req.observed_json.extend(json.dumps(o) for o in owned()[2:4])
    with pytest.raises(TooLarge, match=r"^jobs: 4 observed Jobs"):
        convert.decide_response(req, lim)
    big = child("workers", 0)
    big["metadata"]["annotations"] = {"note": "x" * 3000}
    req = observe.build_raw_decide_request(JS, [big], NOW)
    with pytest.raises(TooLarge, match=r"^observed_json\[0\]: .* over the limit"):
        convert.decide_response(req, lim)


@pytest.mark.waits
def test_grpc_answers_raw_requests_like_in_process() -> None:
    with BackgroundServer() as srv, grpc.insecure_channel(srv.target) as ch:
        stub = pb_grpc.DeciderStub(ch)
        raw = observe.build_raw_decide_request(JS, owned("BackoffLimitExceeded"), NOW)
        typed = observe.build_decide_request(JS, owned("BackoffLimitExceeded"), NOW)
        remote = stub.Decide(raw, timeout=30)
        # One request in two forms: one answer, decision_id included.
        assert remote.decision_id == convert.decision_id("Decide", typed)
        assert remote.SerializeToString(deterministic=True) == answer(typed)
        raw.observed_json[0] = "{"
        with pytest.raises(grpc.RpcError) as err:
            stub.Decide(raw, timeout=30)
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert err.value.details().startswith("observed_json[0]: is not valid JSON")


def test_kind_decides_the_typed_list() -> None:
    req = pb.DecideRequest()
    for i, obj in enumerate(owned()):
        summarize.add_observed(req, obj, f"observed_json[{i}]")
    assert [j.name for j in req.jobs] == ["js-leader-0", "js-workers-0", "js-workers-1",
                                          "js-workers-2"]
    assert [p.max_container_restarts for p in req.pods] == [2]
    assert [o.kind for o in req.objects] == ["Service"]
    # A Job of another API group is not a batch Job: kept whole, like any other object.
    summarize.add_observed(req, {"apiVersion": "example.com/v1", "kind": "Job",
                                 "metadata": {"name": "x"}}, "o")
    assert req.objects[-1].kind == "Job" and len(req.jobs) == 4


@pytest.mark.waits
def test_the_shared_summarizer_imports_only_the_contract() -> None:
    code = ("import sys, decider_api.summarize; "
            "bad=[m for m in sys.modules if m.startswith('decider') and "
            "not m.startswith('decider_api')]; "
            "print(bad); sys.exit(1 if bad else 0)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_resume_patch_does_not_depend_on_map_order() -> None:
    """Equal requests, equal plan bytes, however their maps were filled. (Found by the parity
    tables: a protobuf map copied into another message iterates in another order, and the
    ResumeJob patch merged the Job's labels in that order.)"""
    jobs = []
    for i in range(3):
        job = child("workers", i, attempt=0)
        job["spec"]["suspend"] = True
        job["spec"]["template"]["metadata"]["labels"] = {
            f"jobset.sigs.k8s.io/{k}": "v" for k in (
                "restart-attempt", "replicatedjob-replicas", "jobset-uid", "group-name",
                "group-replicas", "job-index", "job-group-index", "job-key", "job-global-index",
                "jobset-name", "replicatedjob-name", "global-replicas")}
        jobs.append(job)
    # A label the Jobs lack, so the resume merges labels into the patch.
    js = jobset(rjob("workers", 3, pod={"metadata": {"labels": {"team": "a"}}, "spec": {
        "containers": [{"name": "c", "image": "i"}]}}))
    typed = observe.build_decide_request(js, jobs, NOW)
    copied = pb.DecideRequest()
    copied.CopyFrom(typed)
    copied.ClearField("jobs")
    copied.jobs.extend(typed.jobs)
    plans = [convert.decide_response(r) for r in (typed, copied)]
    assert any(a.type == pb.ACTION_TYPE_RESUME_JOB for a in plans[0].actions)
    assert plans[0].SerializeToString(deterministic=True) == plans[1].SerializeToString(
        deterministic=True)
