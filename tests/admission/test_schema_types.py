"""The CRD structural schema's type check at every level of a JobSet's spec, pod templates
included, as the API server reports it (kube-openapi's type validator, apiextensions'
field.TypeInvalid): `<path>: Invalid value: "<got>": <path> in body must be of type <want>:
"<got>"`. A type error keeps the CRD's CEL rules from running, which the API server says once
at `<nil>`."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from decider.core.admission import default_jobset, validate_create, validate_update
from decider.core.admission.quantity import ERR_FORMAT

from .jobsets import chain, jobset, put

RJ = "spec.replicatedJobs[0]"
JOB = f"{RJ}.template.spec"
POD = f"{JOB}.template.spec"
C0 = f"{POD}.containers[0]"
CEL_SKIPPED = ("<nil>", "Invalid value: null: some validation rules were not checked because "
                        "the object was invalid; correct the existing errors to complete "
                        "validation")


def typed(path: str, want: str, got: str) -> tuple[str, str]:
    return (path, f'Invalid value: "{got}": {path} in body must be of type {want}: "{got}"')


def int_or_string(path: str, got: str) -> list[tuple[str, str]]:
    """x-kubernetes-int-or-string: its two types, then the CRD's anyOf of them."""
    return [typed(path, "integer,string", got),
            ("<nil>", f'Invalid value: "": "{path}" must validate at least one schema (anyOf)'),
            typed(path, "integer", got)]


# (mutation, the errors of a create; those of an update where they differ)
ROWS = [
    pytest.param(put(f"{C0}.command", "sleep 10"), [typed(f"{C0}.command", "array", "string")],
                 None, id="string-where-an-array-goes/command"),
    pytest.param(put(f"{POD}.hostNetwork", "yes"),
                 [typed(f"{POD}.hostNetwork", "boolean", "string")], None,
                 id="string-where-a-boolean-goes/hostNetwork"),
    pytest.param(put(f"{RJ}.replicas", "2"), [typed(f"{RJ}.replicas", "integer", "string")],
                 None, id="string-where-an-integer-goes/replicas-once-not-twice"),
    pytest.param(put(f"{JOB}.parallelism", 1.5),
                 [typed(f"{JOB}.parallelism", "int32", "float64")], None,
                 id="fraction-against-the-int32-format/parallelism"),
    pytest.param(put(f"{POD}.terminationGracePeriodSeconds", True),
                 [typed(f"{POD}.terminationGracePeriodSeconds", "int64", "")], None,
                 id="bool-against-the-int64-format/terminationGracePeriodSeconds"),
    pytest.param(put("spec.coordinator", {"replicatedJob": "leader", "jobIndex": 1.5}),
                 [typed("spec.coordinator.jobIndex", "integer", "number")], None,
                 id="fraction-where-an-integer-without-format-goes/jobIndex"),
    pytest.param(chain(put(f"{JOB}.parallelism", 2.0), put(f"{JOB}.completions", 2.0),
                       put(f"{C0}.ports", [{"containerPort": 80.0}]),
                       put(f"{POD}.terminationGracePeriodSeconds", 30.0),
                       put(f"{C0}.command", 7)),
                 [typed(f"{C0}.command", "array", "integer")], None,
                 id="integral-number-is-an-integer/only-command-refused"),
    pytest.param(put(f"{C0}.ports", [{"containerPort": "80"}]),
                 [typed(f"{C0}.ports[0].containerPort", "integer", "string")], None,
                 id="string-where-an-integer-goes/containerPort"),
    pytest.param(put(f"{C0}.resources", {"limits": {"cpu": True}}),
                 # On create the webhook's Go decoding refuses it first (crd.quantity_errors).
                 [(f"{C0}.resources.limits.cpu", ERR_FORMAT)],
                 int_or_string(f"{C0}.resources.limits.cpu", "boolean"),
                 id="quantity-given-a-bool/webhook-on-create-schema-on-update"),
    pytest.param(chain(put(f"{C0}.livenessProbe", {"httpGet": {"port": 8080}}),
                       put(f"{C0}.readinessProbe", {"httpGet": {"port": "http"}}),
                       put(f"{C0}.startupProbe", {"httpGet": {"port": True}})),
                 int_or_string(f"{C0}.startupProbe.httpGet.port", "boolean"), None,
                 id="int-or-string/int-and-string-fine-bool-refused"),
    pytest.param(put(f"{C0}.env", {}), [typed(f"{C0}.env", "array", "object")], None,
                 id="object-where-an-array-goes/env"),
    pytest.param(put(f"{JOB}.template.metadata", {"labels": []}),
                 [typed(f"{JOB}.template.metadata.labels", "object", "array")], None,
                 id="array-where-a-map-goes/pod-labels"),
    pytest.param(put(f"{POD}.nodeSelector", {"zone": 1}),
                 [typed(f"{POD}.nodeSelector.zone", "string", "integer")], None,
                 id="map-value-of-the-wrong-type/nodeSelector"),
    pytest.param(chain(put(f"{RJ}.replicas", None), put(f"{POD}.hostNetwork", None),
                       put(f"{JOB}.template.metadata", {"labels": {"a": None}}),
                       put(f"{C0}.resources", None), put(f"{C0}.command", ["sleep", None])),
                 [typed(f"{C0}.command[1]", "string", "null")], None,
                 id="null/property-and-map-value-pruned-list-item-refused"),
    pytest.param(put(f"{C0}.env", [None]), [typed(f"{C0}.env[0]", "object", "null")], None,
                 id="null/list-map-item"),
    pytest.param(put(f"{POD}.initContainers",
                     [{"name": "init", "securityContext": {"runAsUser": "0"}}]),
                 [typed(f"{POD}.initContainers[0].securityContext.runAsUser", "integer",
                        "string")], None,
                 id="deep/initContainers-securityContext"),
    pytest.param(put(f"{POD}.volumes", [{"name": "v", "configMap": {
                     "name": "cm", "defaultMode": True, "items": [{"key": "k", "path": "p",
                                                                   "mode": "0644"}]}}]),
                 [typed(f"{POD}.volumes[0].configMap.defaultMode", "int32", ""),
                  typed(f"{POD}.volumes[0].configMap.items[0].mode", "integer", "string")],
                 None, id="deep/volumes-configMap"),
    pytest.param(put(f"{POD}.volumes", [{"name": "v", "projected": {"sources": [
                     {"serviceAccountToken": {"path": "t", "expirationSeconds": {}}}]}}]),
                 [typed(f"{POD}.volumes[0].projected.sources[0].serviceAccountToken"
                        ".expirationSeconds", "int64", "")], None,
                 id="deep/volumes-projected-int64"),
    pytest.param(put(f"{POD}.securityContext", {"supplementalGroups": ["1", 1.5, 2.0]}),
                 [typed(f"{POD}.securityContext.supplementalGroups[0]", "integer", "string"),
                  typed(f"{POD}.securityContext.supplementalGroups[1]", "int64", "float64")],
                 None, id="list-items/int64-supplementalGroups"),
    pytest.param(put("spec.volumeClaimPolicies", [{"templates": [{
                     "metadata": {"name": "data"}, "spec": {},
                     "status": {"conditions": [{"type": "Resizing", "status": "True",
                                                "lastTransitionTime": 5}]}}]}]),
                 [typed("spec.volumeClaimPolicies[0].templates[0].status.conditions[0]"
                        ".lastTransitionTime", "date-time", "int64")], None,
                 id="number-against-the-date-time-format/pvc-template-status"),
    pytest.param(put("spec.network", []), [typed("spec.network", "object", "array")], None,
                 id="array-where-an-object-goes/network"),
]


