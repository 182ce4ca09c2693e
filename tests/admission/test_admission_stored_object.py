"""The object the API server stores for a create: the mutating webhook (controller-runtime's
defaulterForType) decodes the JobSet into Go types, defaults it and patches in the difference
with json.Marshal of the result, its removals dropped. So fields without `omitempty` appear
with Go's zero value, structs as `{}`, and every resource.Quantity in canonical form."""

from __future__ import annotations

from typing import Any

import pytest

from decider.core.admission import default_jobset, validate_create, validate_update
from decider.core.admission.quantity import ERR_FORMAT, ERR_SUFFIX

from .jobsets import jobset, pod_spec, put

POD = "spec.replicatedJobs[0].template.spec.template.spec"
C0 = f"{POD}.containers[0]"


def at(obj: Any, path: str) -> Any:
    for part in path.replace("]", "").split("."):
        name, *indices = part.split("[")
        obj = obj[name]
        for i in indices:
            obj = obj[int(i)]
    return obj


@pytest.mark.parametrize(
    ("mutate", "path", "stored"),
    [
        # Quantity.MarshalJSON writes a string; a JSON number 4 is stored as "4".
        pytest.param(put(f"{C0}.resources", {"limits": {"google.com/tpu": 4}}),
                     f"{C0}.resources.limits", {"google.com/tpu": "4"},
                     id="Quantity.MarshalJSON/number-4-stored-as-string"),
        pytest.param(put(f"{C0}.resources", {"requests": {"cpu": 1.5, "memory": "1.5Gi"}}),
                     f"{C0}.resources.requests", {"cpu": "1500m", "memory": "1536Mi"},
                     id="Quantity.MarshalJSON/canonical-form"),
        pytest.param(put(f"{POD}.volumes", [{"name": "d", "emptyDir": {"sizeLimit": 1024**3}}]),
                     f"{POD}.volumes[0].emptyDir.sizeLimit", "1073741824",
                     id="Quantity.MarshalJSON/decimal-number-keeps-decimal-form"),
        pytest.param(put(f"{POD}.overhead", {"cpu": "1000m"}), f"{POD}.overhead", {"cpu": "1"},
                     id="Quantity.MarshalJSON/pod-overhead"),
        pytest.param(put("spec.volumeClaimPolicies", [{"templates": [
            {"metadata": {"name": "data"},
             "spec": {"resources": {"requests": {"storage": "10240Mi"}}}}]}]),
                     "spec.volumeClaimPolicies[0].templates[0].spec.resources.requests",
                     {"storage": "10Gi"}, id="Quantity.MarshalJSON/volume-claim-template"),
        # Go zero values of fields without omitempty.
        pytest.param(put("spec.replicatedJobs[0].template.spec.podFailurePolicy",
                         {"rules": [{"action": "Ignore",
                                     "onPodConditions": [{"type": "DisruptionTarget"}]}]}),
                     "spec.replicatedJobs[0].template.spec.podFailurePolicy.rules[0]"
                     ".onPodConditions[0]",
                     {"type": "DisruptionTarget", "status": ""},
                     id="json.Marshal/onPodConditions-status-without-omitempty"),
        pytest.param(put(f"{C0}.env", [{"name": "A", "valueFrom": {"resourceFieldRef": {
            "resource": "limits.cpu"}}}]),
                     f"{C0}.env[0].valueFrom.resourceFieldRef",
                     {"resource": "limits.cpu", "divisor": "0"},
                     id="json.Marshal/non-pointer-quantity-divisor-zero"),
        # encoding/json writes a struct even when it is empty and tagged omitempty.
        pytest.param(lambda js: None, f"{C0}.resources", {},
                     id="json.Marshal/container-resources-struct"),
        pytest.param(lambda js: None, "spec.replicatedJobs[0].template.metadata", {},
                     id="json.Marshal/job-template-metadata-struct"),
        pytest.param(lambda js: None, "spec.replicatedJobs[0].template.spec.template.metadata", {},
                     id="json.Marshal/pod-template-metadata-struct"),
        # controller-runtime drops the patch's removals: omitempty zero values stay.
        pytest.param(put("spec.replicatedJobs[1].replicas", 0), "spec.replicatedJobs[1].replicas",
                     0, id="defaulterForType/removals-dropped-replicas-zero-kept"),
        pytest.param(put("spec.failurePolicy", {"maxRestarts": 0}),
                     "spec.failurePolicy.maxRestarts", 0,
                     id="defaulterForType/removals-dropped-maxRestarts-zero-kept"),
    ],
)
def test_stored_object(mutate: Any, path: str, stored: Any) -> None:
    js = jobset()
    if "volumeClaimPolicies" in path:
        pod_spec(js, 0)["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": "/d"}]
    mutate(js)
    assert validate_create(js) == []
    out = default_jobset(js)
    assert at(out, path) == stored
    assert default_jobset(out) == out


@pytest.mark.parametrize(
    ("value", "message"),
    [
        pytest.param("four", ERR_FORMAT, id="ParseQuantity/ErrFormatWrong"),
        pytest.param("4x", ERR_FORMAT, id="parseQuantityString/trailing-junk"),
        pytest.param("4ki", ERR_SUFFIX, id="ParseQuantity/ErrSuffix"),
        pytest.param(True, ERR_FORMAT, id="UnmarshalJSON/boolean"),
    ],
)
def test_webhook_decoding_refuses_a_quantity(value: Any, message: str) -> None:
    # The webhook answers its decoding error (no field path upstream; named here).
    js = jobset()
    put(f"{C0}.resources", {"limits": {"cpu": value}})(js)
    errors = validate_create(js)
    assert [(e.field, e.message) for e in errors] == [(f"{C0}.resources.limits.cpu", message)]


QUANTITY_PATTERN = (r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
                    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$")


@pytest.mark.parametrize(
    ("value", "errors"),
    [
        pytest.param(4, [], id="crd/integer-accepted-as-is"),
        pytest.param("1.5Gi", [], id="crd/string-matching-the-pattern"),
        pytest.param("four", [("{p}", "{p} in body should match '" + QUANTITY_PATTERN + "'")],
                     id="crd/string-against-the-quantity-pattern"),
        # x-kubernetes-int-or-string: the types integer,string and the CRD's anyOf.
        pytest.param(1.5, [
            ("{p}", 'Invalid value: "number": {p} in body must be of type integer,string: '
                    '"number"'),
            ("<nil>", 'Invalid value: "": "{p}" must validate at least one schema (anyOf)'),
            ("{p}", 'Invalid value: "number": {p} in body must be of type integer: "number"'),
            ("<nil>", "Invalid value: null: some validation rules were not checked because the "
                      "object was invalid; correct the existing errors to complete validation"),
        ], id="crd/int-or-string-type"),
    ],
)
def test_update_checks_quantities_against_the_crd(value: Any,
                                                  errors: list[tuple[str, str]]) -> None:
    # No mutating webhook on update: the CRD's schema alone judges a quantity.
    old = default_jobset(jobset(suspend=True))
    new = default_jobset(jobset(suspend=True))
    path = f"{C0}.resources.limits.cpu"
    put(path, value)(new)
    put(path, value)(old)
    got = [(e.field, e.message) for e in validate_update(new, old)]
    assert got == [(f.format(p=path), m.format(p=path)) for f, m in errors]
