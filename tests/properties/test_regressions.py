"""Shrunk examples the property tests found, kept as explicit regression tests."""

from __future__ import annotations

import json

import pytest

from decider.contract import convert
from decider.contract.limits import Limits
from decider.core import constants as c
from decider.core.errors import InvalidInput
from decider.service import dispatch
from decider_api.v1 import decider_pb2 as pb
from decider_client import observe
from support.builders import NOW, UID, job, jobset, rjob, run


def test_untouched_plan_status_has_every_counter() -> None:
    # A JobSet being deleted, with no status yet: the plan's status still has the zero values.
    js = jobset(rjob("w", 1))
    js["metadata"]["deletionTimestamp"] = "2026-01-01T11:59:00Z"
    plan = run(js)
    assert plan.actions == []
    assert plan.status == {"restarts": 0, "restartsCountTowardsMax": 0, "terminalState": "",
                           "conditions": [], "replicatedJobsStatus": []}
    managed = run(jobset(rjob("w", 1), managedBy="someone/else"))
    assert managed.status["terminalState"] == "" and managed.status["restarts"] == 0


def _status_entry(**over: object) -> dict[str, object]:
    entry: dict[str, object] = {"name": "w", "ready": 0, "succeeded": 0, "failed": 0,
                                "active": 0, "suspended": 0}
    entry.update(over)
    return entry


@pytest.mark.parametrize("status,field", [
    # A null item read as {} by the parser, then crashed the pass with AttributeError.
    ({"replicatedJobsStatus": [None]}, "status.replicatedJobsStatus[0]"),
    ({"conditions": [None]}, "status.conditions[0]"),
    # Non-integer counts crashed sorting (str < int) or the proto's int32 fields (TypeError).
    ({"replicatedJobsStatus": [_status_entry(), _status_entry(name="a", suspended="1")]},
     "status.replicatedJobsStatus[1].suspended"),
    ({"replicatedJobsStatus": [_status_entry(suspended=[None])]},
     "status.replicatedJobsStatus[0].suspended"),
    # An entry without its (required) name sorted 0 against names: TypeError.
    ({"replicatedJobsStatus": [_status_entry(), {"ready": 0}]},
     "status.replicatedJobsStatus[1].name"),
    ({"previousInPlaceRestartAttempt": "1"}, "status.previousInPlaceRestartAttempt"),
    ({"currentInPlaceRestartAttempt": [1]}, "status.currentInPlaceRestartAttempt"),
], ids=["null-rjs-entry", "null-condition", "string-count", "list-count", "nameless-entry",
        "string-previous-attempt", "list-current-attempt"])
def test_malformed_status_is_invalid_input(status: dict[str, object], field: str) -> None:
    js = jobset(rjob("w", 1), status=status)
    with pytest.raises(InvalidInput) as exc:
        run(js)
    assert [e.field for e in exc.value.errors] == [field]
    # Through the adapter too (a deleted JobSet's status goes straight to the response).
    js["metadata"]["deletionTimestamp"] = "2026-01-01T11:59:00Z"
    req = pb.DecideRequest(jobset_json=json.dumps(js), now=observe.timestamp(NOW))
    with pytest.raises(InvalidInput):
        convert.decide_response(req)


@pytest.mark.parametrize("key", ["conditions", "replicatedJobsStatus", "restarts",
                                 "terminalState"])
def test_a_null_status_field_is_its_zero_value(key: str) -> None:
    # `"conditions": null` crashed the pass when it set a condition (found by fuzzing
    # Simulate): Go decodes null as the field's zero value, and so does the decider.
    js = jobset(rjob("w", 2), status={"restarts": 0, key: None})
    failed = job("w", 0, js_name=js["metadata"]["name"], state="failed",
                 failed_at="2026-01-01T11:00:00Z")
    plan = run(js, [failed, job("w", 1, js_name=js["metadata"]["name"])])
    assert plan.status["terminalState"] == c.FAILED
    assert [cond["type"] for cond in plan.status["conditions"]] == [c.FAILED]
    assert isinstance(plan.status["replicatedJobsStatus"], list)
    assert plan.status["restarts"] == 0


def _vcp(**over: object) -> dict[str, object]:
    policy: dict[str, object] = {"templates": [{"metadata": {"name": "data"}, "spec": {}}],
                                 "retentionPolicy": {"whenDeleted": "Delete"}}
    policy.update(over)
    return policy


def _with_template(path: tuple[str | int, ...], value: object) -> dict[str, object]:
    js = jobset(rjob("a", 1))
    node = js["spec"]["replicatedJobs"][0]["template"]
    for step in path[:-1]:
        node = node[step] if isinstance(step, int) else node.setdefault(step, {})
    node[path[-1]] = value
    return js


