"""default_jobset: CRD structural defaults, then the mutating webhook's (spec §3.1)."""

from __future__ import annotations

import copy

import pytest

from decider.core.admission import default_jobset

from .jobsets import job_spec, jobset, pod_spec, put


def test_webhook_and_crd_defaults():
    js = jobset()
    js["spec"]["failurePolicy"] = {
        "rules": [{"action": "FailJobSet"}, {"action": "FailJobSet", "name": "keep"}]
    }
    js["spec"]["volumeClaimPolicies"] = [
        {"templates": []},
        {"templates": [], "retentionPolicy": {}},
    ]
    pod_spec(js, 0)["containers"][0]["ports"] = [{"containerPort": 80}]
    before = copy.deepcopy(js)
    out = default_jobset(js)
    assert js == before, "the input must not be mutated"
    spec = out["spec"]
    assert spec["successPolicy"] == {"operator": "All"}
    assert spec["startupPolicy"] == {"startupPolicyOrder": "AnyOrder"}
    assert spec["network"] == {"enableDNSHostnames": True, "publishNotReadyAddresses": True}
    assert spec["failurePolicy"]["restartStrategy"] == "Recreate"
    assert [r["name"] for r in spec["failurePolicy"]["rules"]] == ["failurePolicyRule0", "keep"]
    assert [p["retentionPolicy"] for p in spec["volumeClaimPolicies"]] == [
        {"whenDeleted": "Delete"},
        {"whenDeleted": "Delete"},
    ]
    for i, rj in enumerate(spec["replicatedJobs"]):
        assert rj["groupName"] == "default"
        assert job_spec(out, i)["completionMode"] == "Indexed"
        assert pod_spec(out, i)["restartPolicy"] == "OnFailure"
    assert spec["replicatedJobs"][1]["replicas"] == 2
    assert pod_spec(out, 0)["containers"][0]["ports"] == [{"containerPort": 80, "protocol": "TCP"}]


@pytest.mark.parametrize(
    ("mutate", "path", "kept"),
    [
        pytest.param(
            put("spec.replicatedJobs[0].replicas", 0),
            ("replicatedJobs", 0, "replicas"),
            0,
            id="crd/replicas-zero-kept",
        ),
        pytest.param(
            put("spec.network", {"enableDNSHostnames": False}),
            ("network", "enableDNSHostnames"),
            False,
            id="webhook/dns-false-kept",
        ),
        pytest.param(
            put("spec.replicatedJobs[0].template.spec.completionMode", "NonIndexed"),
            ("replicatedJobs", 0, "template", "spec", "completionMode"),
            "NonIndexed",
            id="webhook/completionMode-kept",
        ),
        pytest.param(
            put("spec.replicatedJobs[0].template.spec.template.spec.restartPolicy", "Never"),
            ("replicatedJobs", 0, "template", "spec", "template", "spec", "restartPolicy"),
            "Never",
            id="webhook/restartPolicy-kept",
        ),
    ],
)
def test_set_values_are_kept(mutate, path, kept):
    js = jobset()
    mutate(js)
    node = default_jobset(js)["spec"]
    for step in path:
        node = node[step]
    assert node == kept


def test_nulls_are_pruned_then_defaulted():
    js = jobset()
    js["spec"]["successPolicy"] = None
    js["spec"]["replicatedJobs"][0]["replicas"] = None
    out = default_jobset(js)
    assert out["spec"]["successPolicy"] == {"operator": "All"}
    assert out["spec"]["replicatedJobs"][0]["replicas"] == 1


def test_idempotent():
    once = default_jobset(jobset())
    assert default_jobset(once) == once


@pytest.mark.parametrize(
    "junk",
    [
        None,
        3,
        "x",
        [],
        {"spec": []},
        {"spec": {"replicatedJobs": 1}},
        {"spec": {"replicatedJobs": [1, None, {"template": []}]}},
    ],
)
def test_junk_is_copied_not_crashed_on(junk):
    out = default_jobset(junk)
    assert out == junk or isinstance(out, dict)
