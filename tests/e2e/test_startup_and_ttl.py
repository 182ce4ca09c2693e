"""When a shim-managed JobSet's Jobs start, and when it goes, on a real control plane: InOrder
startup and DependsOn (Ready and Complete) hold a replicated Job's Jobs back until the pods of
the one before are ready (KWOK runs them once the test lets the scheduler place them) or done;
ttlSecondsAfterFinished deletes a completed JobSet, the real garbage collector its Jobs, pods and
Service."""

from __future__ import annotations

import time

import pytest

from tests.e2e.framework import (
    JOBSETS,
    TIMEOUT,
    condition,
    conditions,
    eventually,
    has_condition,
    jobset,
    replicated_job,
)
from tests.e2e.lifecycle_support import created as created_at
from tests.e2e.lifecycle_support import (
    end,
    gone,
    held,
    job_names,
    ready_since,
    release,
    rjob_jobs,
    rjob_status,
    running,
    when,
)

pytestmark = [pytest.mark.e2e, pytest.mark.waits]


def test_in_order_startup_creates_the_next_replicated_job_once_the_first_is_ready(e2e, ns):
    kube = e2e.kube
    kube.create_jobset(jobset(ns, "ordered", [
        held(replicated_job("leader")),
        replicated_job("workers", replicas=2)],
        startupPolicy={"startupPolicyOrder": "InOrder"}))

    # The leader's Job exists and its pod is held Pending: the decider has seen it not ready
    # (its status says so) and, in that pass, created nothing of the workers.
    js = eventually("the leader's Job seen active and not ready", lambda: kube.jobset(
        ns, "ordered"), lambda j: rjob_status(j, "leader").get("active") == 1
        and rjob_status(j, "leader").get("ready") == 0,
        show=lambda j: (j or {}).get("status"))
    assert has_condition(js, "StartupPolicyInProgress"), conditions(js)
    assert condition(js, "StartupPolicyInProgress")["reason"] == \
        "InOrderStartupPolicyInProgress", conditions(js)
    assert not has_condition(js, "StartupPolicyCompleted"), conditions(js)
    assert job_names(kube.jobs(ns, "ordered")) == ["ordered-leader-0"]

    # Let the scheduler place the leader's pod: KWOK runs it, it is Ready, then the workers come.
    leader = eventually("the leader's pod", lambda: kube.pods(ns, "ordered"),
                        lambda ps: len(ps) == 1)
    assert leader[0]["status"]["phase"] == "Pending"
    release(kube, ns, leader[0])
    leader = running(kube, ns, "ordered", 1, rjob="leader")
    jobs = eventually("the workers' two Jobs", lambda: kube.jobs(ns, "ordered"),
                      lambda js: len(rjob_jobs(js, "workers")) == 2, show=job_names)
    ready = ready_since(leader[0])
    for job in rjob_jobs(jobs, "workers"):
        assert created_at(job) >= ready, (job["metadata"]["name"], created_at(job), ready)
    workers = running(kube, ns, "ordered", 2, rjob="workers")

    js = eventually("StartupPolicyCompleted", lambda: kube.jobset(ns, "ordered"),
                    lambda j: has_condition(j, "StartupPolicyCompleted"), show=conditions)
    assert condition(js, "StartupPolicyCompleted")["reason"] == "InOrderStartupPolicyCompleted"
    # The two conditions exclude each other: the one in progress is now False.
    assert has_condition(js, "StartupPolicyInProgress", "False"), conditions(js)

    end(kube, ns, leader + workers)
    done = eventually("JobSet ordered Completed", lambda: kube.jobset(ns, "ordered"),
                      lambda j: has_condition(j, "Completed"), show=conditions)
    assert condition(done, "Completed")["reason"] == "AllJobsCompleted", conditions(done)


