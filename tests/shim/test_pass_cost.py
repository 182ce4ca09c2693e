"""A pass reads what its JobSet has, whatever else the caches hold, and sends what a scan of
every cache would have found, byte for byte.

The caches here decode into tests/shim/pass_cost.py's Counted objects, which note every read of
a field during a measured pass: a scan reads each object it passes over, an index lookup only
the objects it returns.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC
from typing import Any

import pytest

from decider_client.observe import build_decide_request
from fakekube import FakeKube
from shim.controller import Shim
from shim.events import EventRecorder
from shim.indexes import (
    GANG_NAMES,
    JOBSET_NAMES,
    Indexer,
    gang_lookup,
    gang_values,
    jobset_values,
    jobsets_for_gang,
)
from shim.owned import GANG_NAME_PREFIX, jobset_owner, may_be_gang_name, named_children
from tests.shim.helpers import wait_for
from tests.shim.pass_cost import (
    JOBSET_NAME_LABEL,
    TALLY,
    Filler,
    RecordingDecider,
    build_shim,
    counted_decoding,
    gang_body,
    jobset_body,
    owner_ref,
    pod_body,
)

NS, OTHER = "team", "elsewhere"
Names = set[tuple[str, str, str]]


@pytest.fixture
def kube() -> Iterator[FakeKube]:
    fake = FakeKube(bookmark_interval=0.5).start()
    try:
        # For the whole test: objects that come later by watch are Counted too.
        with counted_decoding():
            yield fake
    finally:
        fake.stop()


def synced_shim(kube: FakeKube) -> tuple[Shim, RecordingDecider]:
    decider = RecordingDecider()
    shim = build_shim(kube, decider)
    shim.start_informers(60.0)
    return shim, decider


def one_pass(shim: Shim, key: tuple[str, str]) -> Names:
    with TALLY.measuring():
        assert shim.process(key)
    return TALLY.names()


def names_of(objs: list[dict[str, Any]]) -> Names:
    return {(o["kind"], o["metadata"]["namespace"], o["metadata"]["name"]) for o in objs}


def scanned(shim: Shim, jobset: dict[str, Any]) -> list[dict[str, Any]]:
    """The observation as the shim built it by scanning every cache: the reference."""
    meta = jobset["metadata"]
    ns, name, uid = meta["namespace"], meta["name"], meta["uid"]
    out = shim._owned.controlled(ns, uid)
    by_kind = {i.resource.kind: i for i in shim.informers}
    for kind, child in named_children(jobset):
        obj = by_kind[kind].get(ns, child)
        if obj is not None and jobset_owner(obj) != (ns, uid):
            out.append(obj)
    for informer in shim.gang_informers:
        out.extend(o for o in informer.items()
                   if o["metadata"].get("namespace") == ns
                   and may_be_gang_name(name, o["metadata"]["name"])
                   and jobset_owner(o) != (ns, uid))
    assert shim.pods is not None
    out.extend(p for p in shim.pods.items()
               if p["metadata"].get("namespace") == ns
               and (p["metadata"].get("labels") or {}).get(JOBSET_NAME_LABEL) == name)
    return out


def assert_sent_as_scanned(shim: Shim, decider: RecordingDecider, key: tuple[str, str]) -> None:
    jobset = shim.jobsets.get(*key)
    assert jobset is not None
    sent = decider.requests[-1]
    expected = build_decide_request(
        jobset, scanned(shim, jobset), sent.now.ToDatetime(tzinfo=UTC), shim.config.controller_name,
        shim.config.feature_gates, gang_api_version=shim.config.scheduling_api_version,
        gang_target=shim.config.gang_target)
    assert sent.SerializeToString(deterministic=True) == expected.SerializeToString(
        deterministic=True)


# ---- scaling ------------------------------------------------------------------------------

def read_by_one_pass(kube: FakeKube, unrelated: int) -> tuple[Names, int]:
    """A gang-scheduled JobSet with two pods among `unrelated` of each kind of bystander: what
    its pass reads, and how many objects the caches hold."""
    fill = Filler(kube.store)
    fill.jobset("train", NS, pods=2, gang=True)
    for i in range(unrelated):
        # Same names in another namespace; other JobSets' pods and gang objects in this one.
        fill.jobset(f"train-{i}", OTHER, pods=1, gang=True)
        fill.create(pod_body(f"serve-{i}", NS, "serve"))
        fill.create(gang_body("Workload", f"serve-{i}", NS, None))
    shim, _ = synced_shim(kube)
    try:
        return one_pass(shim, (NS, "train")), sum(len(i.items()) for i in shim.informers)
    finally:
        shim.shutdown()


@pytest.mark.waits
@pytest.mark.parametrize("unrelated", [10, 1000])
def test_a_pass_reads_no_object_of_another_jobset_however_many_there_are(
        kube: FakeKube, unrelated: int) -> None:
    read, cached = read_by_one_pass(kube, unrelated)
    assert cached >= 6 * unrelated
    # Its JobSet, its two pods, its Workload and PodGroup: at 10 bystanders as at 1,000.
    assert read == {("JobSet", NS, "train"), ("Pod", NS, "train-w-0-0-x0"),
                    ("Pod", NS, "train-w-1-0-x1"), ("Workload", NS, "train"),
                    ("PodGroup", NS, "train-w-0")}


# ---- the same observation -----------------------------------------------------------------

LONG = "l" * 40 + "-long-jobset-name-past-52"


@pytest.mark.waits
def test_the_observation_is_what_a_scan_finds_and_nothing_else_is_read(
        kube: FakeKube) -> None:
    fill = Filler(kube.store)
    body = jobset_body("train", NS, gang=True)
    body["spec"]["volumeClaimPolicies"] = [{"templates": [{"metadata": {"name": "data"}}]}]
    train = fill.create(body)
    neighbour = fill.create(jobset_body("train-w", NS, gang=True))
    fill.create(pod_body("train-a", NS, "train"))
    fill.create(pod_body("neighbour-a", NS, "train-w"))
    fill.create(gang_body("Workload", "train", NS, owner_ref(train)))
    # Named like train's: sent whoever holds them (the decider refuses to adopt them).
    fill.create(gang_body("Workload", "train-w-1", NS, owner_ref(neighbour)))
    fill.create(gang_body("PodGroup", "train", NS, None))
    fill.create(gang_body("PodGroup", "train-extra", NS,
                          {"apiVersion": "apps/v1", "kind": "Deployment", "name": "train",
                           "uid": "0000", "controller": True}))
    fill.create(pod_body("train-b", NS, "train"))
    # By name: a Service of someone else's, a retained PVC with no owner.
    fill.create({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "train",
                 "namespace": NS}, "spec": {"clusterIP": "None"}})
    fill.create({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                 "metadata": {"name": "data-train", "namespace": NS}, "spec": {}})
    # Not train's: a name that only starts like it, another namespace.
    fill.create(gang_body("Workload", "trainer", NS, None))
    fill.create(gang_body("Workload", "train", OTHER, None))
    fill.create(pod_body("train-c", OTHER, "train"))
    fill.create(pod_body("moves", NS, "train-w"))
    shim, decider = synced_shim(kube)
    try:
        # A pod that changes JobSet keeps its place in the cache's order: the request too.
        pods_rt = fill.rt["Pod"]
        kube.store.patch(pods_rt, NS, "moves",
                         {"metadata": {"labels": {JOBSET_NAME_LABEL: "train"}}},
                         "application/merge-patch+json")
        assert shim.pods is not None
        pods = shim.pods
        wait_for(lambda: dict.get(dict.get(pods.get(NS, "moves") or {}, "metadata") or {},
                                  "labels") == {JOBSET_NAME_LABEL: "train"}, what="relabel")
        read = one_pass(shim, (NS, "train"))
        assert_sent_as_scanned(shim, decider, (NS, "train"))
        sent = decider.requests[-1]
        # The list filled the cache in name order; "moves" became train's last, yet is sent
        # where the cache holds it, first.
        assert [p.name for p in sent.pods] == ["moves", "train-a", "train-b"]
        assert sorted((o.kind, o.name) for o in sent.objects) == [
            ("PersistentVolumeClaim", "data-train"), ("PodGroup", "train"),
            ("PodGroup", "train-extra"), ("Service", "train"), ("Workload", "train"),
            ("Workload", "train-w-1")]
        assert read == names_of(scanned(shim, shim.jobsets.get(NS, "train") or {})) | {
            ("JobSet", NS, "train")}
    finally:
        shim.shutdown()


@pytest.mark.waits
def test_past_52_characters_gang_objects_are_matched_on_the_prefix_as_a_scan_does(
        kube: FakeKube) -> None:
    fill = Filler(kube.store)
    fill.create(jobset_body(LONG, NS, gang=True))
    head = LONG[:GANG_NAME_PREFIX]
    fill.create(gang_body("PodGroup", f"{head}-0123456789", NS, None))
    # Exactly the prefix: filed under it, yet no name of this JobSet's.
    fill.create(gang_body("PodGroup", head, NS, None))
    fill.create(gang_body("PodGroup", f"{head}x-0123456789", NS, None))
    shim, decider = synced_shim(kube)
    try:
        read = one_pass(shim, (NS, LONG))
        assert_sent_as_scanned(shim, decider, (NS, LONG))
        assert [o.name for o in decider.requests[-1].objects] == [f"{head}-0123456789"]
        assert read == {("JobSet", NS, LONG), ("PodGroup", NS, f"{head}-0123456789"),
                        ("PodGroup", NS, head)}
    finally:
        shim.shutdown()


@pytest.mark.waits
def test_a_foreign_gang_object_wakes_the_jobsets_it_may_name_reading_no_other(
        kube: FakeKube) -> None:
    fill = Filler(kube.store)
    head = LONG[:GANG_NAME_PREFIX]
    for name in ("train", "train-w", "trainer", "tra", LONG, head + "-other-suffix", head):
        fill.create(jobset_body(name, NS))
    fill.create(jobset_body("train-w-5", NS, managed_by="someone/else"))
    fill.create(jobset_body("train", OTHER))
    for i in range(200):
        fill.create(jobset_body(f"bystander-{i}", NS))
    shim, _ = synced_shim(kube)
    woken: list[tuple[str, str]] = []
    shim.queue.add = woken.append  # type: ignore[method-assign]
    try:
        cases = {"train-w-5": [(NS, "train"), (NS, "train-w")],
                 f"{head}-0123456789": [(NS, LONG), (NS, head + "-other-suffix"), (NS, head)]}
        for gang_name, expected in cases.items():
            woken.clear()
            with TALLY.measuring():
                shim.wakes.on_gang("ADDED", gang_body("PodGroup", gang_name, NS, None), None)
            assert sorted(woken) == sorted(expected)
            # In the cache's order, as a scan of it met them.
            keys = [(j["metadata"]["namespace"], j["metadata"]["name"])
                    for j in shim.jobsets.items()]
            assert woken == [k for k in keys if k in expected]
            candidates = {("JobSet", NS, n) for _, n in expected} | {("JobSet", NS, "train-w-5")}
            assert TALLY.names() <= candidates
    finally:
        shim.shutdown()


# ---- the indexes themselves ---------------------------------------------------------------

def test_the_name_indexes_find_exactly_what_may_be_gang_name_accepts() -> None:
    rng = random.Random(7)
    head = "a" * (GANG_NAME_PREFIX - 2)

    def name() -> str:
        stem = head if rng.random() < 0.5 else ""
        return stem + "".join(rng.choice("ab-") for _ in range(rng.randint(1, 8))).strip("-") or "a"

    names = sorted({name() for _ in range(400)})
    gangs, jobsets = Indexer({GANG_NAMES: gang_values}), Indexer({JOBSET_NAMES: jobset_values})
    for n in names:
        obj = {"metadata": {"namespace": NS, "name": n}}
        gangs.stored((NS, n), obj, None)
        jobsets.stored((NS, n), obj, None)
    for j in names:
        found = [k[1] for k in gangs.keys(GANG_NAMES, gang_lookup(NS, j))
                 if may_be_gang_name(j, k[1])]
        assert found == [n for n in names if may_be_gang_name(j, n)], j
    for n in names:
        found = [k[1] for k in jobsets.keys(JOBSET_NAMES, jobsets_for_gang(NS, n))]
        assert found == [j for j in names if may_be_gang_name(j, n)], n


def test_an_indexer_follows_updates_and_deletes_in_the_stores_order() -> None:
    def by_label(o: dict[str, Any]) -> list[str]:
        return [o["metadata"]["labels"]["js"]]

    index = Indexer({"js": by_label})

    def pod(name: str, js: str) -> dict[str, Any]:
        return {"metadata": {"name": name, "labels": {"js": js}}}

    index.stored(("n", "a"), pod("a", "x"), None)
    index.stored(("n", "b"), pod("b", "y"), None)
    index.stored(("n", "c"), pod("c", "x"), None)
    index.stored(("n", "b"), pod("b", "x"), pod("b", "y"))
    assert index.keys("js", ["x"]) == [("n", "a"), ("n", "b"), ("n", "c")]
    assert index.keys("js", ["y"]) == []
    index.deleted(("n", "a"), pod("a", "x"))
    index.stored(("n", "a"), pod("a", "x"), None)
    assert index.keys("js", ["x", "y"]) == [("n", "b"), ("n", "c"), ("n", "a")]


# ---- the event recorder --------------------------------------------------------------------

class _CountingTold(dict):  # type: ignore[type-arg]
    reads = 0

    def __getitem__(self, key: Any) -> Any:
        type(self).reads += 1
        return dict.__getitem__(self, key)


class _NoKube:
    def resource(self, *_: Any) -> None:
        return None

    def create(self, *_: Any) -> None:
        return None


def test_warnings_on_thousands_of_jobsets_cost_no_walk_of_all_of_them_each() -> None:
    recorder = EventRecorder(_NoKube(), "c", "i")  # type: ignore[arg-type]
    recorder._told = _CountingTold()
    _CountingTold.reads = 0
    warnings = 6000
    for i in range(warnings):
        js = {"metadata": {"name": f"js-{i}", "namespace": NS, "uid": f"u{i}"}}
        recorder.warn_once(js, "Invalid", "m", "k", 24 * 3600.0)
    # Every entry is within its interval: nothing can be dropped, so a walk per warning past
    # the limit would cost ~1,900 walks of ~5,000 entries each.
    assert _CountingTold.reads <= 2 * warnings
