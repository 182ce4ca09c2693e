"""The shim's own warnings are told once an interval per JobSet and key, and truncated."""

from __future__ import annotations

import pytest
from kubernetes import client

from fakekube import FakeKube
from shim.events import MAX_MESSAGE, EventRecorder
from shim.kube import Kube

pytestmark = pytest.mark.waits

JS = {
    "apiVersion": "jobset.x-k8s.io/v1alpha2",
    "kind": "JobSet",
    "metadata": {"name": "js", "namespace": "default", "uid": "u1"},
}


@pytest.fixture
def recorded():
    with FakeKube() as fake:
        cfg = client.Configuration()
        cfg.host = fake.url
        recorder = EventRecorder(Kube(client.ApiClient(cfg)), "c", "me")

        def events() -> list[tuple[str, str]]:
            return [(e["reason"], e["message"]) for e in _items(fake)]

        recorder.counts = lambda: sorted(  # type: ignore[attr-defined]
            (e["involvedObject"]["uid"], e["reason"], e["message"], e["count"])
            for e in _items(fake))
        yield recorder, events


def _items(fake: FakeKube) -> list[dict]:
    items, _ = fake.store.list(fake.store.resource_for("", "v1", "events"), "default")
    return items


def test_the_same_warning_is_told_once_per_interval_and_again_after_forget(recorded):
    recorder, events = recorded
    assert recorder.warn_once(JS, "PlanRefused", "m", ("plan", "0"), 60.0)
    assert not recorder.warn_once(JS, "PlanRefused", "m", ("plan", "0"), 60.0)
    assert recorder.warn_once(JS, "PlanRefused", "other", ("plan", "1"), 60.0)
    other_js = {**JS, "metadata": {**JS["metadata"], "uid": "u2"}}
    assert recorder.warn_once(other_js, "PlanRefused", "m", ("plan", "0"), 60.0)
    assert len(events()) == 3
    recorder.forget("u1")
    assert recorder.warn_once(JS, "PlanRefused", "m", ("plan", "0"), 60.0)
    assert recorder.warn_once(JS, "X", "expired", "k", 0.0)
    assert recorder.warn_once(JS, "X", "expired", "k", 0.0)  # a zero interval never holds back
    # Told again, the same event is counted on the first, as client-go's recorder counts it.
    assert recorder.counts() == [
        ("u1", "PlanRefused", "m", 2), ("u1", "PlanRefused", "other", 1),
        ("u1", "X", "expired", 2), ("u2", "PlanRefused", "m", 1)]


def test_a_long_message_is_cut_to_the_event_limit(recorded):
    recorder, events = recorded
    recorder.record(JS, "Warning", "DecisionRefused", "x" * 5000)
    [(reason, message)] = events()
    assert reason == "DecisionRefused" and len(message) == MAX_MESSAGE
    assert message.endswith("...")
