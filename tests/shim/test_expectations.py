"""A pass is not decided on caches that do not show the last pass's own writes yet."""

from __future__ import annotations

from typing import Any

import pytest

from shim.expectations import Expectations
from tests.shim.helpers import NS, jobset, rjob

JS = {"metadata": {"namespace": "ns", "name": "js", "uid": "js-uid", "resourceVersion": "10"}}
KEY = ("ns", "js")
OWNER = [{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": "js",
          "uid": "js-uid", "controller": True}]


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _job(name: str, uid: str, **meta: Any) -> dict[str, Any]:
    return {"kind": "Job", "metadata": {"namespace": "ns", "name": name, "uid": uid,
                                        "ownerReferences": OWNER, **meta}}


def _expectations(cache: dict[tuple[str, str], dict], clock: Clock) -> Expectations:
    def lookup(namespace: str, owner: str, kind: str, name: str) -> dict | None:
        assert (namespace, owner) == ("ns", "js-uid")
        return cache.get((kind, name))

    return Expectations(lookup, {"Job", "Service"}, timeout=5.0, clock=clock)


def _at(rv: str) -> dict[str, Any]:
    return {"metadata": {**JS["metadata"], "resourceVersion": rv}}


def test_a_status_write_is_awaited_until_the_cached_jobset_moves_past_it():
    clock = Clock()
    exp = _expectations({}, clock)
    exp.status_written(JS, "10", "11")
    assert exp.unseen(KEY, _at("10")) == 5.0
    clock.now += 1
    assert exp.unseen(KEY, _at("10")) == 4.0
    # Our version, or any later one: the write is in the cache.
    assert exp.unseen(KEY, _at("12")) is None
    assert len(exp) == 0


def test_a_write_that_changed_nothing_brings_no_event_and_is_not_awaited():
    exp = _expectations({}, Clock())
    exp.status_written(JS, "10", "10")
    assert exp.unseen(KEY, _at("10")) is None


def test_creates_are_awaited_until_cached_with_their_uid_deletes_until_terminating_or_gone():
    cache: dict[tuple[str, str], dict] = {("Job", "old"): _job("old", "u-old")}
    exp = _expectations(cache, Clock())
    exp.created(JS, _job("new", "u-new"))
    exp.deleted(JS, "Job", "old", "u-old")
    assert exp.unseen(KEY, JS) is not None
    # A previous incarnation of the name is not the object created.
    cache[("Job", "new")] = _job("new", "u-before")
    assert exp.unseen(KEY, JS) is not None
    cache[("Job", "new")] = _job("new", "u-new")
    assert exp.unseen(KEY, JS) is not None  # the delete is not seen yet
    cache[("Job", "old")] = _job("old", "u-old", deletionTimestamp="2026-01-01T00:00:00Z")
    assert exp.unseen(KEY, JS) is None


def test_only_what_the_cache_will_hold_is_awaited():
    exp = _expectations({}, Clock())
    # A kind not watched, an object the JobSet does not control (a retained PVC has no owner),
    # an object without a UID: none would ever show, none is awaited.
    exp.created(JS, {"kind": "Workload", "metadata": {"name": "w", "uid": "u1",
                                                       "ownerReferences": OWNER}})
    exp.created(JS, {"kind": "Service", "metadata": {"name": "s", "uid": "u2"}})
    exp.created(JS, {"kind": "Job", "metadata": {"name": "j", "ownerReferences": OWNER}})
    exp.deleted(JS, "Workload", "w", "u1")
    assert exp.unseen(KEY, JS) is None


def test_an_expectation_never_met_is_dropped_after_the_timeout_and_the_jobset_gone_or_new():
    clock = Clock()
    exp = _expectations({}, clock)
    exp.created(JS, _job("new", "u-new"))
    clock.now += 5.0
    assert exp.unseen(KEY, JS) is None
    exp.created(JS, _job("new", "u-new"))
    assert exp.unseen(KEY, None) is None  # the JobSet is gone
    exp.created(JS, _job("new", "u-new"))
    other = {"metadata": {**JS["metadata"], "uid": "another-jobset-of-that-name"}}
    assert exp.unseen(KEY, other) is None
    exp.created(JS, _job("new", "u-new"))
    exp.forget(KEY)
    assert len(exp) == 0


@pytest.mark.waits
def test_a_pass_on_caches_behind_its_own_writes_is_put_off_and_sends_nothing(cluster, shims):
    """Deterministic: the caches are filled by lists (a reflector's first step) the test makes,
    so they stay behind the writes until it lists again."""
    cluster.create_jobset(jobset("exp", rjob("workers", 2)))
    shim = shims.build()

    def relist() -> None:
        for informer in shim.informers:
            informer._list(None)

    relist()
    key = (NS, "exp")
    assert shim.process(key)
    first = len(cluster.kube.audit)
    assert [r.code for r in cluster.kube.writes("/jobs$", "POST")] == [201, 201]
    assert shim.stats.reconciles == 1
    # The caches still show no Job and the JobSet before its status write: deciding now would
    # create both Jobs again (AlreadyExists, read back) and write a stale status (409).
    assert shim.process(key)
    assert len(cluster.kube.audit) == first
    assert (shim.stats.reconciles, shim.stats.deferred, shim.stats.conflicts) == (1, 1, 0)
    assert 4.0 < shim.queue.due_in(key) <= 5.0
    relist()
    assert shim.process(key)
    assert shim.stats.reconciles == 2
    # The pass ran: the fallback retry is no longer needed.
    assert shim.queue.due_in(key) is None
    assert [r.code for r in cluster.kube.writes("/jobs$", "POST")] == [201, 201]
    assert not [r for r in cluster.kube.audit if r.code == 409]


def test_a_patch_is_awaited_until_the_cached_object_moves_past_its_version():
    """A pass on a cache still holding the object as it was before the patch planned the same
    patch again (a gang minCount put back twice: two PATCHes, seen in CI under load)."""
    clock = Clock()
    cache = {("Job", "j"): _job("j", "u-j", resourceVersion="7")}
    exp = _expectations(cache, clock)
    before = exp.cached_version(JS, "Job", "j")
    assert before == "7"
    exp.patched(JS, "Job", "j", before)
    assert exp.unseen(KEY, _at("10")) == 5.0
    cache[("Job", "j")] = _job("j", "u-j", resourceVersion="8")
    assert exp.unseen(KEY, _at("10")) is None


def test_a_patch_of_an_object_not_in_the_cache_awaits_nothing():
    exp = _expectations({}, Clock())
    exp.patched(JS, "Job", "j", exp.cached_version(JS, "Job", "j"))
    exp.patched(JS, "Workload", "w", exp.cached_version(JS, "Workload", "w"))  # not watched
    assert exp.unseen(KEY, _at("10")) is None
