"""Failure, restart, ordering, suspension and TTL, carried end to end by the shim."""

from __future__ import annotations

import collections
import threading
import time
from datetime import datetime, timedelta

import pytest

from tests.shim.helpers import NS, jobset, rjob, settle, wait_for

pytestmark = pytest.mark.waits

ATTEMPT = "jobset.sigs.k8s.io/restart-attempt"


def _status(cluster, name):
    return (cluster.jobset(name) or {}).get("status") or {}


def _rjob_status(cluster, name, rjob_name):
    statuses = _status(cluster, name).get("replicatedJobsStatus") or []
    return next((s for s in statuses if s["name"] == rjob_name), {})


def _all_active(cluster, prefix, n):
    jobs = cluster.live_jobs(prefix)
    return len(jobs) == n and all((j.get("status") or {}).get("active") for j in jobs)


def test_fail_jobset_policy_fails_and_deletes_active_jobs(cluster, shims):
    shims.start()
    policy = {"maxRestarts": 3, "rules": [{"name": "failFast", "action": "FailJobSet"}]}
    cluster.create_jobset(jobset("fj", rjob("workers", 3), failure_policy=policy))
    wait_for(lambda: _all_active(cluster, "fj-", 3), what="3 active jobs")
    cluster.sim.fail(NS, "fj-workers-1")
    cond = wait_for(lambda: cluster.condition("fj", "Failed"), what="Failed condition")
    assert cond["reason"] == "FailJobSetFailurePolicyAction"
    assert _status(cluster, "fj")["terminalState"] == "Failed"
    assert _status(cluster, "fj")["restarts"] == 0
    # The two still-active Jobs are deleted; the failed one stays for inspection.
    wait_for(lambda: cluster.job_names("fj-") == ["fj-workers-1"], what="active jobs deleted")
    deletes = cluster.kube.writes("/jobs/fj-workers-[02]$", "DELETE")
    assert deletes and all(r.body["propagationPolicy"] == "Foreground" for r in deletes)
    assert all(r.body["preconditions"]["uid"] for r in deletes)
    # Events are written in the background, after the status write they follow.
    wait_for(lambda: ("Warning", "FailJobSetFailurePolicyAction") in cluster.events("fj"),
             what="FailJobSetFailurePolicyAction event")


def test_restart_jobset_recreates_jobs_once(cluster, shims):
    shims.start()
    cluster.create_jobset(jobset("rs", rjob("workers", 2), failure_policy={"maxRestarts": 3}))
    wait_for(lambda: _all_active(cluster, "rs-", 2), what="2 active jobs")
    first_uids = {j["metadata"]["uid"] for j in cluster.live_jobs("rs-")}
    cluster.sim.fail(NS, "rs-workers-0")

    def recreated():
        jobs = cluster.live_jobs("rs-")
        return (
            len(jobs) == 2
            and all(j["metadata"]["labels"][ATTEMPT] == "1" for j in jobs)
            and all((j.get("status") or {}).get("active") for j in jobs)
        )

    wait_for(recreated, what="jobs recreated with restart-attempt 1")
    assert not first_uids & {j["metadata"]["uid"] for j in cluster.live_jobs("rs-")}
    status = _status(cluster, "rs")
    assert status["restarts"] == 1 and status["restartsCountTowardsMax"] == 1
    created = collections.Counter(r.body["metadata"]["name"] for r in cluster.creates())
    assert created == {"rs-workers-0": 2, "rs-workers-1": 2}
    # Events are written in the background, after the status write they follow.
    wait_for(lambda: ("Warning", "RestartJobSetFailurePolicyAction") in cluster.events("rs"),
             what="RestartJobSetFailurePolicyAction event")
    # Once all new Jobs are ready the restart is over.
    cond = wait_for(
        lambda: next(
            (
                c
                for c in _status(cluster, "rs").get("conditions", [])
                if c["type"] == "RestartingJobSet" and c["status"] == "False"
            ),
            None,
        ),
        what="RestartingJobSet=False",
    )
    assert cond["reason"] == "JobsReady"


