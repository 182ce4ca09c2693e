"""The headless Service and the volumeClaimPolicies' PVCs are looked up by name, as upstream does.

A `whenDeleted: Retain` PVC has no owner reference by design (spec/jobset.md §1.8), and a
Service of the JobSet's name may be someone else's. Decide must be sent both whoever holds them,
or it plans their creation on every pass and each pass spends a POST answered AlreadyExists
(against a client-side limit of 5 requests a second). Upstream creates each once.
"""

from __future__ import annotations

from typing import Any

import pytest

from shim.controller import Shim
from shim.expectations import Expectations
from shim.owned import BY_NAME_KINDS, named_children
from tests.shim.helpers import NS, Cluster, jobset, rjob, wait_for

pytestmark = pytest.mark.waits

PVCS = "/persistentvolumeclaims$"
SERVICES = "/services$"
# Someone else's controller reference: the Service is theirs, and must stay theirs.
OTHER_OWNER = [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "other",
                "uid": "other-uid", "controller": True}]


def _with_claim(body: dict[str, Any], retention: str, template: str = "ckpt") -> dict[str, Any]:
    """The JobSet with one volumeClaimPolicy whose template every container mounts."""
    body["spec"]["volumeClaimPolicies"] = [{
        "templates": [{"metadata": {"name": template},
                       "spec": {"accessModes": ["ReadWriteOnce"],
                                "resources": {"requests": {"storage": "1Gi"}}}}],
        "retentionPolicy": {"whenDeleted": retention},
    }]
    for rj in body["spec"]["replicatedJobs"]:
        for container in rj["template"]["spec"]["template"]["spec"]["containers"]:
            container["volumeMounts"] = [{"name": template, "mountPath": "/" + template}]
    return body


def _pvcs_rt(cluster: Cluster) -> Any:
    return cluster.store.resource_for("", "v1", "persistentvolumeclaims")


def _posts(cluster: Cluster, path: str) -> list[Any]:
    return cluster.kube.writes(path, "POST")


def _claims(job: dict[str, Any]) -> list[str]:
    volumes = job["spec"]["template"]["spec"].get("volumes") or []
    return [v["persistentVolumeClaim"]["claimName"] for v in volumes
            if "persistentVolumeClaim" in v]


def _cause_passes(cluster: Cluster, shim: Shim, job: str, times: int = 10) -> None:
    """Toggle a Job's ready count `times` times, each followed by at least one more pass."""
    for i in range(times):
        before = shim.stats.reconciles
        # Always a change (the simulator may have set it back meanwhile), so always an event.
        current = (cluster.store.try_get(cluster.jobs_rt, NS, job).get("status") or {})
        cluster.sim.set_ready(NS, job, 0 if current.get("ready") else 1)
        wait_for(lambda b=before: shim.stats.reconciles > b, what=f"pass after toggle {i}")


def test_a_foreign_service_and_a_retained_pvc_are_not_created_again_on_every_pass(
        cluster, shims):
    cluster.store.create(cluster.services_rt, NS, {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "p", "namespace": NS, "ownerReferences": OTHER_OWNER},
        "spec": {"clusterIP": "None", "selector": {"app": "other"}}})
    shim = shims.start()
    cluster.create_jobset(_with_claim(jobset("p", rjob("workers", 1)), "Retain"))
    wait_for(lambda: cluster.job_names("p-") == ["p-workers-0"], what="jobs created")
    pvc = wait_for(lambda: cluster.store.try_get(_pvcs_rt(cluster), NS, "ckpt-p"), what="pvc")
    # Retain: no owner at all, as upstream (the claim outlives the JobSet).
    assert not pvc["metadata"].get("ownerReferences")
    assert _claims(cluster.live_jobs("p-")[0]) == ["ckpt-p"]

    _cause_passes(cluster, shim, "p-workers-0")

    pvc_posts = _posts(cluster, PVCS)
    assert [r.code for r in pvc_posts] == [201], pvc_posts
    # The Service existed before the JobSet: never created, used as it is, not adopted.
    assert _posts(cluster, SERVICES) == []
    svc = cluster.store.try_get(cluster.services_rt, NS, "p")
    assert svc["metadata"]["ownerReferences"] == OTHER_OWNER
    assert svc["spec"]["selector"] == {"app": "other"}
    assert cluster.store.try_get(_pvcs_rt(cluster), NS, "ckpt-p")["metadata"]["uid"] == \
        pvc["metadata"]["uid"]
    assert all(reason not in ("ObjectConflict", "CreateConflict", "PlanRefused")
               for _, reason in cluster.events("p"))


def test_a_service_named_by_the_subdomain_is_looked_up_by_that_name(cluster, shims):
    cluster.store.create(cluster.services_rt, NS, {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "shared", "namespace": NS, "ownerReferences": OTHER_OWNER},
        "spec": {"clusterIP": "None", "selector": {"app": "other"}}})
    shim = shims.start()
    body = jobset("sd", rjob("workers", 1))
    body["spec"]["network"]["subdomain"] = "shared"
    cluster.create_jobset(body)
    wait_for(lambda: cluster.job_names("sd-") == ["sd-workers-0"], what="jobs created")
    _cause_passes(cluster, shim, "sd-workers-0", times=4)
    assert _posts(cluster, SERVICES) == []
    assert cluster.store.try_get(cluster.services_rt, NS, "sd") is None


