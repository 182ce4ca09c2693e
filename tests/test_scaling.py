"""No cost of a decision grows faster than linearly: in Jobs, replicated Jobs, failed Jobs or
status entries, under every feature gate, through the core and through the worker path.

Each situation of support/scaling.py is decided at a size and at twice that size along one
axis, and the work done must at most (about) double, counted by the lines of the decider's own
code executed (support/opcount.py): with the caches warm and, for reading the JobSet, cold.
The count does not move with the machine or its load. Work inside C, which lines do not see
(`x in some_list`), is timed by bench/scaling_times.py, beside the other figures of bench/.
"""

from __future__ import annotations

import pytest

from decider.contract.limits import Limits
from decider.core.decide import decide
from decider.core.errors import InvalidInput
from decider.core.model import Observed
from decider.core.spec_cache import CACHES
from decider.service import dispatch
from support.opcount import lines_executed
from support.scaling import SITUATIONS, Shape, request

# Twice the size must cost at most this much more (a linear cost plus a fixed part is below 2;
# the quadratic costs this guards against were 3.6 to 3.9 at these sizes).
LINES_BOUND = 2.1
# Strings are checked whatever the request's size (by default only past 256 KiB, a step that
# would fall between two sizes).
LIMITS = Limits(max_string_bytes=4096)

AXES = {
    # Replicated Jobs of one Job each: also status entries, failed Jobs (one per replicated Job
    # in restart_job_failed) and failure-rule targets.
    "replicated Jobs": (Shape(128, 1), Shape(256, 1)),
    # Jobs of four replicated Jobs: also failed Jobs (`failed`), pods (`in_place`).
    "Jobs": (Shape(4, 128), Shape(4, 256)),
}


def _decide(observed: Observed) -> None:
    try:
        decide(observed)
    except InvalidInput:
        raise AssertionError("a scaling scenario must be decidable") from None


def _answer(payload: bytes) -> None:
    reply = dispatch.answer("Decide", payload, LIMITS)
    assert reply.code == dispatch.OK, reply.message


def _ratio(counts: list[int]) -> float:
    return counts[1] / counts[0]


@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("situation", SITUATIONS)
def test_core_work_is_linear(situation: str, axis: str) -> None:
    counts = []
    for shape in AXES[axis]:
        observed = SITUATIONS[situation](shape)
        _decide(observed)  # warm: the spec and the JobSet are read once
        counts.append(lines_executed(lambda observed=observed: _decide(observed)))
    assert _ratio(counts) <= LINES_BOUND, (situation, axis, counts)


@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("situation", ["steady", "restart_job_failed", "gang", "volumes"])
def test_reading_a_jobset_is_linear(situation: str, axis: str) -> None:
    """With the caches off, every pass reads and validates the whole JobSet."""
    counts = []
    for shape in AXES[axis]:
        observed = SITUATIONS[situation](shape)
        for cache in CACHES:
            cache.enabled = False
        try:
            counts.append(lines_executed(lambda observed=observed: _decide(observed)))
        finally:
            for cache in CACHES:
                cache.enabled = True
    assert _ratio(counts) <= LINES_BOUND, (situation, axis, counts)


@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("situation", ["steady", "restart", "recreate", "restart_job_steady",
                                       "failed", "resume", "in_place"])
def test_worker_path_work_is_linear(situation: str, axis: str) -> None:
    """Request bytes in, answer bytes out: parsing, limits, JSON, views, deciding, writing."""
    counts = []
    for shape in AXES[axis]:
        payload = request(SITUATIONS[situation](shape))
        _answer(payload)
        counts.append(lines_executed(lambda payload=payload: _answer(payload)))
    assert _ratio(counts) <= LINES_BOUND, (situation, axis, counts)