def test_max_restarts_exhausted_fails(cluster, shims):
    shims.start()
    cluster.create_jobset(jobset("mx", rjob("workers", 1), failure_policy={"maxRestarts": 0}))
    wait_for(lambda: _all_active(cluster, "mx-", 1), what="active job")
    cluster.sim.fail(NS, "mx-workers-0")
    cond = wait_for(lambda: cluster.condition("mx", "Failed"), what="Failed")
    assert cond["reason"] == "ReachedMaxRestarts"


def test_depends_on_orders_creation(cluster, shims):
    shim = shims.start()
    cluster.create_jobset(
        jobset(
            "dep",
            rjob("init", 1),
            rjob("workers", 2, depends_on=[("init", "Complete")]),
        )
    )
    wait_for(lambda: cluster.job_names("dep-") == ["dep-init-0"], what="init job")
    wait_for(lambda: _all_active(cluster, "dep-init", 1), what="init active")
    # The decider has seen init running (the status it wrote says so) and every pass since
    # has run; workers still wait for it to complete.
    wait_for(lambda: _rjob_status(cluster, "dep", "init").get("active") == 1,
             what="init active in the JobSet's status")
    settle(shim)
    assert cluster.job_names("dep-workers") == []
    cluster.sim.succeed(NS, "dep-init-0")
    wait_for(
        lambda: cluster.job_names("dep-workers") == ["dep-workers-0", "dep-workers-1"],
        what="workers created after init completed",
    )


def test_suspend_and_resume(cluster, shims):
    shims.start()
    cluster.create_jobset(jobset("sus", rjob("workers", 2), suspend=True))
    wait_for(lambda: len(cluster.live_jobs("sus-")) == 2, what="suspended jobs created")
    assert all(j["spec"]["suspend"] is True for j in cluster.live_jobs("sus-"))
    cond = wait_for(lambda: cluster.condition("sus", "Suspended"), what="Suspended=True")
    assert cond["reason"] == "SuspendedJobs"
    assert all(not (j.get("status") or {}).get("startTime") for j in cluster.live_jobs("sus-"))

    cluster.store.mutate(
        cluster.jobsets_rt, NS, "sus", lambda js: js["spec"].__setitem__("suspend", False), False
    )
    wait_for(lambda: _all_active(cluster, "sus-", 2), what="jobs resumed and running")
    assert all(j["spec"]["suspend"] is False for j in cluster.live_jobs("sus-"))
    wait_for(
        lambda: any(
            c["type"] == "Suspended" and c["status"] == "False" and c["reason"] == "ResumeJobs"
            for c in _status(cluster, "sus").get("conditions", [])
        ),
        what="Suspended=False/ResumeJobs",
    )

    # Suspending a running JobSet suspends its Jobs again.
    cluster.store.mutate(
        cluster.jobsets_rt, NS, "sus", lambda js: js["spec"].__setitem__("suspend", True), False
    )
    wait_for(
        lambda: all(j["spec"]["suspend"] for j in cluster.live_jobs("sus-")), what="re-suspended"
    )


def test_completion_then_ttl_deletes_jobset(cluster, shims):
    shims.start()
    cluster.create_jobset(jobset("ttl", rjob("workers", 2), ttl=1))
    wait_for(lambda: _all_active(cluster, "ttl-", 2), what="active jobs")
    cluster.sim.succeed(NS, "ttl-workers-0")
    cluster.sim.succeed(NS, "ttl-workers-1")
    cond = wait_for(lambda: cluster.condition("ttl", "Completed"), what="Completed")
    assert cond["reason"] == "AllJobsCompleted"
    assert cluster.jobset("ttl") is not None
    # ttlSecondsAfterFinished=1: the decider asks for a requeue, then the JobSet is deleted, and
    # the garbage collector takes its Jobs and Service with it.
    wait_for(lambda: cluster.jobset("ttl") is None, what="JobSet deleted by TTL")
    deletes = cluster.kube.writes("/jobsets/ttl$", "DELETE")
    # A pass decided on a cache that had not yet seen the deletion may send it again: harmless,
    # since every delete names the same object by UID.
    assert deletes and {r.body["preconditions"]["uid"] for r in deletes} == {
        r.body["preconditions"]["uid"] for r in deletes[:1]
    }
    assert all(r.body["propagationPolicy"] == "Foreground" for r in deletes)
    wait_for(lambda: not cluster.jobs(prefix="ttl-"), what="jobs garbage-collected")


