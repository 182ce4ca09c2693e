"""Events written in the background: a pass never waits for them, nor spends its tokens on them."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from kubernetes import client

from fakekube import FakeKube
from shim.event_correlator import Write
from shim.event_sink import EventSink
from shim.events import EventRecorder
from shim.kube import Kube
from shim.ratelimit import TokenBucket
from support.waiting import HANG_GUARD

pytestmark = pytest.mark.waits

JS = {
    "apiVersion": "jobset.x-k8s.io/v1alpha2",
    "kind": "JobSet",
    "metadata": {"name": "js", "namespace": "default", "uid": "u1"},
}


@pytest.fixture
def fake() -> Iterator[FakeKube]:
    with FakeKube() as kube:
        yield kube


def _kube(fake: FakeKube, limiter: TokenBucket | None = None) -> Kube:
    cfg = client.Configuration()
    cfg.host = fake.url
    return Kube(client.ApiClient(cfg), limiter=limiter)


def _reasons(fake: FakeKube) -> list[str]:
    items, _ = fake.store.list(fake.store.resource_for("", "v1", "events"), "default")
    return [e["reason"] for e in sorted(items, key=lambda e: int(e["metadata"]["resourceVersion"]))]


class Gate:
    """A may_write that holds the writer until opened, and can refuse (not the leader)."""

    def __init__(self) -> None:
        self.open = threading.Event()
        self.entered = threading.Event()
        self.refuse = False

    def __call__(self) -> None:
        self.entered.set()
        self.open.wait(HANG_GUARD)
        if self.refuse:
            raise RuntimeError("not the leader")


def test_a_pass_hands_events_over_without_waiting_and_they_are_written_in_order(fake):
    gate = Gate()
    sink = EventSink(_kube(fake), gate)
    recorder = EventRecorder(_kube(fake), "c", "me", sink=sink)
    for reason in ("First", "Second", "Third"):
        assert recorder.record(JS, "Normal", reason, "m")  # returns while the writer is held
    assert _reasons(fake) == []
    assert not sink.flush(0.1)
    gate.open.set()
    assert sink.flush(HANG_GUARD)
    assert _reasons(fake) == ["First", "Second", "Third"]
    sink.close()


def test_events_take_tokens_of_their_own_bucket(fake):
    kube = _kube(fake, TokenBucket(qps=1, burst=2))
    events = kube.for_events()
    assert events.limiter is not kube.limiter
    assert (events.limiter.qps, events.limiter.burst) == (1, 2)
    sink = EventSink(events)
    for reason in ("A", "B"):
        sink.send("default", Write(EventRecorder(kube, "c", "me").body(JS, "Normal", reason,
                                                                   "m")))
    assert sink.flush(HANG_GUARD)
    # The pass's own bucket is untouched: its next two requests go at once.
    assert kube.limiter.reserve() == 0.0 and kube.limiter.reserve() == 0.0
    sink.close()


def test_a_full_queue_drops_events_and_a_refused_write_is_logged_not_raised(fake, caplog):
    gate = Gate()
    sink = EventSink(_kube(fake), gate, max_queued=2)
    body = EventRecorder(_kube(fake), "c", "me").body
    assert sink.send("default", Write(body(JS, "Normal", "A", "m")))
    assert gate.entered.wait(HANG_GUARD)
    # The writer holds A; B and C wait; D finds the queue full.
    assert sink.send("default", Write(body(JS, "Normal", "B", "m")))
    assert sink.send("default", Write(body(JS, "Normal", "C", "m")))
    assert not sink.send("default", Write(body(JS, "Normal", "D", "m")))
    assert sink.dropped == 1
    gate.refuse = True
    gate.open.set()
    assert sink.flush(HANG_GUARD)
    assert _reasons(fake) == []
    assert "not recorded: not the leader" in caplog.text
    gate.refuse = False
    assert sink.send("default", Write(body(JS, "Normal", "E", "m")))
    sink.close()
    assert _reasons(fake) == ["E"]
    # Closed: nothing more is taken.
    assert not sink.send("default", Write(body(JS, "Normal", "F", "m")))
