"""Child Job construction: upstream constructJob / labelAndAnnotateObject."""

from __future__ import annotations

import hashlib

import pytest

from decider.core import constants as c
from support.builders import UID, job, jobset, rjob, run, service, types


def _created(plan, name):
    return next(a.object for a in plan.actions if a.type == "CreateJob" and a.name == name)


def test_names_follow_jobset_rjob_index() -> None:
    plan = run(jobset(rjob("leader", 1), rjob("workers", 3)))
    assert [n for t, n in types(plan) if t == "CreateJob"] == [
        "js-leader-0", "js-workers-0", "js-workers-1", "js-workers-2"]


@pytest.mark.parametrize("key,value", [
    (c.JOBSET_NAME, "js"),
    (c.JOBSET_UID, UID),
    (c.REPLICATED_JOB_NAME, "workers"),
    (c.REPLICATED_JOB_REPLICAS, "3"),
    (c.GLOBAL_REPLICAS, "5"),
    (c.JOB_INDEX, "1"),
    (c.JOB_GLOBAL_INDEX, "3"),
    (c.JOB_KEY, hashlib.sha1(b"ns1/js-workers-1").hexdigest()),
    (c.GROUP_NAME, "default"),
    (c.GROUP_REPLICAS, "4"),
    (c.JOB_GROUP_INDEX, "2"),
    (c.RESTART_ATTEMPT, "0"),
], ids=lambda v: v if isinstance(v, str) and v.startswith("jobset") else None)
def test_labels_and_annotations_on_job_and_pod(key: str, value: str) -> None:
    js = jobset(rjob("leader", 1), rjob("driver", 1, group="g2"), rjob("workers", 3),
                namespace="ns1")
    # leader(1, default) + driver(1, g2) precede workers(3, default):
    # global index 2+1, group index 1+1, group replicas 1+3.
    obj = _created(run(js), "js-workers-1")
    pod_meta = obj["spec"]["template"]["metadata"]
    for where in (obj["metadata"]["labels"], obj["metadata"]["annotations"],
                  pod_meta["labels"], pod_meta["annotations"]):
        assert where[key] == value


def test_template_metadata_is_kept_and_ours_wins() -> None:
    js = jobset(rjob("w", 1, job_meta={"labels": {"team": "a", c.JOBSET_NAME: "spoof"},
                                       "annotations": {"note": "x"}},
                     pod={"metadata": {"labels": {"app": "t"}},
                          "spec": {"containers": [{"name": "m"}]}}))
    obj = _created(run(js), "js-w-0")
    assert obj["metadata"]["labels"]["team"] == "a"
    assert obj["metadata"]["labels"][c.JOBSET_NAME] == "js"
    assert obj["metadata"]["annotations"]["note"] == "x"
    assert obj["spec"]["template"]["metadata"]["labels"]["app"] == "t"


def test_owner_reference_subdomain_suspend_and_webhook_defaults() -> None:
    js = jobset(rjob("w", 1, pod={"spec": {"containers": [{"name": "m"}]}}),
                network={"subdomain": "net"})
    obj = _created(run(js), "js-w-0")
    assert obj["metadata"]["ownerReferences"] == [{
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": "js", "uid": UID,
        "controller": True, "blockOwnerDeletion": True}]
    assert obj["spec"]["template"]["spec"]["subdomain"] == "net"
    assert obj["spec"]["suspend"] is False
    assert obj["spec"]["completionMode"] == "Indexed"
    assert obj["spec"]["template"]["spec"]["restartPolicy"] == "OnFailure"


def test_dns_hostnames_disabled_sets_no_subdomain_and_no_service() -> None:
    plan = run(jobset(rjob("w", 1), network={"enableDNSHostnames": False}))
    assert "subdomain" not in _created(plan, "js-w-0")["spec"]["template"]["spec"]
    assert ("CreateService", "js") not in types(plan)


