"""Waiting for a condition, the one way tests wait (never a sleep that hopes it happened).

The deadline is a hang guard, not a bound on speed: a loaded machine (the suite runs beside
other work, and bench/suite_under_load.py runs it beside a busy process per core) may take many
times as long as a quiet one, so it is generous. A test whose point is a time limit states that
limit itself, with the reason it can be met on any machine.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

# Seconds before a wait gives up: the longest anything a test waits for may take on a busy
# machine, with room to spare (quiet, everything waited for comes in well under a second).
HANG_GUARD = 60.0


def wait_for(pred: Callable[[], T], timeout: float = HANG_GUARD, what: str = "condition",
             interval: float = 0.02) -> T:
    """pred()'s first true value; AssertionError naming `what` (and pred's last value) if none
    comes within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        last = pred()
        if last:
            return last
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what} "
                                 f"(last: {last!r})")
        time.sleep(interval)
