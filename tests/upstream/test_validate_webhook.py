"""Upstream test/integration/webhook: the defaulting and validation entries, asked through the
Validate contract (what `decider validate` runs) — create with defaults applied, or an update
against the stored object."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from decider.contract import validate as validate_contract
from decider_api.v1 import decider_pb2 as pb


def base(**spec: Any) -> dict[str, Any]:
    def rj(name: str, replicas: int, **tspec: Any) -> dict[str, Any]:
        return {
            "name": name,
            "replicas": replicas,
            "template": {
                "spec": {
                    "parallelism": 1,
                    "completions": 1,
                    **tspec,
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [{"name": "c", "image": "busybox:latest"}],
                        }
                    },
                }
            },
        }

    body: dict[str, Any] = {
        "replicatedJobs": [rj("replicated-job-a", 1), rj("replicated-job-b", 3)]
    }
    body.update(spec)
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "js-hostnames-non-indexed", "namespace": "ns"},
        "spec": body,
    }


def validate(
    obj: dict[str, Any], old: dict[str, Any] | None = None, gates: dict[str, bool] | None = None
) -> tuple[bool, dict[str, Any], list[str]]:
    req = pb.ValidateRequest(
        object_json=json.dumps(obj), options=pb.Options(feature_gates=gates or {})
    )
    if old is not None:
        req.old_object_json = json.dumps(old)
    resp = validate_contract.validate_response(req)
    return (
        resp.valid,
        json.loads(resp.object_json or "null"),
        [f"{e.field}: {e.message}" for e in resp.errors],
    )


# ---- defaulting on create ----------------------------------------------------------------------


def _rjs(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return obj["spec"]["replicatedJobs"]


@pytest.mark.parametrize(
    ("mutate", "check"),
    [
        pytest.param(
            lambda o: None,
            lambda o: all(r["template"]["spec"]["completionMode"] == "Indexed" for r in _rjs(o)),
            id="completion-mode-defaults-to-indexed",
        ),
        pytest.param(
            lambda o: _rjs(o)[0]["template"]["spec"].update(completionMode="NonIndexed"),
            lambda o: _rjs(o)[0]["template"]["spec"]["completionMode"] == "NonIndexed",
            id="completion-mode-unchanged-if-set",
        ),
        pytest.param(
            lambda o: None,
            lambda o: o["spec"]["network"]["enableDNSHostnames"] is True,
            id="enable-dns-hostnames-defaults-to-true",
        ),
        pytest.param(
            lambda o: None,
            lambda o: o["spec"]["network"]["publishNotReadyAddresses"] is True,
            id="publish-not-ready-addresses-defaults-to-true",
        ),
        pytest.param(
            lambda o: _rjs(o)[0]["template"]["spec"]["template"]["spec"].pop("restartPolicy"),
            lambda o: (
                _rjs(o)[0]["template"]["spec"]["template"]["spec"]["restartPolicy"] == "OnFailure"
            ),
            id="pod-restart-policy-defaults-to-on-failure",
        ),
        pytest.param(
            lambda o: None,
            lambda o: o["spec"]["successPolicy"]["operator"] == "All",
            id="success-policy-defaults-to-all",
        ),
        pytest.param(
            lambda o: o["spec"].update(
                failurePolicy={"rules": [{"action": "FailJobSet"}, {"action": "RestartJobSet"}]}
            ),
            lambda o: (
                [r["name"] for r in o["spec"]["failurePolicy"]["rules"]]
                == ["failurePolicyRule0", "failurePolicyRule1"]
            ),
            id="failure-policy-rule-names-defaulted",
        ),
        pytest.param(
            lambda o: o["spec"].update(
                volumeClaimPolicies=[{"templates": [{"metadata": {"name": "v"}, "spec": {}}]}]
            ),
            lambda o: (
                o["spec"]["volumeClaimPolicies"][0]["retentionPolicy"] == {"whenDeleted": "Delete"}
            ),
            id="volume-claim-policies-retention-defaulted",
        ),
    ],
)
def test_defaulting(
    mutate: Callable[[dict[str, Any]], Any], check: Callable[[dict[str, Any]], bool]
) -> None:
    obj = base()
    mutate(obj)
    if "volumeClaimPolicies" in obj["spec"]:
        _rjs(obj)[0]["template"]["spec"]["template"]["spec"]["containers"][0]["volumeMounts"] = [
            {"name": "v", "mountPath": "/v"}
        ]
    valid, out, errors = validate(obj)
    assert valid, errors
    assert check(out)


# ---- create -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mutate", "valid", "fragment"),
    [
        pytest.param(
            lambda o: o["spec"].update(
                successPolicy={"operator": "All", "targetReplicatedJobs": ["does-not-exist"]}
            ),
            False,
            "does not appear in .spec.ReplicatedJobs",
            id="success-policy-with-invalid-replicated-job-rejected",
        ),
        pytest.param(
            lambda o: _rjs(o)[0].update(replicas=-1), False, "", id="negative-replicas-rejected"
        ),
        pytest.param(
            lambda o: _rjs(o)[0].update(replicas=0), True, "", id="zero-replicas-accepted"
        ),
        pytest.param(
            lambda o: (
                o["spec"].update(startupPolicy={"startupPolicyOrder": "AnyOrder"}),
                _rjs(o)[1].update(dependsOn=[{"name": "replicated-job-a", "status": "Ready"}]),
            ),
            True,
            "",
            id="depends-on-with-any-order-allowed",
        ),
        pytest.param(
            lambda o: (
                o["spec"].update(startupPolicy={"startupPolicyOrder": "InOrder"}),
                _rjs(o)[1].update(dependsOn=[{"name": "replicated-job-a", "status": "Ready"}]),
            ),
            False,
            "StartupPolicy and DependsOn APIs are mutually exclusive",
            id="depends-on-with-in-order-rejected",
        ),
        pytest.param(
            lambda o: _rjs(o)[0].update(
                dependsOn=[{"name": "replicated-job-b", "status": "Ready"}]
            ),
            False,
            "DependsOn can't be set for the first ReplicatedJob",
            id="depends-on-first-replicated-job-rejected",
        ),
        pytest.param(
            lambda o: _rjs(o)[1].update(
                dependsOn=[{"name": "replicated-job-a", "status": "Started"}]
            ),
            False,
            "",
            id="depends-on-invalid-status-rejected",
        ),
        pytest.param(
            lambda o: o["spec"].update(replicatedJobs=[]),
            True,
            "",
            id="no-replicated-jobs-accepted",
        ),
        pytest.param(
            lambda o: (
                o["metadata"].update(name="a" * 40),
                o["spec"].update(
                    coordinator={"replicatedJob": "replicated-job-a", "jobIndex": 0, "podIndex": 0}
                ),
            ),
            False,
            "coordinator",
            id="coordinator-label-value-too-long-rejected",
        ),
        pytest.param(
            lambda o: o["spec"].update(
                volumeClaimPolicies=[
                    {"templates": [{"metadata": {"name": "v", "namespace": "x"}, "spec": {}}]}
                ]
            ),
            False,
            "namespace cannot be set",
            id="volume-claim-template-with-namespace-rejected",
        ),
    ],
)
def test_create(mutate: Callable[[dict[str, Any]], Any], valid: bool, fragment: str) -> None:
    obj = base()
    mutate(obj)
    got_valid, _, errors = validate(obj)
    assert got_valid is valid, errors
    if fragment:
        assert any(fragment in e for e in errors), errors


# ---- update -------------------------------------------------------------------------------------


def stored(**spec: Any) -> dict[str, Any]:
    valid, out, errors = validate(base(**spec))
    assert valid, errors
    return out


def set_pod(o: dict[str, Any], key: str, value: Any) -> None:
    pod = _rjs(o)[0]["template"]["spec"]["template"]
    if key in ("labels", "annotations"):
        pod.setdefault("metadata", {})[key] = value
    else:
        pod["spec"][key] = value


def set_par(o: dict[str, Any], p: int | None, c: int | None) -> None:
    spec = _rjs(o)[0]["template"]["spec"]
    spec.update(parallelism=p, completions=c)


@pytest.mark.parametrize(
    ("old_spec", "mutate", "gates", "valid"),
    [
        pytest.param(
            {"suspend": True},
            lambda o: set_pod(o, "nodeSelector", {"a": "b"}),
            {},
            True,
            id="node-selector-update-allowed-while-suspended",
        ),
        pytest.param(
            {},
            lambda o: set_pod(o, "nodeSelector", {"a": "b"}),
            {},
            False,
            id="node-selector-update-rejected-while-running",
        ),
        pytest.param(
            {"suspend": True},
            lambda o: _rjs(o)[0].update(replicas=2),
            {},
            False,
            id="other-fields-immutable-even-while-suspended",
        ),
        pytest.param({}, lambda o: o["spec"].update(suspend=True), {}, True, id="suspend-jobset"),
        pytest.param(
            {"suspend": True},
            lambda o: o["spec"].update(suspend=False),
            {},
            True,
            id="resume-jobset",
        ),
        pytest.param(
            {},
            lambda o: o["spec"].update(successPolicy={"operator": "Any"}),
            {},
            False,
            id="success-policy-immutable",
        ),
        pytest.param(
            {"failurePolicy": {"maxRestarts": 1}},
            lambda o: o["spec"]["failurePolicy"].update(maxRestarts=2),
            {},
            False,
            id="failure-policy-immutable",
        ),
        pytest.param(
            {"managedBy": "example.com/ctl"},
            lambda o: o["spec"].update(managedBy="example.com/other"),
            {},
            False,
            id="managed-by-immutable",
        ),
        pytest.param(
            {"suspend": True},
            lambda o: (
                set_pod(o, "labels", {"l": "v"}),
                set_pod(o, "annotations", {"a": "v"}),
                set_pod(o, "tolerations", [{"key": "k", "operator": "Exists"}]),
                set_pod(o, "schedulingGates", [{"name": "g"}]),
            ),
            {},
            True,
            id="pod-template-update-allowed-while-suspended",
        ),
        pytest.param(
            {},
            lambda o: set_pod(o, "labels", {"l": "v"}),
            {},
            False,
            id="pod-template-update-rejected-while-running",
        ),
        pytest.param(
            {},
            lambda o: set_par(o, 4, 4),
            {"ElasticJobSet": True},
            True,
            id="elastic/scaling-allowed-with-gate",
        ),
        pytest.param(
            {},
            lambda o: set_par(o, 4, 2),
            {"ElasticJobSet": True},
            False,
            id="elastic/unequal-parallelism-and-completions-rejected",
        ),
        pytest.param(
            {},
            lambda o: set_par(o, 0, 0),
            {"ElasticJobSet": True},
            False,
            id="elastic/scaling-below-one-rejected",
        ),
        pytest.param(
            {},
            lambda o: set_par(o, 4, 4),
            {"ElasticJobSet": False},
            False,
            id="elastic/scaling-rejected-without-gate",
        ),
    ],
)
def test_update(
    old_spec: dict[str, Any],
    mutate: Callable[[dict[str, Any]], Any],
    gates: dict[str, bool],
    valid: bool,
) -> None:
    old = stored(**old_spec)
    new = copy.deepcopy(old)
    mutate(new)
    got_valid, _, errors = validate(new, old, gates)
    assert got_valid is valid, errors


def test_elastic_scaling_rejected_for_non_indexed_jobs() -> None:
    old = stored()
    _rjs(old)[0]["template"]["spec"]["completionMode"] = "NonIndexed"
    new = copy.deepcopy(old)
    set_par(new, 4, 4)
    got_valid, _, errors = validate(new, old, {"ElasticJobSet": True})
    assert got_valid is False, errors


def test_depends_on_immutable() -> None:
    old = stored()
    _rjs(old)[1]["dependsOn"] = [{"name": "replicated-job-a", "status": "Ready"}]
    new = copy.deepcopy(old)
    _rjs(new)[1]["dependsOn"] = [{"name": "replicated-job-a", "status": "Complete"}]
    got_valid, _, errors = validate(new, old)
    assert got_valid is False, errors


# ---- the stored object --------------------------------------------------------------------------


def _container(o: dict[str, Any]) -> dict[str, Any]:
    return _rjs(o)[0]["template"]["spec"]["template"]["spec"]["containers"][0]


def test_create_stores_what_the_webhook_round_trip_writes() -> None:
    # The mutating webhook's patch is json.Marshal of the decoded Go object: quantities as
    # canonical strings, structs as objects, no-omitempty strings as "".
    obj = base()
    _container(obj)["resources"] = {"requests": {"cpu": 2, "memory": "2048Mi"}}
    _rjs(obj)[0]["template"]["spec"]["podFailurePolicy"] = {
        "rules": [{"action": "FailJob", "onPodConditions": [{"type": "ConfigIssue"}]}]}
    valid, out, errors = validate(obj)
    assert valid, errors
    assert _container(out)["resources"] == {"requests": {"cpu": "2", "memory": "2Gi"}}
    assert _rjs(out)[0]["template"]["spec"]["podFailurePolicy"]["rules"][0][
        "onPodConditions"] == [{"type": "ConfigIssue", "status": ""}]
    assert _container(out)["resources"] and _rjs(out)[1]["template"]["metadata"] == {}


def test_update_answers_the_object_as_sent() -> None:
    # The webhook mutates on create only: an update's quantities stay as they were sent.
    old = stored()
    new = copy.deepcopy(old)
    new["spec"]["suspend"] = True
    _container(old)["resources"] = {"limits": {"cpu": 4}}
    _container(new)["resources"] = {"limits": {"cpu": 4}}
    valid, out, errors = validate(new, old)
    assert valid, errors
    assert _container(out)["resources"] == {"limits": {"cpu": 4}}