def test_coordinator_label_and_annotation() -> None:
    js = jobset(rjob("leader", 1, parallelism=2, completions=2), rjob("w", 2),
                coordinator={"replicatedJob": "leader", "jobIndex": 0, "podIndex": 1},
                network={"subdomain": "sd"})
    obj = _created(run(js), "js-w-1")
    assert obj["metadata"]["labels"][c.COORDINATOR] == "js-leader-0-1.sd"
    assert obj["spec"]["template"]["metadata"]["annotations"][c.COORDINATOR] == "js-leader-0-1.sd"


@pytest.mark.parametrize("js_ann,rj_ann,topology,strategy", [
    ({c.EXCLUSIVE_TOPOLOGY: "rack"}, {}, "rack", False),
    ({c.EXCLUSIVE_TOPOLOGY: "rack"}, {c.EXCLUSIVE_TOPOLOGY: "pool"}, "pool", False),
    ({c.EXCLUSIVE_TOPOLOGY: "rack", c.NODE_SELECTOR_STRATEGY: "true"}, {}, "rack", True),
], ids=["exclusive/jobset-level", "exclusive/rjob-overrides", "exclusive/node-selector-strategy"])
def test_exclusive_placement(js_ann, rj_ann, topology, strategy) -> None:
    js = jobset(rjob("w", 1, job_meta={"annotations": rj_ann}))
    js["metadata"]["annotations"] = js_ann
    obj = _created(run(js), "js-w-0")
    assert obj["metadata"]["annotations"][c.EXCLUSIVE_TOPOLOGY] == topology
    assert obj["spec"]["template"]["metadata"]["annotations"][c.EXCLUSIVE_TOPOLOGY] == topology
    pod_spec = obj["spec"]["template"]["spec"]
    if strategy:
        assert pod_spec["nodeSelector"][c.NAMESPACED_JOB] == "default_js-w-0"
        assert {"key": c.NO_SCHEDULE_TAINT, "operator": "Exists",
                "effect": "NoSchedule"} in pod_spec["tolerations"]
    else:
        assert "nodeSelector" not in pod_spec


def test_only_missing_jobs_are_created() -> None:
    plan = run(jobset(rjob("w", 3)), [job("w", 0), job("w", 2, state="succeeded")],
               objects=[service()])
    assert [n for t, n in types(plan) if t == "CreateJob"] == ["js-w-1"]


def test_jobs_of_another_owner_do_not_count() -> None:
    # Not children (upstream lists Jobs by controller owner UID); the name one holds cannot be
    # created (the create meets AlreadyExists: tests/upstream/test_job_name_conflict.py).
    plan = run(jobset(rjob("w", 2)), [job("w", 0, owner="someone-else")], objects=[service()])
    assert [n for t, n in types(plan) if t == "CreateJob"] == ["js-w-1"]


@pytest.mark.parametrize("spec,expected", [
    ({}, {"clusterIP": "None", "selector": {c.JOBSET_NAME: "js"},
          "publishNotReadyAddresses": True}),
    ({"network": {"publishNotReadyAddresses": False, "subdomain": "x"}},
     {"clusterIP": "None", "selector": {c.JOBSET_NAME: "js"},
      "publishNotReadyAddresses": False}),
], ids=["service/defaults", "service/publish-not-ready-false"])
def test_headless_service(spec, expected) -> None:
    plan = run(jobset(rjob("w", 1), **spec))
    svc = next(a.object for a in plan.actions if a.type == "CreateService")
    assert svc["spec"] == expected
    assert svc["metadata"]["name"] == spec.get("network", {}).get("subdomain", "js")


def test_existing_service_is_not_recreated() -> None:
    plan = run(jobset(rjob("w", 1)), objects=[service("js")])
    assert "CreateService" not in [t for t, _ in types(plan)]


def test_created_suspended_when_jobset_suspended() -> None:
    obj = _created(run(jobset(rjob("w", 1), suspend=True)), "js-w-0")
    assert obj["spec"]["suspend"] is True


def test_restart_attempt_label_follows_status_restarts() -> None:
    js = jobset(rjob("w", 1), status={"restarts": 2})
    obj = _created(run(js), "js-w-0")
    assert obj["metadata"]["labels"][c.RESTART_ATTEMPT] == "2"