_CONTAINER = ("spec", "template", "spec", "containers", 0)
_C0 = "spec.replicatedJobs[0].template.spec.template.spec.containers[0]"


@pytest.mark.parametrize("js,field", [
    # Junk where the pass reads the opaque template crashed it (AttributeError / TypeError).
    (_with_template(("metadata",), True), "spec.replicatedJobs[0].template.metadata"),
    (_with_template(("metadata", "labels"), True),
     "spec.replicatedJobs[0].template.metadata.labels"),
    (_with_template(("metadata", "annotations"), True),
     "spec.replicatedJobs[0].template.metadata.annotations"),
    (_with_template(("spec", "template", "spec"), True),
     "spec.replicatedJobs[0].template.spec.template.spec"),
    (_with_template(("spec", "template", "spec", "containers"), [None]),
     "spec.replicatedJobs[0].template.spec.template.spec.containers[0]"),
    (jobset(rjob("a", 1), volumeClaimPolicies=[_vcp(templates=True)]),
     "spec.volumeClaimPolicies[0].templates"),
    (jobset(rjob("a", 1), volumeClaimPolicies=[_vcp(templates=[True])]),
     "spec.volumeClaimPolicies[0].templates[0]"),
    (jobset(rjob("a", 1), volumeClaimPolicies=[_vcp(templates=[{"metadata": True}])]),
     "spec.volumeClaimPolicies[0].templates[0].metadata"),
    (jobset(rjob("a", 1), volumeClaimPolicies=[_vcp(retentionPolicy=True)]),
     "spec.volumeClaimPolicies[0].retentionPolicy"),
    # Found by bench/fuzz_rpc.py: the headless Service's ports (#1300) and a resume's container
    # resources (KEP-1150) are read from the template: INTERNAL (AttributeError, TypeError).
    (_with_template(_CONTAINER + ("ports",), 7), f"{_C0}.ports"),
    (_with_template(_CONTAINER + ("ports",), [8080]), f"{_C0}.ports[0]"),
    (_with_template(_CONTAINER + ("ports",), [{"containerPort": "8080"}]),
     f"{_C0}.ports[0].containerPort"),
    (_with_template(_CONTAINER + ("ports",), [{"containerPort": 2**31}]),
     f"{_C0}.ports[0].containerPort"),
    (_with_template(_CONTAINER + ("ports",), [{"containerPort": 80, "protocol": 6}]),
     f"{_C0}.ports[0].protocol"),
    (_with_template(_CONTAINER + ("resources",), "2 cpus"), f"{_C0}.resources"),
    (_with_template(_CONTAINER + ("resources",), {"limits": ["cpu"]}),
     f"{_C0}.resources.limits"),
], ids=["template-metadata", "template-labels", "template-annotations", "pod-spec",
        "null-container", "vcp-templates", "vcp-template", "vcp-template-metadata",
        "vcp-retention", "ports-not-a-list", "port-not-an-object", "container-port-a-string",
        "container-port-past-int32", "protocol-not-a-string", "resources-not-an-object",
        "limits-not-an-object"])
def test_malformed_template_is_invalid_input(js: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidInput) as exc:
        run(js)
    assert [e.field for e in exc.value.errors] == [field]


def test_duplicate_replicated_job_status_names_are_invalid_input() -> None:
    # Two entries for "a": the pass kept one entry's jobRestarts ([0]) and dropped the other's
    # ([1]), so a restart counter went back under the RestartJob gate.
    status = {"replicatedJobsStatus": [{"name": "a", "jobRestarts": [0]},
                                       {"name": "a", "jobRestarts": [1]}]}
    with pytest.raises(InvalidInput) as exc:
        run(jobset(rjob("a", 1), status=status), gates={c.GATE_RESTART_JOB: True})
    assert [e.field for e in exc.value.errors] == ["status.replicatedJobsStatus[1].name"]


# ---- found by bench/fuzz_rpc.py through the server's own path (dispatch: bytes in, status out)

def _service(spec: object) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "js", "namespace": "default", "uid": "svc-uid",
                         "ownerReferences": [{"apiVersion": c.API_VERSION, "kind": c.KIND,
                                              "name": "js", "uid": UID, "controller": True}]},
            "spec": spec}


