"""A careless (or hostile) decider cannot make the shim spin or flood the API server.

Against the fake API server: a decider answering `requeue_after` 1 ms for ever, and one
answering 20,000 Event actions in one plan. The bounds asserted are upper bounds on work done
(Decide calls, requests): a slow machine only does less.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from decider_api.v1 import decider_pb2 as pb
from shim.event_correlator import SPAM_BURST
from tests.shim.helpers import NS, ScriptedDecider, jobset, rjob, wait_for

pytestmark = pytest.mark.waits

N_EVENTS = 20_000


def _name(req: pb.DecideRequest) -> str:
    return json.loads(req.jobset_json)["metadata"]["name"]


def test_a_1ms_requeue_is_honoured_once_then_rate_limited(cluster, shims):
    calls: list[float] = []

    def answer(req: pb.DecideRequest, _: Any) -> pb.DecideResponse:
        calls.append(time.monotonic())
        out = pb.DecideResponse()
        out.requeue_after.nanos = 1_000_000
        return out

    floor = 0.25
    shim = shims.start(decider=ScriptedDecider(answer), min_requeue_after=floor,
                       max_requeue_after=1.0)
    cluster.create_jobset(jobset("rq", rjob("workers", 1)))
    # 0, 1 ms, then 0.25, 0.5, 1, 1, ... s apart: six calls take at least 1.75 s.
    wait_for(lambda: len(calls) >= 6, timeout=30, what="six Decide calls")
    elapsed = time.monotonic() - calls[0]
    assert elapsed >= 1.75 - 0.05, [round(t - calls[0], 3) for t in calls]
    # And in the seconds after, at most one a second (the cap); 1 ms apart it was ~333.
    start, seen = time.monotonic(), len(calls)
    time.sleep(2.0)
    waited = time.monotonic() - start
    assert len(calls) - seen <= waited / 1.0 + 1, len(calls) - seen
    assert shim.stats.errors == 0


def test_a_plan_of_20000_events_writes_the_jobsets_budget(cluster, shims):
    def answer(req: pb.DecideRequest, _: Any) -> pb.DecideResponse:
        meta = json.loads(req.jobset_json)["metadata"]
        if meta["name"] != "ev":
            return pb.DecideResponse()
        return pb.DecideResponse(actions=[
            pb.Action(type=pb.ACTION_TYPE_EVENT, name="ev", uid=meta["uid"],
                      event=pb.Event(type="Normal", reason="Flood", message=f"m{i}"))
            for i in range(N_EVENTS)])

    shim = shims.start(decider=ScriptedDecider(answer))
    cluster.create_jobset(jobset("ev", rjob("workers", 1)))
    recorder = shim.applier.recorder
    wait_for(lambda: recorder.correlator.dropped >= N_EVENTS - SPAM_BURST, timeout=60,
             what="the plan applied")
    assert shim.applier.sink.flush(30)
    writes = [r for r in cluster.kube.writes("/namespaces/default/events") if r.code < 300]
    assert len(writes) == SPAM_BURST
    flood = [e for e in cluster.event_objects("ev") if e["reason"] == "Flood"]
    # Nine as they came, then one combined from the similar ones, counted.
    assert len(flood) == 10
    assert sum(e["count"] for e in flood) == SPAM_BURST
    assert shim.applier.sink.dropped == 0
    assert NS == "default"
