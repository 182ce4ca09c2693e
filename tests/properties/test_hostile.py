"""Hostile requests through a real server: out-of-range timestamps, lone surrogates, huge and
negative counts and pathological patterns. Every answer is a plan or a refusal naming the field
(INVALID_ARGUMENT, or RESOURCE_EXHAUSTED for sheer size), and it comes within a time bound."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from decider.service.server import BackgroundServer
from decider_api.v1 import decider_pb2 as pb
from decider_api.v1 import decider_pb2_grpc as pb_grpc
from properties.strategies import examples, observeds, paths, to_request

pytestmark = pytest.mark.waits

# Far above what any of these inputs needs, even on a loaded machine (milliseconds quiet), far
# below "unbounded": a pathological pattern under a backtracking engine (days), or a loop over
# 2^31 replicas (hours), runs past it. A hang guard, not a speed test.
TIME_BOUND = 30.0
ANSWERS = {grpc.StatusCode.OK, grpc.StatusCode.INVALID_ARGUMENT,
           grpc.StatusCode.RESOURCE_EXHAUSTED}
SURROGATE = "\x00SURROGATE\x00"  # planted as text, then turned into a "\ud800" JSON escape
HUGE = (-(2**63), -(2**31), -1, 2**31 - 1, 2**31, 2**53 + 1, 2**63, 10**30)
PATHOLOGICAL = ("(a+)+$", "(.*)*X", "(x+x+)+y", "((a|aa)+)+b", "(a|a?)+$", "(\\w+\\s?)*$",
                "^(([a-z])+.)+[A-Z]([a-z])+$")
LONG_MESSAGES = ("a" * 5000 + "!", "x" * 4000, "Job has reached the specified backoff limit" * 50)

SETTINGS = settings(max_examples=examples(60), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def stub() -> Iterator[pb_grpc.DeciderStub]:
    big = [("grpc.max_receive_message_length", 256 << 20)]
    with BackgroundServer(workers=2, max_decision_seconds=TIME_BOUND * 2) as srv, \
            grpc.insecure_channel(srv.target, big) as channel:
        yield pb_grpc.DeciderStub(channel)


def _set(root: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    parent = root
    for step in path[:-1]:
        parent = parent[step]
    parent[path[-1]] = value
    return root


@st.composite
def hostile_jobsets(draw: st.DrawFn, base: dict[str, Any]) -> str:
    """The JobSet's JSON with hostile values planted: huge or negative counts, pathological
    failure-message patterns with long messages to match, lone surrogates in values and keys."""
    js = json.loads(json.dumps(base))
    rjobs = js["spec"].get("replicatedJobs") or []
    # Often one hostile value alone, so that most requests get past the first refusal.
    kinds = draw(st.lists(st.sampled_from(["count", "pattern", "pattern", "surrogate-value",
                                           "surrogate-key", "anywhere-huge"]),
                          min_size=1, max_size=3))
    # Counts and patterns go into the well-formed spec first; what replaces whole subtrees
    # (a surrogate or a huge number anywhere) comes last.
    for kind in sorted(kinds, key=lambda k: k not in ("count", "pattern")):
        if kind == "count" and rjobs:
            rjob = draw(st.sampled_from(rjobs))
            key = draw(st.sampled_from(["replicas", "parallelism", "completions"]))
            target = rjob if key == "replicas" else rjob["template"].setdefault("spec", {})
            target[key] = draw(st.sampled_from(HUGE))
        elif kind == "pattern":
            policy = js["spec"].setdefault("failurePolicy", {})
            if not isinstance(policy, dict):
                continue
            policy["maxRestarts"] = draw(st.sampled_from((0, 3, 3, 3, *HUGE)))
            # First, so that it is the rule a failed Job is matched against.
            rules = policy.get("rules") if isinstance(policy.get("rules"), list) else []
            policy["rules"] = rules
            rules.insert(0, {
                "name": f"r{draw(st.integers(0, 9))}", "action": "FailJobSet",
                "onJobFailureMessagePatterns": [draw(st.sampled_from(PATHOLOGICAL))]})
        elif kind == "surrogate-value":
            js = _set(js, draw(st.sampled_from(paths(js))), SURROGATE)
        elif kind == "surrogate-key":
            dicts = [p for p in paths(js) if isinstance(_get(js, p), dict)]
            if dicts:
                _get(js, draw(st.sampled_from(dicts)))["k" + SURROGATE] = 1
        elif kind == "anywhere-huge":
            js = _set(js, draw(st.sampled_from(paths(js))), draw(st.sampled_from(HUGE)))
    return json.dumps(js).replace(json.dumps(SURROGATE)[1:-1], "\\ud800")


def _get(root: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        root = root[step]
    return root


@st.composite
def hostile_requests(draw: st.DrawFn) -> pb.DecideRequest:
    observed = draw(observeds())
    req = to_request(observed)
    req.jobset_json = draw(hostile_jobsets(observed.jobset))
    if draw(st.integers(0, 3)) == 0:
        int64 = [v for v in HUGE if -(2**63) <= v < 2**63]
        req.now.seconds = draw(st.sampled_from((*int64, 253_402_300_799, 253_402_300_800,
                                                -62_135_596_801, req.now.seconds)))
        req.now.nanos = draw(st.sampled_from((0, -1, 999_999_999, 1_000_000_000, 2**31 - 1)))
    for job in req.jobs:
        if draw(st.integers(0, 3)) == 0:
            for counter in ("active", "ready", "succeeded", "failed"):
                setattr(job, counter, draw(st.sampled_from((0, -1, -(2**31), 2**31 - 1))))
        if draw(st.integers(0, 1)) == 0:
            job.conditions.add(type="Failed", status="True", reason="PodFailurePolicy",
                               message=draw(st.sampled_from(LONG_MESSAGES)))
    return req


def _answer(call: Any) -> tuple[grpc.StatusCode, str]:
    started = time.monotonic()
    try:
        call()
        code, details = grpc.StatusCode.OK, ""
    except grpc.RpcError as exc:
        code, details = exc.code(), exc.details() or ""
    took = time.monotonic() - started
    assert took < TIME_BOUND, f"took {took:.1f}s ({code.name}: {details[:200]})"
    assert code in ANSWERS, f"{code.name}: {details}"
    if code != grpc.StatusCode.OK:
        assert ": " in details, f"no field named: {details}"
    event(f"{code.name} {details.split(':')[0][:40]}")
    return code, details


@SETTINGS
@given(hostile_requests())
def test_hostile_decide(stub: pb_grpc.DeciderStub, req: pb.DecideRequest) -> None:
    _answer(lambda: stub.Decide(req, timeout=TIME_BOUND * 4))


@SETTINGS
@given(hostile_requests())
def test_hostile_admission_and_gang_questions(stub: pb_grpc.DeciderStub,
                                              req: pb.DecideRequest) -> None:
    text = req.jobset_json
    _answer(lambda: stub.Validate(pb.ValidateRequest(object_json=text), timeout=TIME_BOUND * 4))
    _answer(lambda: stub.PlanGang(pb.PlanGangRequest(object_json=text), timeout=TIME_BOUND * 4))
    _answer(lambda: stub.PodSets(pb.PodSetsRequest(object_json=text), timeout=TIME_BOUND * 4))