def _decide_bytes(owned: list[dict[str, object]], whole: bool) -> bytes:
    js = jobset(rjob("a", 1))
    if whole:
        return observe.build_raw_decide_request(js, owned, NOW).SerializeToString()
    # Typed entries as a client in another language writes them: the Python client's
    # summarizer would refuse these objects before sending them.
    req = observe.build_decide_request(js, [], NOW)
    for obj in owned:
        meta = obj["metadata"]
        assert isinstance(meta, dict)
        req.objects.add(api_version=str(obj["apiVersion"]), kind=str(obj["kind"]),
                        name=meta["name"], uid=meta["uid"], controller_uid=UID,
                        object_json=json.dumps(obj))
    return req.SerializeToString()


def _suspended_job(containers_json: str) -> bytes:
    js = jobset(rjob("a", 1))
    req = observe.build_decide_request(js, [], NOW, feature_gates={
        c.GATE_MUTABLE_POD_RESOURCES: True})
    obs = req.jobs.add(name="js-a-0", uid="u0", controller_uid=UID, suspend=True)
    obs.labels.update({c.REPLICATED_JOB_NAME: "a", c.RESTART_ATTEMPT: "0", c.JOB_INDEX: "0"})
    obs.pod_template.containers_json = containers_json
    return req.SerializeToString()


def _simulate_suspended_at_once(metadata: object) -> bytes:
    js = jobset(rjob("a", 1))
    js["metadata"] = metadata
    req = pb.SimulateRequest(observed=pb.DecideRequest(jobset_json=json.dumps(js),
                                                       now=observe.timestamp(NOW)))
    req.events.add(at_seconds=0, type=pb.SIMULATION_EVENT_TYPE_JOBSET_SUSPENDED)
    return req.SerializeToString()


_MAX = 2**31 - 1


def _child(index: int, state: str, *, attempt: int = 0, suspend: bool = False,
           annotations: dict[str, str] | None = None) -> dict[str, object]:
    """Job js-w-<index> as the API server serves it: failed, or running (suspended or not)."""
    status: dict[str, object] = {"active": 1, "ready": 1}
    if state == "failed":
        status = {"failed": 1, "conditions": [{
            "type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
            "lastTransitionTime": "2026-01-01T11:00:00Z"}]}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {
        "name": f"js-w-{index}", "uid": f"u{index}", "annotations": annotations or {},
        "labels": {c.REPLICATED_JOB_NAME: "w", c.RESTART_ATTEMPT: str(attempt),
                   c.JOB_INDEX: str(index)},
        "ownerReferences": [{"apiVersion": c.API_VERSION, "kind": c.KIND, "name": "js",
                             "uid": UID, "controller": True}]},
        "spec": {"parallelism": 1, "completions": 1, "suspend": suspend,
                 "template": {"spec": {"containers": [{"name": "main"}]}}},
        "status": status}


def _counters(status: dict[str, object], owned: list[dict[str, object]],
              gates: dict[str, bool], **spec: object) -> bytes:
    js = jobset(rjob("w", 1), status=status, **spec)
    return observe.build_decide_request(js, owned, NOW, feature_gates=gates).SerializeToString()


_IGNORE_MAX = {"maxRestarts": 1, "rules": [{"name": "again",
                                           "action": "RestartJobSetAndIgnoreMaxRestarts"}]}
_SUSPENDED = [{"type": "Suspended", "status": "True", "reason": "SuspendedJobs", "message": "",
               "lastTransitionTime": "2026-01-01T11:00:00Z"}]


def _pod_sets_toleration(seconds: int) -> bytes:
    js = _with_template(("spec", "template", "spec", "tolerations"),
                        [{"key": "k", "operator": "Exists", "tolerationSeconds": seconds}])
    return pb.PodSetsRequest(object_json=json.dumps(js)).SerializeToString()


def _validate(quantity: object) -> bytes:
    js = _with_template(_CONTAINER + ("resources",), {"requests": {"cpu": quantity}})
    return pb.ValidateRequest(object_json=json.dumps(js)).SerializeToString()