def test_ttl_deletes_the_jobset_when_it_expires_not_up_to_a_second_late(cluster, shims):
    """TTL 5 s: deleted 5 s after the finish the status records, as upstream's exact requeue.

    The delay is checked, not the clock: each pass after the finish asks the queue to run again
    at exactly the TTL's expiry (its `now` plus the delay it queued), where a delay rounded up
    to whole seconds came up to a second late. How late the deletion then comes is the
    machine's (a loaded one runs the pass late); that it never comes early is checked."""
    shim = shims.start()
    # Each pass's `now` (the shim's clock, read once per pass on the worker running it) and
    # the requeue delays the passes of this JobSet hand to the work queue.
    asked: list[tuple[datetime, float]] = []
    local = threading.local()
    clock, requeue = shim.clock, shim.queue.requeue

    def now() -> datetime:
        local.now = clock()
        return local.now

    def recorded(key, delay):
        if key == (NS, "ttl5") and delay > 0 and getattr(local, "now", None) is not None:
            asked.append((local.now, delay))
        return requeue(key, delay)

    shim.clock = now
    shim.queue.requeue = recorded
    cluster.create_jobset(jobset("ttl5", rjob("workers", 1), ttl=5))
    wait_for(lambda: _all_active(cluster, "ttl5-", 1), what="active job")
    # The finish is recorded at second precision (metav1.Time), so the TTL expires 5 s after
    # that second. Finishing 0.6 s into a second makes a delay rounded up to whole seconds aim
    # ~0.6 s late, where the exact remainder aims at the expiry itself.
    time.sleep((0.6 - time.time()) % 1.0)
    cluster.sim.succeed(NS, "ttl5-workers-0")
    cond = wait_for(lambda: cluster.condition("ttl5", "Completed"), what="Completed")
    finished = datetime.fromisoformat(cond["lastTransitionTime"].replace("Z", "+00:00"))
    wait_for(lambda: cluster.jobset("ttl5") is None, what="JobSet deleted by TTL")
    expiry = finished + timedelta(seconds=5)
    aimed = [at + timedelta(seconds=delay) for at, delay in asked if at >= finished]
    assert aimed, asked
    assert all(abs(t - expiry) < timedelta(milliseconds=1) for t in aimed), (expiry, aimed)
    first = cluster.kube.writes("/jobsets/ttl5$", "DELETE")[0]
    # The audit log's times are monotonic; the recorded finish is wall-clock time.
    wall = first.time + (time.time() - time.monotonic())
    assert wall - finished.timestamp() >= 4.9, wall - finished.timestamp()


def test_other_managed_by_is_never_touched(cluster, shims):
    shim = shims.start()
    cluster.create_jobset(jobset("theirs", rjob("workers", 1), managed_by="example.com/other"))
    cluster.create_jobset(jobset("upstream", rjob("workers", 1), managed_by=None))
    cluster.create_jobset(jobset("ours", rjob("workers", 1)))
    wait_for(lambda: _all_active(cluster, "ours-", 1), what="our JobSet running")
    wait_for(lambda: (cluster.jobset("ours").get("status") or {}).get("replicatedJobsStatus"))
    settle(shim)
    touched = [r for r in cluster.kube.writes("/(theirs|upstream)")] + [
        r for r in cluster.creates() if r.body["metadata"]["name"].startswith(("theirs", "up"))
    ]
    assert touched == []
    assert cluster.jobs(prefix="theirs") == [] and cluster.jobs(prefix="upstream") == []
    assert "status" not in cluster.jobset("theirs")
    assert "status" not in cluster.jobset("upstream")
