"""Which JobSet an event wakes, and when: an update of what it owns is batched, the rest not."""

from __future__ import annotations

from typing import Any

import pytest

from shim.owned import OwnedIndex
from shim.wakes import Wakes
from shim.workqueue import WorkQueue
from support.waiting import HANG_GUARD

pytestmark = pytest.mark.waits

CONTROLLER = "jobset-decider.io/shim"
KEY = ("default", "js")


def job(name: str = "js-w-0", rv: str = "1", owner: str = "js") -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {
        "name": name, "namespace": "default", "uid": f"uid-{name}", "resourceVersion": rv,
        "labels": {"jobset.sigs.k8s.io/jobset-name": owner},
        "ownerReferences": [{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                             "name": owner, "uid": "js-uid", "controller": True}]}}


def jobset(name: str = "js", managed_by: str = CONTROLLER) -> dict[str, Any]:
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": name, "namespace": "default", "uid": "js-uid"},
            "spec": {"managedBy": managed_by}}


def wakes(period: float = 30.0, awaiting: bool = False) -> tuple[Wakes, WorkQueue, list[Any]]:
    queue = WorkQueue()
    forgotten: list[Any] = []
    w = Wakes(queue, OwnedIndex(),
              ours=lambda js: js["spec"].get("managedBy") == CONTROLLER,
              batch_period=period,
              awaiting=lambda key: awaiting,
              forget=forgotten.append,
              jobsets_naming=lambda ns, name: [])
    return w, queue, forgotten


def test_a_burst_of_owned_updates_waits_the_period_and_gets_one_pass():
    # As its pods end a Job's status moves 3-4 times within seconds (the Job controller's
    # 1 s batches), 5 Jobs at once: one pass reads them all.
    w, queue, _ = wakes(period=0.2)
    w.on_owned("MODIFIED", job(rv="2"), job(rv="1"))
    due = queue.scheduled(KEY)
    assert due is not None and len(queue) == 0, "an update queued its JobSet at once"
    for rv in range(3, 8):
        w.on_owned("MODIFIED", job(f"js-w-{rv % 2}", str(rv)), job(f"js-w-{rv % 2}", "1"))
    assert queue.scheduled(KEY) == due, "a later update of the burst moved the first's due time"
    assert w.pending()
    assert queue.get(HANG_GUARD) == KEY
    queue.done(KEY)
    assert queue.scheduled(KEY) is None and len(queue) == 0 and not w.pending()
    assert queue.get(0) is None, "the burst got more than one pass"


@pytest.mark.parametrize("etype", ["ADDED", "DELETED"],
                         ids=["created-child-is-the-next-step", "deleted-child-is-the-next-step"])
def test_a_create_or_delete_wakes_its_jobset_at_once(etype: str):
    # A restart creates the new Jobs once the old ones are gone: a delete is the next step.
    w, queue, _ = wakes()
    w.on_owned(etype, job(), job() if etype == "DELETED" else None)
    assert len(queue) == 1 and queue.scheduled(KEY) is None


def test_an_update_while_the_jobset_awaits_its_own_writes_wakes_it_at_once():
    # A suspended Job or a foreground delete shows as an update: the pass put off for it runs.
    w, queue, _ = wakes(awaiting=True)
    w.on_owned("MODIFIED", job(rv="2"), job(rv="1"))
    assert len(queue) == 1 and queue.scheduled(KEY) is None


def test_a_period_of_zero_is_a_pass_per_update():
    w, queue, _ = wakes(period=0)
    w.on_owned("MODIFIED", job(rv="2"), job(rv="1"))
    assert len(queue) == 1 and not w.pending()


def test_a_pass_that_starts_claims_the_batched_wake():
    # A JobSet event ran a pass first: it read the update, so the batched wake is dropped.
    w, queue, _ = wakes()
    w.on_owned("MODIFIED", job(rv="2"), job(rv="1"))
    w.on_jobset("MODIFIED", jobset(), jobset())
    assert queue.get(0) == KEY
    w.claim(KEY)
    queue.done(KEY)
    assert queue.scheduled(KEY) is None and not w.pending()


def test_claiming_leaves_a_schedule_that_is_not_the_batched_wake():
    # A retry put in after the wake's was dropped (an earlier due) is the queue's, not ours.
    w, queue, _ = wakes()
    w.on_owned("MODIFIED", job(rv="2"), job(rv="1"))
    retry = queue.add_after(KEY, 5.0)
    assert not w.pending()
    w.claim(KEY)
    assert queue.scheduled(KEY) == retry


def test_a_pod_update_of_a_jobset_is_batched_by_its_label():
    w, queue, _ = wakes()
    pod = {"metadata": {"name": "p", "namespace": "default",
                        "labels": {"jobset.sigs.k8s.io/jobset-name": "js"}}}
    w.on_pod("MODIFIED", pod, pod)
    assert len(queue) == 0 and queue.scheduled(KEY) is not None
    w.on_pod("ADDED", {"metadata": {"name": "q", "namespace": "default"}}, None)
    assert len(queue) == 0, "a pod without the label woke a JobSet"


@pytest.mark.parametrize("managed_by,queued", [(CONTROLLER, 1), ("someone.else/ctl", 0)],
                         ids=["ours-at-once", "not-ours-never"])
def test_a_jobset_event_is_never_batched(managed_by: str, queued: int):
    w, queue, forgotten = wakes()
    w.on_jobset("MODIFIED", jobset(managed_by=managed_by), None)
    assert len(queue) == queued and queue.scheduled(KEY) is None
    w.on_jobset("DELETED", jobset(managed_by=managed_by), None)
    assert forgotten == [KEY]


def test_an_update_of_what_no_jobset_controls_wakes_nothing():
    w, queue, _ = wakes()
    orphan = job()
    orphan["metadata"]["ownerReferences"] = []
    w.on_owned("MODIFIED", orphan, orphan)
    assert len(queue) == 0 and not w.pending()


def test_a_pass_that_runs_claims_its_put_off_fallback_too():
    # Put off for its own writes, then run once the event bringing them came: the fallback
    # wake it left is answered, and dropped.
    w, queue, _ = wakes()
    w.put_off(KEY, 5.0)
    assert queue.scheduled(KEY) is not None and not w.pending(), "a put-off is no batched wake"
    w.claim(KEY)
    assert queue.scheduled(KEY) is None