def test_depends_on_waits_for_ready_then_for_complete(e2e, ns):
    kube = e2e.kube
    server = replicated_job("server", replicas=2)
    server["dependsOn"] = [{"name": "prep", "status": "Ready"}]
    client = replicated_job("client")
    client["dependsOn"] = [{"name": "server", "status": "Complete"}]
    kube.create_jobset(jobset(ns, "deps", [held(replicated_job("prep")), server, client]))

    eventually("prep's Job seen active and not ready", lambda: kube.jobset(ns, "deps"),
               lambda j: rjob_status(j, "prep").get("active") == 1
               and rjob_status(j, "prep").get("ready") == 0,
               show=lambda j: (j or {}).get("status"))
    assert job_names(kube.jobs(ns, "deps")) == ["deps-prep-0"]

    # dependsOn Ready: prep's pod Ready brings the server's Jobs, not the client's.
    prep_pod = eventually("prep's pod", lambda: kube.pods(ns, "deps"), lambda ps: len(ps) == 1)
    release(kube, ns, prep_pod[0])
    prep = running(kube, ns, "deps", 1, rjob="prep")
    jobs = eventually("the server's two Jobs", lambda: kube.jobs(ns, "deps"),
                      lambda js: len(rjob_jobs(js, "server")) == 2, show=job_names)
    for job in rjob_jobs(jobs, "server"):
        assert created_at(job) >= ready_since(prep[0]), job["metadata"]["name"]
    servers = running(kube, ns, "deps", 2, rjob="server")
    # The server ready is not the server complete: the decider has seen it ready and created
    # no client.
    eventually("the server seen ready", lambda: kube.jobset(ns, "deps"),
               lambda j: rjob_status(j, "server").get("ready") == 2,
               show=lambda j: (j or {}).get("status"))
    assert not rjob_jobs(kube.jobs(ns, "deps"), "client"), job_names(kube.jobs(ns, "deps"))

    # dependsOn Complete: the server's Jobs complete (prep still runs), then the client comes.
    end(kube, ns, servers)
    done = eventually("the server's Jobs Complete", lambda: kube.jobs(ns, "deps"),
                      lambda js: all(has_condition(j, "Complete")
                                     for j in rjob_jobs(js, "server")),
                      show=lambda js: {j["metadata"]["name"]: conditions(j) for j in js})
    completed = max(when(condition(j, "Complete")["lastTransitionTime"])
                    for j in rjob_jobs(done, "server"))
    jobs = eventually("the client's Job", lambda: kube.jobs(ns, "deps"),
                      lambda js: len(rjob_jobs(js, "client")) == 1, show=job_names)
    assert created_at(rjob_jobs(jobs, "client")[0]) >= completed
    client_pods = running(kube, ns, "deps", 1, rjob="client")

    end(kube, ns, prep + client_pods)
    eventually("JobSet deps Completed", lambda: kube.jobset(ns, "deps"),
               lambda j: has_condition(j, "Completed"), show=conditions)


def test_ttl_after_finished_deletes_the_completed_jobset_and_the_gc_its_children(e2e, ns):
    kube = e2e.kube
    ttl = 5
    kube.create_jobset(jobset(ns, "brief", [replicated_job("w", replicas=2)],
                              ttlSecondsAfterFinished=ttl))
    pods = running(kube, ns, "brief", 2)
    jobs = kube.jobs(ns, "brief")
    service = eventually("the headless Service", lambda: kube.maybe(
        f"/api/v1/namespaces/{ns}/services/brief"), bool)
    end(kube, ns, pods)
    js = eventually("JobSet brief Completed", lambda: kube.jobset(ns, "brief"),
                    lambda j: j is None or has_condition(j, "Completed"), show=conditions)
    assert js is not None, "the JobSet went before anyone saw it Completed"
    finished = when(condition(js, "Completed")["lastTransitionTime"])

    # The shim deletes it once the TTL has passed since it finished (the Completed condition's
    # time, which is what upstream counts from); the garbage collector takes what it owns.
    gone(kube, f"{JOBSETS}/namespaces/{ns}/jobsets/brief", "JobSet brief")
    seen_gone = time.time()
    assert seen_gone - finished.timestamp() >= ttl, (finished, seen_gone)
    # The GC learns a CRD ~25 s after it is installed: a session this young waits that long.
    for job in jobs:
        gone(kube, f"/apis/batch/v1/namespaces/{ns}/jobs/{job['metadata']['name']}",
             f"Job {job['metadata']['name']}", TIMEOUT)
    for pod in pods:
        gone(kube, f"/api/v1/namespaces/{ns}/pods/{pod['metadata']['name']}",
             f"pod {pod['metadata']['name']}")
    assert [r["kind"] for r in service["metadata"]["ownerReferences"]] == ["JobSet"]
    gone(kube, f"/api/v1/namespaces/{ns}/services/brief", "the headless Service")