@pytest.mark.parametrize(("method", "payload", "field"), [
    # An observed Service whose spec or ports are junk: _sync_ports read spec.get (INTERNAL).
    ("Decide", _decide_bytes([_service(7)], whole=False), "objects[0].object_json.spec"),
    ("Decide", _decide_bytes([_service({"ports": "tcp-80"})], whole=False),
     "objects[0].object_json.spec.ports"),
    ("Decide", _decide_bytes([_service("x")], whole=True), "observed_json[0].spec"),
    # A suspended Job's containers a resume rewrites: resources must be objects, and the JSON
    # is read as every other request JSON is (no NaN written back into the patch).
    ("Decide", _suspended_job('[{"name": "main", "resources": "2 cpus"}]'),
     "jobs[name=js-a-0].pod_template.containers_json[0].resources"),
    ("Decide", _suspended_job('[{"name": "main", "resources": {"requests": [1]}}]'),
     "jobs[name=js-a-0].pod_template.containers_json[0].resources.requests"),
    ("Decide", _suspended_job('[{"name": "main", "resources": {"limits": {"cpu": NaN}}}]'),
     "jobs[name=js-a-0].pod_template.containers_json[0].resources.limits.cpu"),
    # Found over gRPC (seed 22): a name the resume could not look up (unhashable list).
    ("Decide", _suspended_job('[{"name": ["main"], "resources": {}}]'),
     "jobs[name=js-a-0].pod_template.containers_json[0].name"),
    # An integer no float64 holds, where the webhook's Go round trip reads a quantity:
    # OverflowError (INTERNAL); the API server's decoder refuses such a number.
    ("Validate", _validate(10**400),
     "spec.replicatedJobs[0].template.spec.template.spec.containers[0].resources.requests.cpu"),
    # A JobSet suspended by an event at +0s is edited before pass 1 reads it: a metadata that
    # is no object crashed the edit (INTERNAL) where pass 1 names the field.
    ("Simulate", _simulate_suspended_at_once(1.5), "metadata"),
    # A counter at int32's maximum that the pass adds one to: the plan's status could not be
    # serialized (ValueError, INTERNAL); upstream's Go wraps to -2147483648.
    ("Decide", _counters({"restarts": _MAX}, [_child(0, "failed", attempt=_MAX)], {},
                         failurePolicy=_IGNORE_MAX), "status.restarts"),
    ("Decide", _counters({"restarts": 0, "executionAttempts": _MAX}, [_child(0, "failed")],
                         {c.GATE_EXECUTION_ATTEMPTS: True}, failurePolicy=_IGNORE_MAX),
     "status.executionAttempts"),
    ("Decide", _counters({"executionAttempts": _MAX, "conditions": _SUSPENDED},
                         [_child(0, "active", suspend=True,
                                 annotations={c.EXECUTION_ATTEMPT: str(_MAX)})],
                         {c.GATE_EXECUTION_ATTEMPTS: True}), "status.executionAttempts"),
    ("Decide", _counters({"restarts": _MAX, "conditions": _SUSPENDED},
                         [_child(0, "active", suspend=True, attempt=_MAX)],
                         {c.GATE_EXECUTION_ATTEMPTS: True}), "status.restarts"),
    ("Decide", _counters({"replicatedJobsStatus": [{
        "name": "w", "ready": 0, "succeeded": 0, "failed": 1, "active": 0, "suspended": 0,
        "jobRestarts": [_MAX]}]}, [_child(0, "failed")], {c.GATE_RESTART_JOB: True},
        failurePolicy={"maxRestarts": 1, "rules": [
            {"name": "one", "action": "RestartJobAndIgnoreMaxRestarts"}]}),
     "status.replicatedJobsStatus[name=w].jobRestarts[0]"),
    # (An in-place attempt past int32 is read as upstream's int32() reads it: test_stored_state.)
    # Kueue's pod set carries a toleration's seconds as int64: one past either end could not
    # be serialized (ValueError, INTERNAL; hypothesis found it through PodSets).
    ("PodSets", _pod_sets_toleration(2**63),
     "spec.replicatedJobs[0].template.spec.template.spec.tolerations[0].tolerationSeconds"),
    ("PodSets", _pod_sets_toleration(-(2**63) - 1),
     "spec.replicatedJobs[0].template.spec.template.spec.tolerations[0].tolerationSeconds"),
], ids=["service-spec-not-an-object", "service-ports-not-a-list", "service-sent-whole",
        "job-container-resources-a-string", "job-container-requests-a-list",
        "job-container-limit-nan", "job-container-name-a-list", "quantity-past-float64",
        "simulate-suspends-junk-metadata",
        "restarts-at-int32-max", "execution-attempts-at-max-on-restart",
        "execution-attempts-at-max-on-resume", "first-attempt-after-max-restarts",
        "job-restarts-at-max",
        "pod-sets-toleration-seconds-past-int64",
        "pod-sets-toleration-seconds-below-int64"])
def test_fuzz_findings_are_invalid_argument_naming_the_field(method: str, payload: bytes,
                                                             field: str) -> None:
    reply = dispatch.answer(method, payload, Limits())
    assert reply.code == dispatch.INVALID_ARGUMENT, reply.message
    assert reply.message.startswith(f"{field}: "), reply.message
