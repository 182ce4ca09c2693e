"""The shim's own warnings are told once an interval per JobSet and key, and truncated."""

from __future__ import annotations

import pytest
from kubernetes import client

from fakekube import FakeKube
from shim.events import MAX_MESSAGE, EventRecorder
from shim.kube import Kube

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
            items, _ = fake.store.list(fake.store.resource_for("", "v1", "events"), "default")
            return [(e["reason"], e["message"]) for e in items]

        yield recorder, events


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
    assert len(events()) == 6


def test_a_long_message_is_cut_to_the_event_limit(recorded):
    recorder, events = recorded
    recorder.record(JS, "Warning", "DecisionRefused", "x" * 5000)
    [(reason, message)] = events()
    assert reason == "DecisionRefused" and len(message) == MAX_MESSAGE
    assert message.endswith("...")
