"""Admission of upstream's newer lifecycle fields, through the Validate contract (what `decider
validate` runs), gates on and off:

- activeDeadlineSeconds (KEP-1186): the webhook's gate guard (jobset_webhook.go @4f0cbded), the
  CRD's Minimum=1 (integration test "rejects activeDeadlineSeconds of zero at the API server")
  and the field's mutability (the KEP's "Mutability"; integration tests "recomputes the deadline
  ... lowered" and "extends the deadline ... raised");
- container resources mutable while suspended (#1273 @7659f19a, TestValidateUpdate's new cases and
  test/integration/webhook entries).

Ids name the upstream case."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from decider.core import constants as c
from upstream.test_validate_webhook import base, validate

ADS = {c.GATE_ACTIVE_DEADLINE: True}
GATE_OFF = "spec.activeDeadlineSeconds: cannot be set when JobSetActiveDeadlineSeconds " \
    "feature gate is disabled"
IMMUTABLE = "spec.replicatedJobs: field is immutable"


def stored(obj: dict[str, Any]) -> dict[str, Any]:
    """The object as the API server stores it after a create that passed admission."""
    valid, out, errors = validate(obj, gates=ADS)
    assert valid, errors
    return out


# ---- activeDeadlineSeconds on create ----------------------------------------------------------

@pytest.mark.parametrize(("value", "gates", "errors"), [
    pytest.param(600, {}, [GATE_OFF], id="gate off: setting activeDeadlineSeconds is refused"),
    pytest.param(600, ADS, [], id="gate on: activeDeadlineSeconds is accepted"),
    pytest.param(None, {}, [], id="gate off: a JobSet without it is accepted"),
    pytest.param(0, ADS, ["spec.activeDeadlineSeconds: must be greater than or equal to 1"],
                 id="rejects activeDeadlineSeconds of zero at the API server (Minimum=1)"),
    pytest.param(-5, {}, ["spec.activeDeadlineSeconds: must be greater than or equal to 1"],
                 id="Minimum=1 whatever the gate (schema before webhook)"),
    pytest.param(c.MAX_INT64, ADS, [], id="int64: the largest value is a valid deadline"),
    pytest.param(c.MAX_INT64 + 1, ADS,
                 ["spec.activeDeadlineSeconds: must be a 64-bit integer (from "
                  "-9223372036854775808 to 9223372036854775807)"], id="past int64"),
])
def test_create(value: int | None, gates: dict[str, bool], errors: list[str]) -> None:
    obj = base()
    if value is not None:
        obj["spec"]["activeDeadlineSeconds"] = value
    valid, out, got = validate(obj, gates=gates)
    assert (valid, got) == (not errors, errors)
    if valid and value is not None:
        assert out["spec"]["activeDeadlineSeconds"] == value  # no defaulting touches it


# ---- activeDeadlineSeconds on update ----------------------------------------------------------

@pytest.mark.parametrize(("old", "new", "gates", "errors"), [
    pytest.param(None, 600, {}, [GATE_OFF], id="gate off: setting it on update is refused"),
    pytest.param(600, 1200, {}, [GATE_OFF], id="gate off: changing it is refused"),
    pytest.param(600, 600, {}, [], id="gate off: an unchanged value is allowed"),
    pytest.param(600, None, {}, [], id="gate off: clearing it is always allowed"),
    pytest.param(None, 600, ADS, [], id="gate on: added to a running JobSet (mutable)"),
    pytest.param(3600, 1, ADS, [], id="gate on: lowered on a running JobSet"),
    pytest.param(3600, 7200, ADS, [], id="gate on: raised on a running JobSet"),
    pytest.param(3600, None, ADS, [], id="gate on: removed"),
    pytest.param(3600, 0, ADS, ["spec.activeDeadlineSeconds: must be greater than or equal to 1"],
                 id="gate on: Minimum=1 on update too"),
])
def test_update(old: int | None, new: int | None, gates: dict[str, bool],
                errors: list[str]) -> None:
    before = base()
    if old is not None:
        before["spec"]["activeDeadlineSeconds"] = old
    before = stored(before)
    after = copy.deepcopy(before)
    after["spec"].pop("activeDeadlineSeconds", None)
    if new is not None:
        after["spec"]["activeDeadlineSeconds"] = new
    valid, _, got = validate(after, old=before, gates=gates)
    assert (valid, got) == (not errors, errors)


def test_status_fields_are_known_to_the_schema() -> None:
    # startTime and executionAttempts are status fields of the CRD: a JobSet read back with
    # them is no unknown-field error.
    obj = base()
    obj["status"] = {"startTime": "2026-01-01T00:00:00Z", "executionAttempts": 2}
    valid, _, errors = validate(obj, gates=ADS)
    assert valid, errors


# ---- MutablePodResourcesForSuspendedJobSets (#1273) -------------------------------------------

MUTABLE = {c.GATE_MUTABLE_POD_RESOURCES: True}


def _pod(obj: dict[str, Any], i: int = 0) -> dict[str, Any]:
    return obj["spec"]["replicatedJobs"][i]["template"]["spec"]["template"]["spec"]


def _with_init(obj: dict[str, Any]) -> dict[str, Any]:
    for i in range(2):
        _pod(obj, i)["initContainers"] = [{"name": "test-init-container", "image": "busybox"}]
    return obj


def _resources(key: str, cpu: str) -> Callable[[dict[str, Any]], None]:
    def change(obj: dict[str, Any]) -> None:
        for i in range(2):
            for container in _pod(obj, i).get(key) or []:
                container["resources"] = {"requests": {"cpu": cpu}, "limits": {"cpu": cpu}}
    return change


def _claims(obj: dict[str, Any]) -> None:
    _pod(obj)["containers"][0].setdefault("resources", {})["claims"] = [{"name": "new-claim"}]


def _image(obj: dict[str, Any]) -> None:
    _pod(obj)["initContainers"][0]["image"] = "busybox:other"


def _sidecar(obj: dict[str, Any]) -> None:
    _resources("containers", "2")(obj)
    _pod(obj)["containers"].append({"name": "new-sidecar", "image": "busybox"})


@pytest.mark.parametrize(("suspended", "change", "init", "gates", "ok"), [
    pytest.param((True, True), _resources("containers", "2"), False, MUTABLE, True,
                 id="container resource requests/limits can be updated for suspended JobSet"),
    pytest.param((True, True), _resources("containers", "2"), False, {}, False,
                 id="container resource requests/limits cannot be updated for suspended JobSet "
                    "when feature gate is disabled"),
    pytest.param((False, False), _resources("containers", "2"), False, MUTABLE, False,
                 id="container resource requests/limits cannot be updated for running JobSet"),
    pytest.param((True, True), _claims, False, MUTABLE, False,
                 id="container resource claims cannot be updated for suspended JobSet even when "
                    "feature gate is enabled"),
    pytest.param((True, True), _sidecar, False, MUTABLE, False,
                 id="adding a container while mutating resources for suspended JobSet is not "
                    "allowed"),
    pytest.param((True, True), _resources("initContainers", "2"), True, MUTABLE, True,
                 id="updating initContainer resources in suspended jobset is allowed"),
    pytest.param((True, True), _image, True, MUTABLE, False,
                 id="updating initContainer image in suspended jobset is not allowed even with "
                    "feature gate enabled"),
    pytest.param((False, True), _resources("containers", "2"), False, MUTABLE, True,
                 id="resources may change in the update that suspends the JobSet"),
    pytest.param((True, False), _resources("containers", "2"), False, MUTABLE, True,
                 id="resources may change in the update that resumes the JobSet"),
])
def test_resources_while_suspended(suspended: tuple[bool, bool],
                                   change: Callable[[dict[str, Any]], None], init: bool,
                                   gates: dict[str, bool], ok: bool) -> None:
    before = base(suspend=suspended[0])
    if init:
        _with_init(before)
    before = stored(before)
    after = copy.deepcopy(before)
    after["spec"]["suspend"] = suspended[1]
    change(after)
    valid, _, errors = validate(after, old=before, gates=gates)
    assert (valid, errors) == (ok, [] if ok else [IMMUTABLE])