def test_a_retained_pvc_of_a_previous_jobset_of_that_name_is_reused(cluster, shims):
    first = shims.start()
    cluster.create_jobset(_with_claim(jobset("r", rjob("workers", 1)), "Retain"))
    wait_for(lambda: cluster.job_names("r-") == ["r-workers-0"], what="jobs created")
    pvc = wait_for(lambda: cluster.store.try_get(_pvcs_rt(cluster), NS, "ckpt-r"), what="pvc")
    first_uid = cluster.jobset("r")["metadata"]["uid"]

    # The first JobSet is deleted with no shim running: a pass on a cache that has not seen
    # the deletion yet would create its Jobs again after the garbage collector took them, and
    # the fake collector (unlike the real one) never collects a child created after its owner
    # went. That race is not what this test is about.
    shims.running.remove(first)
    first.shutdown()
    first.decider.close()
    assert first.stats.refused_plans == 0
    cluster.store.delete(cluster.jobsets_rt, NS, "r", None)
    wait_for(lambda: cluster.jobset("r") is None and not cluster.jobs(prefix="r-"),
             what="jobset and its jobs gone")
    # Retain: the claim stays.
    assert cluster.store.try_get(_pvcs_rt(cluster), NS, "ckpt-r") is not None

    shim = shims.start()
    cluster.create_jobset(_with_claim(jobset("r", rjob("workers", 1)), "Retain"))
    wait_for(lambda: cluster.job_names("r-") == ["r-workers-0"], what="jobs created again")
    job = cluster.live_jobs("r-")[0]
    assert job["metadata"]["ownerReferences"][0]["uid"] != first_uid
    assert _claims(job) == ["ckpt-r"]
    _cause_passes(cluster, shim, "r-workers-0", times=4)

    again = cluster.store.try_get(_pvcs_rt(cluster), NS, "ckpt-r")
    assert again["metadata"]["uid"] == pvc["metadata"]["uid"]
    assert not again["metadata"].get("ownerReferences")  # reused, not adopted
    assert [r.code for r in _posts(cluster, PVCS)] == [201]


def test_a_delete_policy_pvc_is_created_once_and_owned(cluster, shims):
    shim = shims.start()
    cluster.create_jobset(_with_claim(jobset("d", rjob("workers", 1)), "Delete"))
    wait_for(lambda: cluster.job_names("d-") == ["d-workers-0"], what="jobs created")
    pvc = wait_for(lambda: cluster.store.try_get(_pvcs_rt(cluster), NS, "ckpt-d"), what="pvc")
    uid = cluster.jobset("d")["metadata"]["uid"]
    (ref,) = pvc["metadata"]["ownerReferences"]
    assert ref["kind"] == "JobSet" and ref["uid"] == uid and ref["controller"] is True
    _cause_passes(cluster, shim, "d-workers-0", times=4)
    assert [r.code for r in _posts(cluster, PVCS)] == [201]
    # The JobSet's own headless Service: created once too.
    assert [r.code for r in _posts(cluster, SERVICES)] == [201]


def test_named_children_follow_upstream_names():
    body = _with_claim(jobset("js", rjob("workers", 1)), "Retain")
    body["spec"]["volumeClaimPolicies"].append(
        {"templates": [{"metadata": {"name": "data"}}, {"metadata": {"name": "ckpt"}}]})
    assert named_children(body) == [
        ("Service", "js"), ("PersistentVolumeClaim", "ckpt-js"),
        ("PersistentVolumeClaim", "data-js")]
    body["spec"]["network"]["subdomain"] = "sub"
    assert named_children(body)[0] == ("Service", "sub")
    # A malformed spec (admission's to judge) gives fewer names, never an error.
    assert named_children({"metadata": {"name": "x"},
                           "spec": {"network": "?", "volumeClaimPolicies": [None, {}]}}) == [
        ("Service", "x")]


def test_a_retained_pvc_created_is_awaited_by_name_though_it_has_no_owner():
    """The pass right after the create must not plan it again before the cache shows it."""
    cache: dict[str, dict[str, Any]] = {}
    js = {"metadata": {"namespace": NS, "name": "js", "uid": "js-uid", "resourceVersion": "1"}}
    exp = Expectations(lambda ns, uid, kind, name: cache.get(name),
                       {"Job", *BY_NAME_KINDS}, by_name=BY_NAME_KINDS)
    pvc = {"kind": "PersistentVolumeClaim",
           "metadata": {"namespace": NS, "name": "ckpt-js", "uid": "pvc-uid"}}
    exp.created(js, pvc)
    assert exp.unseen((NS, "js"), js) is not None
    cache["ckpt-js"] = pvc
    assert exp.unseen((NS, "js"), js) is None


def test_a_foreign_pvc_that_does_not_fit_refuses_the_jobset_as_upstreams_webhook_does(
        cluster, shims):
    """Upstream's webhook refuses a create whose PVC name is taken unless the policy is Retain
    and the spec matches; the shim mounted someone else's 500Gi ReadWriteMany claim silently."""
    cluster.store.create(_pvcs_rt(cluster), NS, {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": "ckpt-fx", "namespace": NS},
        "spec": {"accessModes": ["ReadWriteMany"],
                 "resources": {"requests": {"storage": "500Gi"}}}})
    body = _with_claim(jobset("fx", rjob("workers", 2)), "Delete")
    shims.start()
    cluster.create_jobset(body)
    event = wait_for(lambda: next((e for e in cluster.event_objects("fx")
                                   if e["reason"] == "InvalidJobSet"), None), what="refusal")
    assert "spec does not match existing PVC ckpt-fx" in event["message"]
    assert "retentionPolicy must be retain when PVC exists" in event["message"]
    assert cluster.job_names("fx-") == []
