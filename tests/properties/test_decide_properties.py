"""Properties of decide() over random JobSets, child Jobs, pods and feature gates.

(a) total: a plan or InvalidInput naming a field, nothing else;
(b) deterministic: the same input (and a deep copy of it) gives the same plan and the same bytes
    through the gRPC adapter and the client's renderer;
(c) pure: the input is not mutated;
(d) consistent: the plan's actions and status agree with each other and with the input.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, given, settings

from decider.contract import convert
from decider.core import constants as c
from decider.core.decide import decide
from decider.core.errors import InvalidInput
from decider.core.model import Observed, Plan
from decider_api.v1 import decider_pb2 as pb
from decider_client import render
from properties.strategies import examples, observeds, terminal_state_of, to_request

SETTINGS = settings(max_examples=examples(300), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _decide(observed: Observed) -> Plan | InvalidInput:
    """The plan, or the InvalidInput the core raised; any other exception fails the test."""
    try:
        return decide(observed)
    except InvalidInput as exc:
        assert exc.errors, "InvalidInput without errors"
        assert all(e.field for e in exc.errors), f"InvalidInput without a field: {exc}"
        return exc


def _wire(req: pb.DecideRequest) -> tuple[bytes, str] | tuple[str, ...]:
    try:
        resp = convert.decide_response(req)
    except InvalidInput as exc:
        assert all(e.field for e in exc.errors), f"InvalidInput without a field: {exc}"
        return tuple(str(e) for e in exc.errors)
    return (resp.SerializeToString(deterministic=True),
            render.dumps(render.plan_to_dict(resp)))


@SETTINGS
@given(observeds())
def test_decide_is_total_deterministic_pure_and_consistent(observed: Observed) -> None:
    before = copy.deepcopy(observed)
    first = _decide(observed)
    assert observed == before, "decide mutated its input"
    second = _decide(observed)
    third = _decide(copy.deepcopy(observed))
    if isinstance(first, InvalidInput):
        assert isinstance(second, InvalidInput) and isinstance(third, InvalidInput)
        assert first.errors == second.errors == third.errors
    else:
        assert first == second == third
        # (d) on the same example: generating inputs costs more than deciding on them.
        check_consistent(observed, first)


@settings(SETTINGS, max_examples=examples(100))
@given(observeds())
def test_same_bytes_through_the_adapter(observed: Observed) -> None:
    req = to_request(observed)
    sent = req.SerializeToString(deterministic=True)
    copied = pb.DecideRequest()
    copied.CopyFrom(req)
    first = _wire(req)
    assert req.SerializeToString(deterministic=True) == sent, "the adapter mutated the request"
    assert _wire(req) == first
    assert _wire(copied) == first


# --- consistency ------------------------------------------------------------------------------

def _entry(e: dict[str, Any]) -> tuple[Any, ...]:
    return (e.get("name") or "",
            *(e.get(k) or 0 for k in ("ready", "succeeded", "failed", "active", "suspended")),
            tuple(e.get("jobRestarts") or ()), tuple(e.get("jobRestartsCountTowardsMax") or ()))


def normalized_status(status: dict[str, Any]) -> dict[str, Any]:
    """A status with absent fields at their zero values and entries in a fixed order: two
    statuses that normalize equal write the same object."""
    out = dict(status)
    out["restarts"] = status.get("restarts") or 0
    out["restartsCountTowardsMax"] = status.get("restartsCountTowardsMax") or 0
    out["terminalState"] = status.get("terminalState") or ""
    out["conditions"] = list(status.get("conditions") or [])
    out["replicatedJobsStatus"] = sorted(_entry(e) for e in status.get("replicatedJobsStatus")
                                         or ())
    return out


def check_consistent(observed: Observed, plan: Plan) -> None:
    js_uid = observed.jobset["metadata"]["uid"]
    owned = {j.name for j in observed.jobs if j.controller_uid == js_uid}
    foreign = {j.name for j in observed.jobs if j.controller_uid != js_uid}
    uids = {j.uid: j.name for j in observed.jobs}
    creates = [(a.kind, a.name) for a in plan.actions if a.type.startswith("Create")]
    assert len(creates) == len(set(creates)), f"duplicate creates: {creates}"
    for a in plan.actions:
        if a.type == "CreateJob":
            assert a.name not in owned, f"create of existing job {a.name}"
            assert a.name not in foreign, f"create of a name another owner holds: {a.name}"
            assert a.object is not None and a.object["metadata"]["name"] == a.name
        if a.type in ("DeleteJob", "SuspendJob", "ResumeJob", "PatchJob"):
            assert uids.get(a.uid) == a.name, f"{a.type} {a.name} uid {a.uid!r} not observed"
        if a.type in ("DeleteJob", "DeleteJobSet"):
            assert a.uid, f"{a.type} {a.name} without a UID precondition"
    # Keyed by UID: a caller may (wrongly) observe two Jobs of one name, each deleted on its own.
    touched = [(a.type, a.uid) for a in plan.actions
               if a.type in ("DeleteJob", "SuspendJob", "ResumeJob", "PatchJob")]
    assert len(touched) == len(set(touched)), f"one job acted on twice alike: {touched}"

    old = observed.jobset.get("status") or {}
    new = plan.status
    updates = [a for a in plan.actions if a.type == "UpdateStatus"]
    assert len(updates) <= 1
    changed = normalized_status(new) != normalized_status(old)
    assert bool(updates) == changed, (
        f"UpdateStatus present={bool(updates)} but status changed={changed}")
    if not updates:
        # Upstream records events of a status change after the status write; only the ones it
        # records at once (a failed create, a refused gang object) come without one.
        immediate = [a.event.reason for a in plan.actions if a.type == "Event" and a.event]
        assert set(immediate) <= {"JobCreationFailed", "GangObjectConflict"}, (
            f"events without a status write: {immediate}")

    state = new.get("terminalState")
    # The API does not restrict the field, so only a valid input value must stay valid.
    if (old.get("terminalState") or "") in ("", c.COMPLETED, c.FAILED):
        assert state in ("", c.COMPLETED, c.FAILED)
    if terminal_state_of(old) == (old.get("terminalState") or ""):
        # The input agreed with its conditions: so must the output.
        assert terminal_state_of(new) == state, (
            f"terminalState {state!r} but conditions {new.get('conditions')}")

    for key in ("restarts", "restartsCountTowardsMax"):
        assert (new.get(key) or 0) >= (old.get(key) or 0), f"{key} decreased"
    if observed.options.gate(c.GATE_RESTART_JOB):
        olds = {e.get("name"): e for e in old.get("replicatedJobsStatus") or ()}
        for e in new.get("replicatedJobsStatus") or ():
            before = olds.get(e["name"]) or {}
            for key in ("jobRestarts", "jobRestartsCountTowardsMax"):
                was, now = list(before.get(key) or ()), list(e.get(key) or ())
                assert len(now) >= len(was) or not now, f"{key} of {e['name']} shrank"
                assert all(n >= w for n, w in zip(now, was, strict=False)), (
                    f"{key} of {e['name']} decreased: {was} -> {now}")
    previous = old.get("previousInPlaceRestartAttempt")
    if previous is not None:
        assert (new.get("previousInPlaceRestartAttempt") or 0) >= previous
