"""Shrunk examples the property tests found, kept as explicit regression tests."""

from __future__ import annotations

import json

import pytest

from decider.contract import convert
from decider.core import constants as c
from decider.core.errors import InvalidInput
from decider_api.v1 import decider_pb2 as pb
from decider_client import observe
from support.builders import NOW, job, jobset, rjob, run


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


def _with_template(path: tuple[str, ...], value: object) -> dict[str, object]:
    js = jobset(rjob("a", 1))
    node = js["spec"]["replicatedJobs"][0]["template"]
    for step in path[:-1]:
        node = node.setdefault(step, {})
    node[path[-1]] = value
    return js


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
], ids=["template-metadata", "template-labels", "template-annotations", "pod-spec",
        "null-container", "vcp-templates", "vcp-template", "vcp-template-metadata",
        "vcp-retention"])
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
