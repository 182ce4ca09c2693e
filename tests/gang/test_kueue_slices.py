"""Kueue's multi-layer slice topology annotation in the pod sets' topology request.

Upstream: kueue pkg/controller/jobframework/tas.go, podSetTopologyRequestBuilder.Build. With the
TASMultiLayerTopology gate (Beta, on by default since Kueue 0.19, pkg/features/kube_features.go)
the annotation kueue.x-k8s.io/podset-slice-required-topology-constraints is decoded with Go's
encoding/json into PodsetSliceRequiredTopologyConstraints, replacing the two-level slice pair;
a decoding error, or fewer than 1 or more than 3 layers, fails PodSets.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from google.protobuf import json_format

from decider.contract.gang import pod_sets_response
from decider.core.errors import InvalidInput
from decider.core.gang import pod_sets
from decider_api.v1 import decider_pb2 as pb

P = "kueue.x-k8s.io/podset-"
C = P + "slice-required-topology-constraints"
SUB = {"podIndexLabel": "batch.kubernetes.io/job-completion-index",
       "subGroupIndexLabel": "jobset.sigs.k8s.io/job-index", "subGroupCount": 2}
JOB_ONLY = {"podIndexLabel": "batch.kubernetes.io/job-completion-index"}


def jobset(annotations: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": "js", "namespace": "default", "uid": "u"},
            "spec": {"replicatedJobs": [{
                "name": "workers", "replicas": 2,
                "template": {"spec": {"parallelism": 8, "completions": 8, "template": {
                    "metadata": {"annotations": annotations},
                    "spec": {"containers": [{"name": "c", "image": "i"}]}}}}}]}}


def job(annotations: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
            "spec": {"parallelism": 4, "template": {
                "metadata": {"annotations": annotations},
                "spec": {"containers": [{"name": "c", "image": "i"}]}}}}


def layers(*pairs: tuple[str, int]) -> list[dict[str, Any]]:
    return [{"topology": t, "size": s} for t, s in pairs]


@pytest.mark.parametrize("obj,expected", [
    (jobset({P + "required-topology": "block", C: '[{"topology":"rack","size":8}]'}),
     {"required": "block", **SUB,
      "podsetSliceRequiredTopologyConstraints": layers(("rack", 8))}),
    (jobset({C: '[{"topology":"rack","size":8},{"topology":"host","size":4}]'}),
     {**SUB, "podsetSliceRequiredTopologyConstraints": layers(("rack", 8), ("host", 4))}),
    (jobset({C: '[{"topology":"rack","size":8}]', P + "slice-required-topology": "block",
             P + "slice-size": "not-a-number"}),
     {**SUB, "podsetSliceRequiredTopologyConstraints": layers(("rack", 8))}),
    (jobset({C: '[{"Topology":"rack","SIZE":8,"extra":1}]'}),
     {**SUB, "podsetSliceRequiredTopologyConstraints": layers(("rack", 8))}),
    (jobset({C: '[{"size":2,"size":4,"topology":"rack","topology":null}]'}),
     {**SUB, "podsetSliceRequiredTopologyConstraints": layers(("rack", 4))}),
    (jobset({C: '[null]'}),
     {**SUB, "podsetSliceRequiredTopologyConstraints": layers(("", 0))}),
    (job({C: '[{"topology":"rack","size":2}]'}),
     {**JOB_ONLY, "podsetSliceRequiredTopologyConstraints": layers(("rack", 2))}),
], ids=["tas.Build-multi-layer-beside-required", "tas.Build-multi-layer-alone",
        "tas.Build-multi-layer-replaces-two-level-pair-unparsed",
        "encoding-json-case-insensitive-keys-unknown-ignored",
        "encoding-json-last-duplicate-wins-null-keeps", "encoding-json-null-layer-zero-value",
        "job_controller.PodSets-multi-layer"])
def test_multi_layer_constraints(obj, expected) -> None:
    info = pod_sets(obj)[0]
    assert info.topology_request == expected


@pytest.mark.parametrize("text,message", [
    ("[]", "topology constraints must contain between 1 and 3 entries: got 0"),
    ("null", "topology constraints must contain between 1 and 3 entries: got 0"),
    ('[{"topology":"a","size":8},{"topology":"b","size":4},{"topology":"c","size":2},'
     '{"topology":"d","size":1}]',
     "topology constraints must contain between 1 and 3 entries: got 4"),
    ("rack", "failed to parse multi-layer topology constraints annotation"),
    ('{"topology":"rack","size":8}', "cannot unmarshal object into Go value"),
    ('[{"topology":"rack","size":8.0}]', "cannot unmarshal number 8.0"),
    ('[{"topology":"rack","size":"8"}]', "cannot unmarshal string"),
    ('[{"topology":"rack","size":2147483648}]', "of type int32"),
    ('[{"topology":3,"size":8}]', "cannot unmarshal number into Go struct field"),
    ('[{"topology":"rack","size":NaN}]', "failed to parse"),
], ids=["tas.Build-no-layers", "tas.Build-null-is-no-layers", "tas.Build-at-most-3-layers",
        "tas.Build-not-json", "encoding-json-object-is-not-a-slice",
        "encoding-json-int32-refuses-fractions", "encoding-json-int32-refuses-strings",
        "encoding-json-int32-overflow", "encoding-json-topology-is-a-string",
        "encoding-json-no-nan"])
def test_refused_as_kueue_refuses(text, message) -> None:
    with pytest.raises(InvalidInput) as exc:
        pod_sets(jobset({C: text}))
    err = exc.value.errors[0]
    assert err.field == f"spec.replicatedJobs[0].template.spec.template.metadata.annotations[{C}]"
    assert message in err.message


def test_the_rpc_answer_carries_the_layers() -> None:
    req = pb.PodSetsRequest(object_json=json.dumps(jobset(
        {P + "required-topology": "block",
         C: '[{"topology":"zone","size":16},{"topology":"rack","size":8}]'})))
    ps = pod_sets_response(req).pod_sets[0]
    request = ps.topology_request
    assert request.required == "block"
    assert not request.HasField("pod_set_slice_size")
    assert [(c.topology, c.size) for c in request.podset_slice_required_topology_constraints] \
        == [("zone", 16), ("rack", 8)]
    assert list(ps.warnings) == []
    # Kueue's JSON name, as a client reading the answer as JSON sees it.
    assert json_format.MessageToDict(request)["podsetSliceRequiredTopologyConstraints"] == [
        {"topology": "zone", "size": 16}, {"topology": "rack", "size": 8}]
