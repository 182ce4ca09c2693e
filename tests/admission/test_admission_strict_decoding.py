"""Strict decoding (field validation Strict, kubectl's default): apiextensions-apiserver's
schemaCoercingDecoder reports every field its structural pruning would drop
(pruning.PruneWithOptions, paths sorted) after those of the root metadata
(objectmeta.GetObjectMetaWithOptions, in decoding order), as
`strict decoding error: unknown field "<path>"`, before admission looks at anything else."""

from __future__ import annotations

from typing import Any

import pytest

from decider.core.admission import validate_create, validate_update
from decider.core.admission.crd import unknown_fields

from .jobsets import chain, jobset, put

POD = "spec.replicatedJobs[0].template.spec.template"


def unknown(path: str) -> str:
    return f'strict decoding error: unknown field "{path}"'


@pytest.mark.parametrize(
    ("mutate", "paths"),
    [
        pytest.param(put("spec.foo", 1), ["spec.foo"], id="PruneWithOptions/spec-field"),
        pytest.param(put("foo", 1), ["foo"], id="PruneWithOptions/root-field"),
        pytest.param(put("spec.replicatedJobs[1].replica", 2), ["spec.replicatedJobs[1].replica"],
                     id="PruneWithOptions/list-item-field"),
        pytest.param(put(f"{POD}.spec.containers[0].imagee", "busybox"),
                     [f"{POD}.spec.containers[0].imagee"],
                     id="PruneWithOptions/pod-template-is-a-full-schema"),
        # The CRD's embedded ObjectMeta has only annotations, finalizers, labels, name and
        # namespace: the `creationTimestamp: null` of `kubectl create --dry-run -o yaml` is
        # unknown there, its null included (pruning runs before nulls are dropped).
        pytest.param(put(f"{POD}.metadata.creationTimestamp", None),
                     [f"{POD}.metadata.creationTimestamp"],
                     id="PruneWithOptions/embedded-metadata-has-five-fields-null-included"),
        pytest.param(put(f"{POD}.spec.containers[0].resources.limits", {"cpu": {"x": 1}}),
                     [f"{POD}.spec.containers[0].resources.limits.cpu.x"],
                     id="PruneWithOptions/map-values-follow-their-schema"),
        pytest.param(put("status.foo", 1), ["status.foo"], id="PruneWithOptions/status"),
        pytest.param(put("spec.replicatedJobs[0].replicas", [{"a": 1}]),
                     ["spec.replicatedJobs[0].replicas[0].a"],
                     id="PruneWithOptions/object-under-no-schema-all-unknown"),
        pytest.param(put("metadata.foo", "x"), ["metadata.foo"],
                     id="GetObjectMetaWithOptions/root-metadata"),
        pytest.param(put("metadata.ownerReferences",
                         [{"apiVersion": "v1", "kind": "X", "name": "x", "uid": "u", "bad": 1}]),
                     ["metadata.ownerReferences[0].bad"],
                     id="GetObjectMetaWithOptions/owner-reference-field"),
        pytest.param(put("metadata.managedFields", [{"manager": "m", "fieldsV1": {"f:x": {}}}]),
                     [], id="GetObjectMetaWithOptions/fieldsV1-is-raw-json"),
        pytest.param(chain(put("spec.zz", 1), put("spec.aa", 1), put("metadata.zz", 1),
                           put("metadata.aa", 1)),
                     ["metadata.zz", "metadata.aa", "spec.aa", "spec.zz"],
                     id="schemaCoercingDecoder/metadata-first-then-sorted"),
    ],
)
def test_unknown_fields(mutate: Any, paths: list[str]) -> None:
    js = jobset()
    mutate(js)
    assert unknown_fields(js) == paths
    errors = validate_create(js)
    if paths:
        # Nothing else is looked at: the API server answers the decoding error alone.
        assert [(e.field, e.message) for e in errors] == [(p, unknown(p)) for p in paths]
    else:
        assert errors == []


def test_known_fields_of_every_level_are_not_unknown() -> None:
    js = jobset()
    pod = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    pod["metadata"] = {"labels": {"a": "b"}, "annotations": {"c": "d"}}
    pod["spec"].update(
        nodeSelector={"k": "v"}, tolerations=[{"key": "k", "operator": "Exists"}],
        affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchExpressions": [{"key": "k", "operator": "Exists"}]},
             "topologyKey": "kubernetes.io/hostname"}]}},
        volumes=[{"name": "d", "emptyDir": {"sizeLimit": "1Gi"}}],
    )
    pod["spec"]["containers"][0].update(
        resources={"limits": {"google.com/tpu": 4}}, env=[{"name": "A", "value": "1"}],
        readinessProbe={"httpGet": {"path": "/", "port": 8080}})
    js["spec"]["volumeClaimPolicies"] = [{"templates": [{"metadata": {"name": "d"},
                                                         "spec": {"accessModes": ["RWO"]}}]}]
    assert unknown_fields(js) == []


def test_update_decodes_the_new_object_strictly() -> None:
    old = jobset()
    new = jobset()
    new["spec"]["suspend"] = True
    new["spec"]["replicatedJobs"][0]["template"]["spec"]["foo"] = 1
    path = "spec.replicatedJobs[0].template.spec.foo"
    assert [(e.field, e.message) for e in validate_update(new, old)] == [(path, unknown(path))]
