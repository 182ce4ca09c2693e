"""Crashes, an unavailable decider, two replicas, expired watches, and --once."""

from __future__ import annotations

import collections
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from decider.service.server import BackgroundServer
from tests.shim.helpers import CONTROLLER, NS, jobset, rjob, settle, wait_for

pytestmark = pytest.mark.waits

ATTEMPT = "jobset.sigs.k8s.io/restart-attempt"
ROOT = Path(__file__).resolve().parents[2]


def _restarts(cluster, name):
    return ((cluster.jobset(name) or {}).get("status") or {}).get("restarts")


def _running(cluster, prefix, n, attempt="0"):
    jobs = cluster.live_jobs(prefix)
    return (
        len(jobs) == n
        and all(j["metadata"]["labels"][ATTEMPT] == attempt for j in jobs)
        and all((j.get("status") or {}).get("active") for j in jobs)
    )


def test_shim_killed_mid_restart_restarts_exactly_once(cluster, shims):
    first = shims.start()
    cluster.create_jobset(jobset("kr", rjob("workers", 3), failure_policy={"maxRestarts": 5}))
    wait_for(lambda: _running(cluster, "kr-", 3), what="3 running jobs")
    # The API server refuses the restart's deletes, so the first shim records the restart and
    # dies before it could act on it.
    fault = cluster.kube.add_fault("DELETE", r"/jobs/kr-workers-")
    cluster.sim.fail(NS, "kr-workers-0")
    wait_for(lambda: _restarts(cluster, "kr") == 1, what="restart recorded")
    wait_for(lambda: fault.hits >= 1, what="a delete attempted")
    first.kill()
    shims.running.remove(first)
    cluster.kube.clear_faults()
    assert len(cluster.live_jobs("kr-")) == 3  # nothing was deleted yet

    second = shims.start()
    wait_for(lambda: _running(cluster, "kr-", 3, attempt="1"), what="recreated")
    settle(second)
    assert _restarts(cluster, "kr") == 1
    status = cluster.jobset("kr")["status"]
    assert status["restartsCountTowardsMax"] == 1
    created = collections.Counter(r.body["metadata"]["name"] for r in cluster.creates())
    assert created == {f"kr-workers-{i}": 2 for i in range(3)}
    assert sorted(j["metadata"]["name"] for j in cluster.jobs(prefix="kr-")) == [
        "kr-workers-0",
        "kr-workers-1",
        "kr-workers-2",
    ]


def test_shim_killed_between_deletes_and_creates(cluster, shims):
    first = shims.start()
    cluster.create_jobset(jobset("kc", rjob("workers", 2), failure_policy={"maxRestarts": 5}))
    wait_for(lambda: _running(cluster, "kc-", 2), what="running jobs")
    fault = cluster.kube.add_fault("POST", r"/namespaces/default/jobs$")
    cluster.sim.fail(NS, "kc-workers-1")
    wait_for(lambda: fault.hits >= 1, what="a recreate attempted")
    assert cluster.live_jobs("kc-") == [] or all(
        j["metadata"]["labels"][ATTEMPT] == "0" for j in cluster.live_jobs("kc-")
    )
    first.kill()
    shims.running.remove(first)
    cluster.kube.clear_faults()
    shims.start()
    wait_for(lambda: _running(cluster, "kc-", 2, attempt="1"), what="recreated")
    assert _restarts(cluster, "kc") == 1
    created = collections.Counter(r.body["metadata"]["name"] for r in cluster.creates())
    assert created == {"kc-workers-0": 2, "kc-workers-1": 2}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_decider_unavailable_retries_and_changes_nothing(cluster, shims):
    port = _free_port()
    shim = shims.start(decider_target=f"127.0.0.1:{port}", decider_timeout=0.3)
    cluster.create_jobset(jobset("du", rjob("workers", 2)))
    wait_for(lambda: shim.stats.errors >= 3, what="retried decide calls")
    assert cluster.kube.writes("/namespaces/default/") == []
    assert "status" not in cluster.jobset("du")
    # Retries back off exponentially instead of spinning.
    assert shim.queue.failures(("default", "du")) >= 3
    with BackgroundServer(f"127.0.0.1:{port}"):
        wait_for(lambda: len(cluster.live_jobs("du-")) == 2, what="jobs once back")


# Long enough that a leader on a busy machine renews in time (2 s, renewed within 1.5 s, lost
# it under load), short enough that the test waits out an expiry.
LEASE = {"lease_duration": 6.0, "renew_deadline": 4.5}


