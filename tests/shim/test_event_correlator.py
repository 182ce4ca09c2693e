"""Events are counted, combined and budgeted as client-go's event correlator does.

Unit rows run on a clock the test moves; the end-to-end rows record through a real recorder
into the fake API server and read the Event objects back.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from fakekube import FakeKube
from shim.event_correlator import COMBINED_PREFIX, SPAM_BURST, EventCorrelator
from shim.events import EventRecorder
from shim.kube import Kube

JS = {
    "apiVersion": "jobset.x-k8s.io/v1alpha2",
    "kind": "JobSet",
    "metadata": {"name": "js", "namespace": "default", "uid": "u1"},
}
OTHER = {**JS, "metadata": {**JS["metadata"], "name": "other", "uid": "u2"}}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _body(js: dict = JS, reason: str = "R", message: str = "m", event_type: str = "Normal"
          ) -> dict[str, Any]:
    return EventRecorder.body(_NoKube, js, event_type, reason, message)  # type: ignore[arg-type]


class _NoKube:
    controller_name = "c"
    identity = "me"


def test_the_same_event_again_is_a_count_on_the_first():
    corr = EventCorrelator(clock=Clock())
    first = corr.correlate(_body())
    assert first is not None and first.patch is None
    again = corr.correlate(_body())
    assert again is not None
    assert again.body["metadata"]["name"] == first.body["metadata"]["name"]
    assert again.patch is not None and again.patch["count"] == 2
    assert corr.correlate(_body()).patch["count"] == 3
    # Another message, reason, type or object is another event.
    for other in (_body(message="n"), _body(reason="S"), _body(event_type="Warning"),
                  _body(OTHER)):
        assert corr.correlate(other).patch is None


def test_the_tenth_distinct_message_in_ten_minutes_is_combined():
    clock = Clock()
    corr = EventCorrelator(clock=clock)
    for i in range(9):
        write = corr.correlate(_body(message=f"m{i}"))
        assert write.patch is None and write.body["message"] == f"m{i}"
    tenth = corr.correlate(_body(message="m9"))
    assert tenth.patch is None and tenth.body["message"] == COMBINED_PREFIX + "m9"
    eleventh = corr.correlate(_body(message="m10"))
    assert eleventh.body["metadata"]["name"] == tenth.body["metadata"]["name"]
    assert eleventh.patch == {"count": 2, "lastTimestamp": eleventh.body["lastTimestamp"],
                              "message": COMBINED_PREFIX + "m10"}
    # Ten minutes of quiet and the group starts over.
    clock.now += 601
    assert corr.correlate(_body(message="m11")).body["message"] == "m11"


def test_an_object_gets_25_events_then_one_every_five_minutes():
    clock = Clock()
    corr = EventCorrelator(clock=clock)
    writes = [corr.correlate(_body(message=f"m{i}")) for i in range(20_000)]
    assert sum(w is not None for w in writes) == SPAM_BURST
    assert corr.dropped == 20_000 - SPAM_BURST
    # Another JobSet has a budget of its own.
    assert corr.correlate(_body(OTHER)) is not None
    clock.now += 299
    assert corr.correlate(_body(message="late")) is None
    clock.now += 2
    assert corr.correlate(_body(message="later")) is not None
    assert corr.correlate(_body(message="later still")) is None


@pytest.fixture
def fake() -> Iterator[FakeKube]:
    with FakeKube() as kube:
        yield kube


def _events(fake: FakeKube) -> list[dict[str, Any]]:
    items, _ = fake.store.list(fake.store.resource_for("", "v1", "events"), "default")
    return items


@pytest.mark.waits
def test_a_flood_is_25_event_objects_and_a_repeat_is_counted(fake):
    cfg = client.Configuration()
    cfg.host = fake.url
    recorder = EventRecorder(Kube(client.ApiClient(cfg)), "c", "me")
    recorded = [recorder.record(JS, "Normal", "Flood", f"m{i}") for i in range(2000)]
    assert sum(recorded) == SPAM_BURST
    events = _events(fake)
    assert len(events) == 10  # nine as they came, then one combined, counted
    combined = [e for e in events if e["message"].startswith(COMBINED_PREFIX)]
    assert [e["count"] for e in combined] == [SPAM_BURST - 9]
    assert len(fake.writes("/events", "POST")) == 10
    assert len(fake.writes("/events/", "PATCH")) == SPAM_BURST - 10


@pytest.mark.waits
def test_a_count_on_an_expired_event_creates_it_again(fake):
    cfg = client.Configuration()
    cfg.host = fake.url
    recorder = EventRecorder(Kube(client.ApiClient(cfg)), "c", "me")
    assert recorder.record(JS, "Warning", "Again", "m")
    [first] = _events(fake)
    events_rt = fake.store.resource_for("", "v1", "events")
    fake.store.delete(events_rt, "default", first["metadata"]["name"], {})
    assert recorder.record(JS, "Warning", "Again", "m")
    [again] = _events(fake)
    assert again["metadata"]["name"] == first["metadata"]["name"] and again["count"] == 2
    # Known again: the next one is a count on it.
    assert recorder.record(JS, "Warning", "Again", "m")
    assert [e["count"] for e in _events(fake)] == [3]
