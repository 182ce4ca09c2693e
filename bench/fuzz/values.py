"""Hostile values: what a careless client or an attacker might put in any field of a request.

Kept apart from the generators that place them so that every generator draws from the same
tables, and a value found to break the server once is tried everywhere after.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime
from typing import Any

from decider.core.constants import GATE_DEFAULTS

# Seeds are settled and requests decided at this one instant (unless a request's `now` is
# the mutation): the seeds' timestamps are written relative to it.
NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
GATES = sorted(GATE_DEFAULTS)
# The gates of the features this fuzz was written for: the webhook admits with them on by
# default, and --replay serves with them on.
NEW_GATES = ("ExecutionAttemptsTracking", "JobSetActiveDeadlineSeconds",
             "MutablePodResourcesForSuspendedJobSets", "JobSetWorkloadAwareSchedulingAPI",
             "JobSetGangOfGangs")

# Seven bytes put into a request as text and swapped, after serialization, for seven bytes
# that are not UTF-8 (a lone continuation byte, an overlong form, an encoded surrogate):
# protobuf's Python API refuses to build such a string, a client in another language may not.
MARK = "Zq7Zq7Z"
BAD_UTF8 = (b"\xff\xfe\xc3\x28\xed\xa0\x80", b"\xc0\xafabcde", b"ab\xed\xb2\x80cd",
            b"\x80\x80\x80\x80\x80\x80\x80")

HUGE_INTS = (0, -1, 1, 2, 7, 2**31 - 1, 2**31, -(2**31), -(2**31) - 1, 2**32, 2**53 + 1,
             2**63 - 1, 2**63, -(2**63), 2**64, 10**30, 10**400)
FLOATS = (0.5, -0.0, 1.5, 1e308, -1e308, 1e-320, 3.0, 600.0000001)
STRINGS = ("", " ", "x", "1", "-1", "600", "0x10", "1e3", "NaN", "Infinity", "null", "true",
           "\u2028", "\u0085", "\ud800", "\udfff", "\x00", "a" * 300, "é" * 70, "💥" * 20,
           "tcp-8080", "TCP", "../../etc", "jobset.sigs.k8s.io/jobset-name", MARK)
# What a protobuf string may hold (no lone surrogates): bad bytes go in through MARK.
PSTRINGS = tuple(s for s in STRINGS if not any(0xD800 <= ord(ch) <= 0xDFFF for ch in s))
TIMES = ("", "2026-01-01T12:00:00Z", "2026-01-01T11:59:59Z", "2026-01-01T12:00:00.5Z",
         "2026-01-01T12:00:00.123456789123Z", "2026-13-45T99:99:99Z", "0000-01-01T00:00:00Z",
         "0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "10000-01-01T00:00:00Z",
         "2026-01-01T12:00:00+25:00", "2026-01-01T12:00:00-23:59", "2026-01-01", "yesterday",
         "2026-01-01T12:00:00", "2026-01-01 12:00:00Z", "1970-01-01T00:00:00Z",
         "2026-02-29T00:00:00Z", "2024-02-29T23:59:60Z", "-0001-01-01T00:00:00Z",
         "2026-01-01T12:00:00\u0661Z", "２０２６-01-01T12:00:00Z", 20260101, 1.5e9, None)
QUANTITIES = ("1", "0", "100m", "1Ki", "1.5Gi", "1e3", "1E3", "1e-3", "0.000000001", "1n",
              "9" * 100, "1e1000000", "1e-1000000", "-1", "+1", ".5", "1.", "1Kix", "", " 1",
              "1 ", "999999999999999999999Pi", "1Ei", "8Ei", "0.5m", "1e", "e3", "0x10",
              "١", "½", "1_000", "NaN", 1, 0.5, -1, 10**30, 1e308, None, [], {}, True)
PROTOCOLS = ("TCP", "UDP", "SCTP", "", "tcp", "Tcp", "ICMP", "HTTP", None, 6, "TCP ", "\u2028")
CONDITION_TYPES = ("Completed", "Failed", "Suspended", "StartupPolicyInProgress",
                   "StartupPolicyCompleted", "RestartingJobSet", "InPlaceRestart",
                   "CompositePodGroupInitiallyScheduled", "PodGroupScheduled", "", "x" * 300)
CONDITION_STATUS = ("True", "False", "Unknown", "", "true", "Yes", None, 1)


def deep(depth: int, leaf: Any = 1) -> Any:
    """`leaf` inside `depth` alternating dicts and lists: the depths drawn sit around the
    server's JSON depth limit (100, decider/contract/json_input.py) and far past it."""
    out: Any = leaf
    for i in range(depth):
        out = [out] if i % 2 else {"a": out}
    return out


def hostile(rng: random.Random) -> Any:
    """One value of any type that a careless client might put anywhere."""
    roll = rng.random()
    if roll < 0.30:
        return rng.choice(HUGE_INTS)
    if roll < 0.40:
        return rng.choice(FLOATS)
    if roll < 0.65:
        return rng.choice(STRINGS)
    if roll < 0.72:
        return rng.choice(TIMES)
    if roll < 0.80:
        return rng.choice((None, True, False, [], {}, [None], {"": None}))
    if roll < 0.88:
        return deep(rng.choice((3, 20, 60, 99, 100, 101, 150, 400)))
    if roll < 0.94:
        return [rng.choice(HUGE_INTS)] * rng.choice((2, 50, 1000))
    return {f"k{i}": rng.choice(STRINGS) for i in range(rng.choice((1, 10, 300)))}