def test_two_replicas_only_the_leader_acts(cluster, shims):
    a = shims.start(leader_elect=True, identity="shim-a", **LEASE)
    wait_for(lambda: a.is_leader(), what="a leads")
    b = shims.start(leader_elect=True, identity="shim-b", **LEASE)
    cluster.create_jobset(jobset("le", rjob("workers", 2), failure_policy={"maxRestarts": 3}))
    wait_for(lambda: _running(cluster, "le-", 2), what="jobs")
    settle(a)
    assert a.is_leader() and not b.is_leader()
    writers = {r.user_agent for r in cluster.kube.writes("/namespaces/default/(?!leases)")}
    assert writers == {"decider-shim/shim-a"}
    assert b.stats.reconciles == 0

    # The leader dies without releasing the Lease; b takes over once it expires.
    a.kill()
    shims.running.remove(a)
    killed_at = time.monotonic()
    cluster.sim.fail(NS, "le-workers-0")
    wait_for(lambda: b.is_leader(), what="b leads")
    # Not before the lease could have expired: a renewed it at most a retry period before.
    assert time.monotonic() - killed_at >= LEASE["lease_duration"] - 1.0
    wait_for(lambda: _running(cluster, "le-", 2, attempt="1"), what="b restarted")
    lease = cluster.store.get(
        cluster.store.resource_for("coordination.k8s.io", "v1", "leases"),
        "default",
        "jobset-decider-shim",
    )
    assert lease["spec"]["holderIdentity"] == "shim-b"
    assert lease["spec"]["leaseTransitions"] == 1


def test_graceful_shutdown_releases_the_lease(cluster, shims):
    a = shims.start(leader_elect=True, identity="shim-a", lease_duration=30.0, renew_deadline=20.0)
    wait_for(lambda: a.is_leader(), what="a leads")
    b = shims.start(leader_elect=True, identity="shim-b", lease_duration=30.0, renew_deadline=20.0)
    a.shutdown()
    shims.running.remove(a)
    # Released on the way out: b does not wait out the 30s lease.
    wait_for(lambda: b.is_leader(), timeout=20, what="b leads after a released")


def test_expired_watch_relists(cluster, shims):
    shim = shims.start()
    cluster.create_jobset(jobset("w1", rjob("workers", 1)))
    wait_for(lambda: len(cluster.live_jobs("w1-")) == 1, what="first jobset")
    # Cut the JobSet watch and keep it out while a JobSet is created and the history is
    # compacted: resuming from the old resourceVersion then gets 410 Gone, and only a relist
    # can reveal the new JobSet.
    cluster.kube.add_fault("GET", r"/jobsets$", code=503)
    assert cluster.store.drop_watches() > 0
    cluster.create_jobset(jobset("w2", rjob("workers", 1)))
    cluster.store.compact()
    time.sleep(0.2)
    cluster.kube.clear_faults()
    wait_for(lambda: len(cluster.live_jobs("w2-")) == 1, what="jobset created after relist")
    assert shim.jobsets.relists >= 1


def test_run_once_passes_over_all_jobsets_and_returns(cluster, shims):
    cluster.create_jobset(jobset("o1", rjob("workers", 1)))
    cluster.create_jobset(jobset("o2", rjob("workers", 2)))
    cluster.create_jobset(jobset("o3", rjob("workers", 1), managed_by="example.com/other"))
    shim = shims.build()
    assert shim.run_once() == 0
    # One pass each: the first pass of a JobSet creates its Jobs and Service.
    assert cluster.job_names("o1-") == ["o1-workers-0"]
    assert cluster.job_names("o2-") == ["o2-workers-0", "o2-workers-1"]
    assert cluster.jobs(prefix="o3-") == []
    assert shim.stats.reconciles == 0  # run_once reconciles directly, no queue


def test_cli_once_against_the_fake_cluster(cluster, decider_server, tmp_path):
    cluster.create_jobset(jobset("cli", rjob("workers", 1)))
    env = dict(os.environ, KUBECONFIG=str(cluster.kubeconfig), PYTHONPATH=str(ROOT))
    env.pop("KUBERNETES_SERVICE_HOST", None)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "shim.main",
            "--once",
            "--no-leader-elect",
            "--decider-address",
            decider_server.target,
            "--controller-name",
            CONTROLLER,
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    assert cluster.job_names("cli-") == ["cli-workers-0"]


def test_cli_once_with_nothing_but_a_kubeconfig(cluster, tmp_path):
    """No decider address: the shim runs a local decider of its own (`--decider-address local`)."""
    cluster.create_jobset(jobset("solo", rjob("workers", 2)))
    env = dict(os.environ, KUBECONFIG=str(cluster.kubeconfig), PYTHONPATH=str(ROOT))
    for key in ("KUBERNETES_SERVICE_HOST", "DECIDER_ADDRESS"):
        env.pop(key, None)
    proc = subprocess.run(
        [sys.executable, "-m", "shim.main", "--once", "--no-leader-elect",
         "--controller-name", CONTROLLER],
        env=env, capture_output=True, text=True, timeout=90, cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    assert "started a local decider" in proc.stderr
    assert cluster.job_names("solo-") == ["solo-workers-0", "solo-workers-1"]
