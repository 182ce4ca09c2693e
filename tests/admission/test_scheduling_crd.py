"""spec.scheduling's schema: one source (tools/crd/scheduling.yaml) for the deploy CRD and the
admission data generated from it, and what strict decoding makes of it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from decider.core.admission import crd

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import gen_crd_schema  # noqa: E402

_IGNORED = ("description", "x-kubernetes-validations")


def _shape(node: Any) -> Any:
    """The structural schema only: no descriptions, rules or generator hints."""
    if isinstance(node, dict):
        return {k: _shape(v) for k, v in node.items()
                if k not in _IGNORED and not k.startswith("x-decider")}
    if isinstance(node, list):
        return [_shape(v) for v in node]
    return node


def _deploy_scheduling() -> dict[str, Any]:
    doc = yaml.safe_load((ROOT / "deploy/crd/jobset.x-k8s.io_jobsets.yaml").read_text())
    spec = doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    return spec["properties"]["scheduling"]


def test_the_deploy_crd_carries_the_overlay_schema() -> None:
    overlay = gen_crd_schema.load_overlay(str(ROOT / "tools/crd/scheduling.yaml"))
    assert _shape(_deploy_scheduling()) == _shape(overlay)


def test_the_generated_admission_data_knows_every_field_of_the_overlay() -> None:
    node = crd.SPEC.props["scheduling"]
    assert set(node.props) == {"schedulingPolicy", "schedulingConstraints", "disruptionMode",
                               "replicatedJobs"}
    entry = node.props["replicatedJobs"].child
    assert entry is not None and entry.required == ("targetReplicatedJobs",)
    job = entry.props["job"]
    assert set(job.props) == {"schedulingPolicy", "schedulingConstraints", "disruptionMode",
                              "resourceClaims"}
    assert set(node.props["schedulingPolicy"].props["gang"].props) == {"minGroupCount"}
    assert set(job.props["schedulingPolicy"].props["gang"].props) == {"minCount"}


def _jobset(scheduling: Any) -> dict[str, Any]:
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": "js"}, "spec": {"scheduling": scheduling}}


@pytest.mark.parametrize(("scheduling", "unknown"), [
    pytest.param({"schedulingPolicy": {"gang": {"minCount": 3}}},
                 ["spec.scheduling.schedulingPolicy.gang.minCount"],
                 id="draft/top-level-minCount-is-gone"),
    pytest.param({"replicatedJobs": [{"targetReplicatedJobs": ["a"],
                                      "schedulingPolicy": {"gang": {"minCount": 2}}}]},
                 ["spec.scheduling.replicatedJobs[0].schedulingPolicy.gang.minCount"],
                 id="draft/entry-minCount-is-gone"),
    pytest.param({"replicatedJobs": [{"targetReplicatedJobs": ["a"], "resourceClaims": []}]},
                 ["spec.scheduling.replicatedJobs[0].resourceClaims"],
                 id="draft/entry-resourceClaims-moved-under-job"),
    pytest.param({"schedulingPolicy": {"basic": {"x": 1}}},
                 ["spec.scheduling.schedulingPolicy.basic.x"], id="empty-structs-know-nothing"),
    pytest.param({"replicatedJobs": [{"targetReplicatedJobs": ["a"], "job": {
        "schedulingPolicy": {"gang": {"minCount": 2}}, "resourceClaims": [
            {"name": "c", "resourceClaimTemplateName": "t"}]}}],
        "schedulingConstraints": {"topology": [{"key": "zone"}]},
        "disruptionMode": {"all": {}}}, [], id="newest-shape-is-known"),
])
def test_strict_decoding_of_scheduling(scheduling: Any, unknown: list[str]) -> None:
    assert crd.unknown_fields(_jobset(scheduling)) == unknown
