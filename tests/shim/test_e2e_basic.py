"""A JobSet created in the (fake) cluster is carried by the shim and a real decider."""

from __future__ import annotations

import pytest

from tests.shim.helpers import CONTROLLER, NS, jobset, rjob, wait_for

pytestmark = pytest.mark.waits


def test_create_makes_jobs_and_service(cluster, shims):
    shims.start()
    cluster.create_jobset(jobset("js", rjob("workers", 2)))
    names = wait_for(
        lambda: (
            cluster.job_names("js-") == ["js-workers-0", "js-workers-1"]
            and cluster.job_names("js-")
        ),
        what="jobs created",
    )
    assert names == ["js-workers-0", "js-workers-1"]
    svc = wait_for(lambda: cluster.store.try_get(cluster.services_rt, NS, "js"), what="service")
    assert svc["spec"]["clusterIP"] == "None"
    for job in cluster.live_jobs("js-"):
        labels = job["metadata"]["labels"]
        assert labels["jobset.sigs.k8s.io/restart-attempt"] == "0"
        ref = job["metadata"]["ownerReferences"][0]
        assert ref["kind"] == "JobSet" and ref["controller"] is True
    js = wait_for(
        lambda: (
            (cluster.jobset("js").get("status") or {}).get("replicatedJobsStatus")
            and cluster.jobset("js")
        ),
        what="status",
    )
    assert js["spec"]["managedBy"] == CONTROLLER


def test_restart_recreates_jobs_with_next_attempt(cluster, shims):
    shims.start()
    cluster.create_jobset(jobset("rs", rjob("workers", 2), failure_policy={"maxRestarts": 3}))
    wait_for(lambda: cluster.job_names("rs-") == ["rs-workers-0", "rs-workers-1"], what="jobs")
    wait_for(lambda: all((j.get("status") or {}).get("active") for j in cluster.live_jobs("rs-")))
    cluster.sim.fail(NS, "rs-workers-0")
    wait_for(
        lambda: (cluster.jobset("rs").get("status") or {}).get("restarts") == 1, what="restart"
    )

    def recreated():
        jobs = cluster.live_jobs("rs-")
        return len(jobs) == 2 and all(
            j["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"] == "1" for j in jobs
        )

    wait_for(recreated, what="jobs recreated with attempt 1")
    print(cluster.events("rs"))


def test_a_service_someone_else_created_is_used_as_upstream_does(cluster, shims):
    """Upstream looks the headless Service up by name and uses whatever holds it."""
    cluster.store.create(cluster.services_rt, NS, {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "pre", "namespace": NS},
        "spec": {"clusterIP": "None", "selector": {"app": "other"}}})
    shims.start()
    cluster.create_jobset(jobset("pre", rjob("workers", 1)))
    wait_for(lambda: cluster.job_names("pre-") == ["pre-workers-0"], what="jobs created")
    assert all(reason not in ("ObjectConflict", "JobCreationFailed")
               for _, reason in cluster.events("pre"))
    svc = cluster.store.try_get(cluster.services_rt, NS, "pre")
    assert svc["spec"]["selector"] == {"app": "other"}  # not touched
