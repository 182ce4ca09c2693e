"""Races and crashes the chaos soak (bench/shim_chaos.py) found, each made deterministic."""

from __future__ import annotations

import time

import pytest

from tests.shim.helpers import NS, jobset, rjob, wait_for

pytestmark = pytest.mark.waits


def test_a_transient_error_on_discovery_at_start_is_waited_out_not_an_exit(cluster, shims):
    # The soak met it during an API server restart: one 503 on a discovery GET made the Shim
    # constructor raise, which main() turns into exit 2, a restart of the pod for one answer.
    # controller-runtime discovers lazily and retries until its caches sync.
    fault = cluster.kube.add_fault("GET", r"^/apis/batch/v1$", code=503, count=2)
    shims.start()
    assert fault.hits == 2
    cluster.create_jobset(jobset("after", rjob("workers", 1)))
    wait_for(lambda: len(cluster.live_jobs("after-")) == 1, what="the JobSet's job")


def test_a_status_write_refused_as_stale_again_and_again_backs_off(cluster, shims):
    # The soak met 88 requests a second on an idle cluster: a JobSet's watch went silent (a
    # half-dead connection, noticed only after the idle timeout), the JobSet changed meanwhile,
    # and every pass's status write met 409. Each StaleObservation was retried 0.05 s later,
    # resending the plan's creates and its status for as long as the cache stayed behind.
    # Upstream returns the conflict to controller-runtime, which requeues rate-limited.
    shim = shims.start()
    cluster.create_jobset(jobset("behind", rjob("workers", 1)))
    wait_for(lambda: len(cluster.live_jobs("behind-")) == 1, what="the job")
    wait_for(lambda: (shim.jobsets.get(NS, "behind") or {}).get("metadata", {}).get(
        "resourceVersion") == cluster.jobset("behind")["metadata"]["resourceVersion"],
        what="the shim's cache up to date")
    fault = cluster.kube.add_watch_fault("/jobsets$", "silent")
    cluster.store.drop_watches()
    wait_for(lambda: fault.hits >= 1, what="the silent watch")
    # A change the shim cannot see: a user labels the JobSet.
    cluster.store.mutate(cluster.jobsets_rt, NS, "behind",
                         lambda js: js["metadata"].setdefault("labels", {}).update(seen="no"),
                         False)
    before = len(cluster.kube.writes("/jobsets/behind/status$", "PUT"))
    cluster.sim.succeed(NS, cluster.live_jobs("behind-")[0]["metadata"]["name"])
    wait_for(lambda: len(cluster.kube.writes("/jobsets/behind/status$", "PUT")) > before,
             what="the first status write")
    time.sleep(3.0)
    tries = len(cluster.kube.writes("/jobsets/behind/status$", "PUT")) - before
    # Rate limited from backoff_base (0.05 s) doubling to backoff_max (1 s): 0.05, 0.1, 0.2,
    # 0.4, 0.8, 1, 1 ... about 7 in 3 s; at a fixed 0.05 s it was about 60.
    assert tries <= 10, tries
    # Each a conflict met and backed off from (waited for: a busy machine gets fewer passes
    # into the window above, never more).
    wait_for(lambda: shim.stats.conflicts >= 3, what="three conflicts")
    cluster.kube.clear_faults()
    # What TCP keepalive (or the read deadline past the watch's end) does to the half-dead
    # connection: end it.
    for stream in list(shim.jobsets._streams.values()):
        stream.close()
    wait_for(lambda: cluster.condition("behind", "Completed"),
             what="the JobSet completed once the cache caught up")
