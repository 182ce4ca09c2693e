"""A decider that refuses the input (INVALID_ARGUMENT) is told to the user once, not hammered."""

from __future__ import annotations

import time

from tests.shim.helpers import NS, jobset, rjob, wait_for


def _refused(cluster, name):
    return [e for e in cluster.event_objects(name) if e["reason"] == "DecisionRefused"]


def test_invalid_argument_is_one_warning_and_a_backoff_of_minutes(cluster, shims):
    shim = shims.start()
    # Two replicated Jobs named alike: no webhook stopped it, and the decider refuses it.
    cluster.create_jobset(jobset("dup", rjob("workers", 1), rjob("workers", 1)))
    event = wait_for(lambda: _refused(cluster, "dup"), what="a DecisionRefused event")[0]
    assert event["type"] == "Warning"
    assert 'duplicate value "workers"' in event["message"]
    # Not retried like a transient error: the next try is at least 30 s away.
    assert shim.queue.due_in((NS, "dup")) >= 29.0
    time.sleep(0.5)
    assert len(_refused(cluster, "dup")) == 1
    assert shim.stats.errors == 1
    assert cluster.live_jobs("dup-") == []

    # A change to the JobSet is a new input: it is decided at once, whatever the backoff.
    cluster.store.mutate(
        cluster.jobsets_rt,
        NS,
        "dup",
        lambda o: o["spec"]["replicatedJobs"][1].update(name="other"),
        False,
    )
    wait_for(lambda: len(cluster.live_jobs("dup-")) == 2, what="jobs of the fixed JobSet")
