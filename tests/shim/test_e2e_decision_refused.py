"""A decider that refuses the input (INVALID_ARGUMENT) is told to the user once, not hammered."""

from __future__ import annotations

import time

import pytest

from tests.shim.helpers import NS, jobset, rjob, settle, wait_for

pytestmark = pytest.mark.waits


def _refused(cluster, name):
    return [e for e in cluster.event_objects(name) if e["reason"] == "DecisionRefused"]


def _malformed_job(cluster, jobset_obj):
    """A Job of the JobSet whose restart-attempt label no decider can read."""
    meta = jobset_obj["metadata"]
    return cluster.store.create(
        cluster.jobs_rt,
        NS,
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": f"{meta['name']}-workers-0",
                "namespace": NS,
                "labels": {
                    "jobset.sigs.k8s.io/jobset-name": meta["name"],
                    "jobset.sigs.k8s.io/replicatedjob-name": "workers",
                    "jobset.sigs.k8s.io/job-index": "0",
                    "jobset.sigs.k8s.io/restart-attempt": "zero",
                },
                "ownerReferences": [
                    {
                        "apiVersion": "jobset.x-k8s.io/v1alpha2",
                        "kind": "JobSet",
                        "name": meta["name"],
                        "uid": meta["uid"],
                        "controller": True,
                    }
                ],
            },
            "spec": {
                "suspend": True,
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [{"name": "main", "image": "busybox"}],
                    }
                },
            },
        },
    )


def test_invalid_argument_is_one_warning_and_a_backoff_of_minutes(cluster, shims):
    # A valid JobSet (admission passes) with a Job the decider cannot read: it refuses the
    # input with INVALID_ARGUMENT naming the label.
    js = cluster.create_jobset(jobset("bad", rjob("workers", 2)))
    _malformed_job(cluster, js)
    started = time.monotonic()
    shim = shims.start()
    event = wait_for(lambda: _refused(cluster, "bad"), what="a DecisionRefused event")[0]
    assert event["type"] == "Warning"
    assert "jobset.sigs.k8s.io/restart-attempt" in event["message"]
    # Not retried like a transient error: the next try is 30 s after the refusal, which came
    # after `started` (however long the machine took to get here).
    assert shim.queue.due_in((NS, "bad")) >= 30.0 - (time.monotonic() - started)
    settle(shim)
    assert len(_refused(cluster, "bad")) == 1
    assert shim.stats.errors == 1
    assert [j["metadata"]["name"] for j in cluster.live_jobs("bad-")] == ["bad-workers-0"]

    # A change to what the JobSet owns is a new input: it is decided at once, whatever the
    # backoff.
    cluster.store.mutate(
        cluster.jobs_rt,
        NS,
        "bad-workers-0",
        lambda o: o["metadata"]["labels"].update({"jobset.sigs.k8s.io/restart-attempt": "0"}),
        False,
    )
    wait_for(lambda: len(cluster.live_jobs("bad-")) == 2, what="jobs of the fixed JobSet")
