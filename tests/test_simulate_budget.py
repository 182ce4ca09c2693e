"""Simulate's byte budget: one message limit for the whole answer, spent pass by pass.

A simulation's answer carries every pass's plan. Before the budget, Simulate built every step
and only then was its serialized answer refused (1.1 KB of request: 4 s and 650 MB in a
worker); now it stops at the first pass whose steps would not fit, and answers that fit are
unchanged. The structure is asserted (which pass it stopped at, how many Decide passes ran),
never wall time.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import grpc
import pytest
import yaml

import decider.core.simulate as core_simulate
from decider.contract.convert import observed_from_proto
from decider.contract.limits import DEFAULT, Limits
from decider.core.errors import TooLarge
from decider.core.model import Observed, Options, Plan
from decider.core.simulate import JOB_FAILED, SimEvent, Step, simulate
from decider.service import dispatch
from decider.service.server import BackgroundServer
from decider_api.v1 import decider_pb2 as pb
from decider_client import DeciderClient, observe

ROOT = Path(__file__).resolve().parent.parent
START = datetime(2026, 1, 1, tzinfo=UTC)
OK, RESOURCE_EXHAUSTED = 0, 8
# "... stopped at pass 4 (+0s) ...": where the simulation gave up.
STOPPED = re.compile(r"stopped at pass (\d+) \(\+(\d+)s\)")


def request(workers: int, *fails: tuple[str, int], max_passes: int = 1000,
            max_restarts: int = 1) -> pb.SimulateRequest:
    """leader-workers.yaml with `workers` workers, its Jobs failing as `fails` says: every
    failure is a restart that deletes and recreates every Job."""
    js = yaml.safe_load((ROOT / "examples" / "leader-workers.yaml").read_text())
    js["spec"]["replicatedJobs"][1]["replicas"] = workers
    js["spec"]["failurePolicy"] = {"maxRestarts": max_restarts}
    req = pb.SimulateRequest(observed=observe.build_decide_request(js, [], START),
                             max_passes=max_passes)
    for job, at in fails:
        req.events.add(type=pb.SIMULATION_EVENT_TYPE_JOB_FAILED, job=job, at_seconds=at)
    return req


def answer(req: pb.SimulateRequest, lim: Limits = DEFAULT) -> dispatch.Reply:
    return dispatch.answer("Simulate", req.SerializeToString(), lim)


@pytest.fixture
def decide_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """How many Decide passes a simulation ran: each call, counted."""
    calls: list[int] = []
    real = core_simulate.decide

    def counted(observed: Observed) -> Plan:
        calls.append(observed.options.max_plan_bytes)
        return real(observed)

    monkeypatch.setattr(core_simulate, "decide", counted)
    yield calls


def step_sizes(req: pb.SimulateRequest) -> tuple[list[int], int]:
    """Each step's bytes in the answer under the default limit, and the whole answer's."""
    reply = answer(req)
    assert reply.code == OK, reply.message
    resp = pb.SimulateResponse.FromString(reply.body)
    one = pb.SimulateResponse()
    sizes = []
    for step in resp.steps:
        one.steps.add().CopyFrom(step)
        sizes.append(one.ByteSize())
        one.Clear()
    return sizes, len(reply.body)


# ---- refused early ---------------------------------------------------------------------------

FAIL_TWICE = (("trainer-workers-0", 0), ("trainer-workers-0", 10))


# Unbounded, each of these runs 10 passes: create, record the failure, delete, recreate, record,
# settle; the second failure, at +10s, repeats the restart.
@pytest.mark.parametrize("workers,lim,stop_pass", [
    # The reported request: 20,001 Jobs created three times; the answer would be 129 MB. Pass 1
    # (61.8 MB) and the restart's deletes fit; pass 4's creates do not.
    (20_000, DEFAULT, 4),
    # The same shape at a small limit: the limit is the one configured, not the default.
    (50, Limits(max_message_bytes=200_000), 4),
    # A limit below the first plan: refused at pass 1, its Jobs' manifests never built.
    (50, Limits(max_message_bytes=100_000), 1),
], ids=["20k-workers-default-limit", "50-workers-200kB-limit", "50-workers-100kB-limit"])
def test_an_answer_over_the_limit_stops_at_the_first_pass_past_it(
        decide_calls: list[int], workers: int, lim: Limits, stop_pass: int) -> None:
    reply = answer(request(workers, *FAIL_TWICE), lim)
    assert reply.code == RESOURCE_EXHAUSTED, reply.message
    assert reply.message.startswith("Simulate: the steps so far already need at least "), \
        reply.message
    assert f"over the limit of {lim.max_message_bytes:,} bytes per message" in reply.message
    stopped = STOPPED.search(reply.message)
    assert stopped is not None, reply.message
    assert int(stopped.group(1)) == stop_pass
    # Refused by Decide's own budget check, before the pass's manifests were built.
    assert "before building its plan (spec.replicatedJobs[1]: creating " in reply.message
    assert len(decide_calls) == stop_pass
    # Each pass was lent only what the steps before it left.
    assert decide_calls[0] == lim.max_message_bytes
    assert decide_calls == sorted(decide_calls, reverse=True)


@pytest.mark.parametrize("over_by", [1, 100], ids=["1-byte-over", "100-bytes-over"])
def test_a_pass_without_creates_is_charged_once_built(decide_calls: list[int],
                                                      over_by: int) -> None:
    """Pass 2 records the failure and creates nothing: Decide has no floor to check, so the
    step is built, charged its exact size, and the simulation stops there."""
    req = request(50, *FAIL_TWICE)
    sizes, _ = step_sizes(req)
    decide_calls.clear()
    lim = Limits(max_message_bytes=sizes[0] + sizes[1] - over_by)
    reply = answer(req, lim)
    assert reply.code == RESOURCE_EXHAUSTED, reply.message
    assert reply.message == (
        f"Simulate: the steps so far already need {sizes[0] + sizes[1]:,} bytes, over the "
        f"limit of {lim.max_message_bytes:,} bytes per message; stopped at pass 2 (+0s)")
    assert len(decide_calls) == 2


# ---- answered when it fits -------------------------------------------------------------------

@pytest.mark.parametrize("req", [
    request(50, *FAIL_TWICE),
    request(50, ("trainer-workers-0", 0), max_restarts=0),
    request(3),
    request(200, ("trainer-workers-1", 0), ("trainer-leader-0", 600), max_restarts=3),
    request(50, *FAIL_TWICE, max_passes=3),
], ids=["restart-then-fail", "fails-at-once", "no-events", "two-restarts", "pass-limit"])
def test_an_answer_that_just_fits_is_the_answer_of_an_unbounded_simulation(
        req: pb.SimulateRequest) -> None:
    _, size = step_sizes(req)
    free = answer(req, Limits(max_message_bytes=1 << 30))
    fits = answer(req, Limits(max_message_bytes=size))
    assert free.code == fits.code == OK, fits.message
    assert fits.body == free.body
    assert len(fits.body) == size
    # One byte less: the steps still fit, the outcome does not.
    over = answer(req, Limits(max_message_bytes=size - 1))
    assert over.code == RESOURCE_EXHAUSTED
    assert over.message.startswith(f"Simulate: the steps and their outcome need {size:,} bytes, "
                                   f"over the limit of {size - 1:,} bytes per message; the "
                                   "simulation ended at pass "), over.message


# ---- the configured limit --------------------------------------------------------------------

@pytest.mark.waits
@pytest.mark.parametrize("limit,code", [(20_000, RESOURCE_EXHAUSTED), (DEFAULT.max_message_bytes,
                                                                        OK)],
                         ids=["20kB-refused", "default-answered"])
def test_the_limit_is_the_one_the_server_was_started_with(limit: int, code: int) -> None:
    req = request(10, ("trainer-workers-0", 0))
    with BackgroundServer(max_message_bytes=limit) as srv, \
            DeciderClient(srv.target, timeout=30) as client:
        if code == OK:
            assert client.simulate(req).outcome.restarts == 1
            return
        with pytest.raises(grpc.RpcError) as err:
            client.simulate(req)
    assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert f"over the limit of {limit:,} bytes per message; stopped at pass " \
        in err.value.details(), err.value.details()


# ---- the core --------------------------------------------------------------------------------

BUDGET = 10 << 20
FAIL = [SimEvent(JOB_FAILED, 0, "trainer-workers-0")]


def _observed(max_plan_bytes: int) -> Observed:
    observed = observed_from_proto(request(50).observed)
    observed.options = Options(max_plan_bytes=max_plan_bytes)
    return observed


# 50 workers failing once: pass 1 creates the Jobs, pass 2 records the failure, pass 3 deletes
# the old attempt, pass 4 recreates it; then it settles (6 passes).
@pytest.mark.parametrize("charge,stop_pass,before_building", [
    (lambda s: 1, None, False),
    (lambda s: BUDGET // 3 + 1, 3, False),
    (lambda s: BUDGET + 1 if s.number == 2 else 0, 2, False),
    # What is left after pass 1 is below pass 4's manifests: Decide refuses them unbuilt.
    (lambda s: BUDGET - 1000 if s.number == 1 else 0, 4, True),
], ids=["a-byte-a-step-fits", "a-third-a-step-over-at-3", "one-step-over-the-whole",
        "little-left-for-the-recreate"])
def test_the_core_charges_each_step_what_the_caller_says(
        charge: Callable[[Step], int], stop_pass: int | None, before_building: bool) -> None:
    charged: list[int] = []

    def step_bytes(step: Step) -> int:
        charged.append(step.number)
        return charge(step)

    if stop_pass is None:
        sim = simulate(_observed(BUDGET), FAIL, 0, step_bytes)
        assert charged == [s.number for s in sim.steps] == [1, 2, 3, 4, 5, 6]
        return
    with pytest.raises(TooLarge) as err:
        simulate(_observed(BUDGET), FAIL, 0, step_bytes)
    text = str(err.value)
    assert f"over the limit of {BUDGET:,} bytes per message; stopped at pass {stop_pass} " \
        "(+0s)" in text, text
    assert ("before building its plan" in text) is before_building
    # A step refused before building is never charged.
    assert charged == list(range(1, stop_pass + (0 if before_building else 1)))


def test_the_core_without_a_charge_holds_each_pass_to_the_budget_alone() -> None:
    # As before the budget: a core caller that gives no step_bytes (tests, tools) sees each
    # pass's Decide refuse its own plan, in Decide's own words.
    with pytest.raises(TooLarge) as err:
        simulate(_observed(1000), FAIL)
    assert "the plan would hold at least" in str(err.value), str(err.value)
    assert "Simulate" not in str(err.value)
    sim = simulate(_observed(BUDGET), FAIL)
    assert sim.outcome is not None and sim.outcome.restarts == 1
