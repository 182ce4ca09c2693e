"""Counting the work a call does, deterministically, for scaling tests.

Timing on a shared machine moves by tens of percent; the number of lines of the decider's own
code that a call executes does not move at all. A cost that grows faster than linearly in some
input shows as a count that more than doubles when that input doubles. Work done inside C
(a `x in some_list`, a `sorted`) is not counted: tests/test_scaling.py compares times as well.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

DECIDER = str(Path(__file__).resolve().parents[2] / "decider")


def lines_executed(fn: Callable[[], Any], under: str = DECIDER) -> int:
    """Lines of code under `under` that `fn()` executes (comprehensions included)."""
    count = 0

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal count
        if event == "line":
            count += 1
        return local

    def global_(frame: FrameType, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename.startswith(under):
            return local
        return None

    previous = sys.gettrace()
    sys.settrace(global_)
    try:
        fn()
    finally:
        sys.settrace(previous)
    return count
