"""The shim never acts on a JobSet admission would refuse: on a cluster without the webhook it
validates each generation once, records a Warning naming the field errors, creates nothing,
and waits for a new generation."""

from __future__ import annotations

import pytest

from tests.shim.helpers import NS, jobset, rjob, settle, wait_for

pytestmark = pytest.mark.waits


def _invalid(cluster, name):
    return [e for e in cluster.event_objects(name) if e["reason"] == "InvalidJobSet"]


def test_an_invalid_jobset_gets_a_warning_naming_its_errors_and_nothing_created(cluster, shims):
    shim = shims.start()
    # Two replicated Jobs named alike: no webhook stopped it at the API server.
    cluster.create_jobset(jobset("dup", rjob("workers", 1), rjob("workers", 1)))
    event = wait_for(lambda: _invalid(cluster, "dup"), what="an InvalidJobSet event")[0]
    assert event["type"] == "Warning"
    assert event["message"] == (
        "spec (generation 1) is invalid; nothing is created, changed or deleted for it until a "
        'new generation fixes it: spec.replicatedJobs[1]: Duplicate value: {"name":"workers"}')
    settle(shim)
    # Nothing created, no status written, no retry of the same generation, one event.
    assert cluster.creates() == []
    assert cluster.creates("/services$") == []
    assert not (cluster.jobset("dup") or {}).get("status")
    assert len(_invalid(cluster, "dup")) == 1
    assert shim.queue.due_in((NS, "dup")) is None
    # Asked once for this generation, whatever else wakes the JobSet.
    validations, passes = shim.spec_check.validations, shim.stats.reconciles
    shim.queue.add((NS, "dup"))
    settle(shim)
    assert shim.stats.reconciles > passes
    assert shim.spec_check.validations == validations
    assert cluster.creates() == []

    # A new generation that fixes it is decided at once.
    cluster.store.mutate(
        cluster.jobsets_rt,
        NS,
        "dup",
        lambda o: o["spec"]["replicatedJobs"][1].update(name="other"),
        False,
    )
    wait_for(lambda: len(cluster.live_jobs("dup-")) == 2, what="jobs of the fixed JobSet")


def test_an_edit_admission_would_refuse_is_not_acted_on(cluster, shims):
    shim = shims.start()
    cluster.create_jobset(jobset("edit", rjob("workers", 1)))
    wait_for(lambda: len(cluster.live_jobs("edit-")) == 1, what="the first Job")
    # replicas of a replicated Job are immutable: the webhook would refuse this update.
    cluster.store.mutate(
        cluster.jobsets_rt,
        NS,
        "edit",
        lambda o: o["spec"]["replicatedJobs"][0].update(replicas=3),
        False,
    )
    event = wait_for(lambda: _invalid(cluster, "edit"), what="an InvalidJobSet event")[0]
    assert "generation 2" in event["message"]
    assert "spec.replicatedJobs: field is immutable" in event["message"]
    settle(shim)
    assert [j["metadata"]["name"] for j in cluster.live_jobs("edit-")] == ["edit-workers-0"]

    # Back to what was admitted: acted on again (suspend is a change admission allows).
    def revert(o):
        o["spec"]["replicatedJobs"][0]["replicas"] = 1
        o["spec"]["suspend"] = True

    cluster.store.mutate(cluster.jobsets_rt, NS, "edit", revert, False)
    wait_for(
        lambda: all(j["spec"].get("suspend") for j in cluster.live_jobs("edit-")),
        what="the Job suspended",
    )
    assert shim.stats.refused_plans == 0


def test_a_valid_jobset_costs_one_validation_per_generation(cluster, shims):
    shim = shims.start()
    cluster.create_jobset(jobset("ok", rjob("workers", 2)))
    wait_for(lambda: len(cluster.live_jobs("ok-")) == 2, what="the Jobs")
    wait_for(lambda: (cluster.jobset("ok") or {}).get("status"), what="a status")
    settle(shim)
    # Many passes (Job events, the status write), one generation, one validation.
    assert shim.stats.reconciles > 1
    assert shim.spec_check.validations == 1
