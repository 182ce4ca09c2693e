"""Upstream's lifecycle work after v0.12, carried end to end by the shim against the fake API
server: the active deadline (status.startTime, the requeue at expiry, the deletes, the Failed
condition), execution attempts (the resume's count written before any Job resumes), the
headless Service's ports (created and kept in sync) and container resources on resume (written,
or the FailedResourcePropagation event when the API server refuses them)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.shim.helpers import NS, jobset, rjob, wait_for

pytestmark = pytest.mark.waits

ATTEMPT = "jobset.sigs.k8s.io/execution-attempt"


def _status(cluster, name: str) -> dict[str, Any]:
    return (cluster.jobset(name) or {}).get("status") or {}


def _set(cluster, name: str, fn) -> None:
    cluster.store.mutate(cluster.jobsets_rt, NS, name, fn, False)


def _running(cluster, prefix: str, n: int) -> bool:
    jobs = cluster.live_jobs(prefix)
    return len(jobs) == n and all((j.get("status") or {}).get("active") for j in jobs)


def test_the_active_deadline_fails_the_jobset_and_deletes_its_jobs(cluster, shims):
    shims.start(feature_gates={"JobSetActiveDeadlineSeconds": True})
    body = jobset("dl", rjob("workers", 2))
    body["spec"]["activeDeadlineSeconds"] = 2
    cluster.create_jobset(body)
    # No wait for the Jobs to run: on a busy machine the deadline may pass first.
    wait_for(lambda: _status(cluster, "dl").get("startTime"), what="status.startTime")
    # Nothing changes after the Jobs run: only the requeue at the deadline wakes the shim.
    cond = wait_for(lambda: cluster.condition("dl", "Failed"), what="Failed/DeadlineExceeded")
    assert cond["reason"] == "DeadlineExceeded"
    assert cond["message"] == \
        "JobSet was active for longer than the specified deadline of 2 seconds"
    wait_for(lambda: cluster.live_jobs("dl-") == [], what="active jobs deleted")
    deletes = cluster.kube.writes("/jobs/dl-workers-[01]$", "DELETE")
    assert deletes and all(r.body["propagationPolicy"] == "Foreground" for r in deletes)
    wait_for(lambda: ("Warning", "DeadlineExceeded") in cluster.events("dl"),
             what="DeadlineExceeded event")


def test_execution_attempts_are_written_before_the_jobs_resume(cluster, shims):
    shims.start(feature_gates={"ExecutionAttemptsTracking": True})
    cluster.create_jobset(jobset("ea", rjob("workers", 2)))
    wait_for(lambda: _running(cluster, "ea-", 2), what="2 running jobs")
    wait_for(lambda: _status(cluster, "ea").get("executionAttempts") == 0, what="attempt 0")
    assert all(j["metadata"]["annotations"][ATTEMPT] == "0" for j in cluster.live_jobs("ea-"))
    _set(cluster, "ea", lambda js: js["spec"].__setitem__("suspend", True))
    wait_for(lambda: cluster.condition("ea", "Suspended"), what="Suspended=True")
    wait_for(lambda: all(j["spec"]["suspend"] for j in cluster.live_jobs("ea-")),
             what="jobs suspended")
    _set(cluster, "ea", lambda js: js["spec"].__setitem__("suspend", False))
    wait_for(lambda: all(j["spec"]["suspend"] is False and j["metadata"]["annotations"][ATTEMPT]
                         == "1" for j in cluster.live_jobs("ea-")), what="jobs resumed")
    wait_for(lambda: _status(cluster, "ea").get("executionAttempts") == 1, what="attempt 1")
    for j in cluster.live_jobs("ea-"):
        assert j["metadata"]["annotations"][ATTEMPT] == "1"
        assert j["spec"]["template"]["metadata"]["annotations"][ATTEMPT] == "1"
    # The status write that carries attempt 1 precedes every Job's resume.
    writes = [r for r in cluster.kube.audit if r.method in ("PUT", "PATCH") and r.code < 300]
    counted = next(i for i, r in enumerate(writes) if r.path.endswith("/jobsets/ea/status")
                   and (r.body.get("status") or {}).get("executionAttempts") == 1)
    resumes = [i for i, r in enumerate(writes) if "/jobs/ea-workers-" in r.path
               and (r.body.get("spec") or {}).get("suspend") is False]
    assert resumes and counted < min(resumes)


def test_the_headless_service_gets_the_ports_and_keeps_them(cluster, shims):
    shims.start()
    body = jobset("ports", rjob("workers", 1))
    pod = body["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    pod["containers"][0]["ports"] = [{"containerPort": 29500}]
    cluster.create_jobset(body)

    def service():
        return cluster.store.try_get(cluster.services_rt, NS, "ports")

    wait_for(service, what="headless Service")
    want = [{"name": "tcp-29500", "protocol": "TCP", "port": 29500, "targetPort": 29500}]
    assert service()["spec"]["ports"] == want
    # A Service created before #1300 has no ports: the shim writes them in.
    cluster.store.mutate(cluster.services_rt, NS, "ports",
                         lambda svc: svc["spec"].pop("ports"), False)
    wait_for(lambda: (service()["spec"].get("ports") == want), what="ports restored")
    patches = cluster.kube.writes("/services/ports$", "PATCH")
    assert patches and patches[-1].body == {"spec": {"ports": want},
                                            "metadata": {"uid": service()["metadata"]["uid"]}}


def _resized(name: str) -> dict[str, Any]:
    body = jobset(name, rjob("workers", 2), suspend=True)
    pod = body["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    pod["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
    return body


def _resize_and_resume(cluster, name: str) -> None:
    def change(js):
        pod = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
        pod["containers"][0]["resources"] = {"requests": {"cpu": "2"}}
        js["spec"]["suspend"] = False

    wait_for(lambda: len(cluster.live_jobs(f"{name}-")) == 2, what="suspended jobs")
    wait_for(lambda: cluster.condition(name, "Suspended"), what="Suspended=True")
    _set(cluster, name, change)


def test_new_container_resources_reach_the_jobs_on_resume(cluster, shims):
    cluster.store.mutable_pod_resources_for_suspended_jobs = True
    shims.start(feature_gates={"MutablePodResourcesForSuspendedJobSets": True})
    cluster.create_jobset(_resized("rs"))
    _resize_and_resume(cluster, "rs")
    wait_for(lambda: _running(cluster, "rs-", 2), what="jobs resumed")
    for j in cluster.live_jobs("rs-"):
        assert j["spec"]["template"]["spec"]["containers"][0]["resources"] == \
            {"requests": {"cpu": "2"}}
    assert ("Warning", "FailedResourcePropagation") not in cluster.events("rs")


def test_refused_resources_are_a_failed_resource_propagation_event(cluster, shims):
    # The API server without its MutablePodResourcesForSuspendedJobs gate refuses the change.
    shims.start(feature_gates={"MutablePodResourcesForSuspendedJobSets": True})
    cluster.create_jobset(_resized("rf"))
    wait_for(lambda: len(cluster.live_jobs("rf-")) == 2, what="suspended jobs")
    before = {j["metadata"]["name"]: copy.deepcopy(j["spec"]) for j in cluster.live_jobs("rf-")}
    _resize_and_resume(cluster, "rf")
    event = wait_for(lambda: next((e for e in cluster.event_objects("rf")
                                   if e["reason"] == "FailedResourcePropagation"), None),
                     what="FailedResourcePropagation event")
    assert event["type"] == "Warning"
    message = event["message"]
    assert message.startswith("Failed to propagate mutated resources to child Job rf-workers-")
    assert "field is immutable" in message  # the API server's own words
    assert message.endswith(
        ". Ensure MutablePodResourcesForSuspendedJobs is enabled on the API server.")
    # The Jobs were not resumed with old resources: they stay suspended, as upstream leaves them.
    for j in cluster.live_jobs("rf-"):
        assert j["spec"]["suspend"] is True
        assert j["spec"]["template"]["spec"]["containers"] == \
            before[j["metadata"]["name"]]["template"]["spec"]["containers"]