@pytest.mark.parametrize(("mutate", "create", "update"), ROWS)
def test_create_reports_each_wrong_type(mutate: Any, create: list[tuple[str, str]],
                                        update: list[tuple[str, str]] | None) -> None:
    js = jobset()
    mutate(js)
    got = [(e.field, e.message) for e in validate_create(js)]
    blocked = [CEL_SKIPPED] if any(f != "<nil>" and "must be of type" in m
                                   for f, m in create) else []
    assert got == create + blocked


@pytest.mark.parametrize(("mutate", "create", "update"), ROWS)
def test_update_reports_each_wrong_type(mutate: Any, create: list[tuple[str, str]],
                                        update: list[tuple[str, str]] | None) -> None:
    # No mutating webhook on update: the schema alone judges the new object.
    old = default_jobset(jobset())
    new = copy.deepcopy(old)
    mutate(new)
    got = [(e.field, e.message) for e in validate_update(new, old)]
    assert got == (update or create) + [CEL_SKIPPED]


def test_a_type_error_keeps_cel_rules_from_running() -> None:
    # InOrder startup with dependsOn breaks a CEL rule; with a type error it is not evaluated.
    js = jobset(startupPolicy={"startupPolicyOrder": "InOrder"})
    put(f"{RJ}.replicas", "2")(js)
    put("spec.replicatedJobs[1].dependsOn", [{"name": "leader", "status": "Ready"}])(js)
    got = [(e.field, e.message) for e in validate_create(js)]
    assert got == [typed(f"{RJ}.replicas", "integer", "string"), CEL_SKIPPED]


def test_status_is_not_type_checked() -> None:
    # The status subresource: a create drops status, an update keeps the stored one.
    js = jobset()
    js["status"] = {"restarts": "many", "conditions": {}}
    assert validate_create(js) == []
