"""Failure-message pattern match time by message length: RE2 (today) against Python's re (before).

Until RE2 replaced it, an admitted pattern was rewritten (`$` became `\\Z`, `\\d` an ASCII class)
and searched with Python's backtracking `re`. This prints, as Markdown, the time of one match
(median of repeated runs) for pathological patterns, which backtrack exponentially under `re`,
and for ordinary ones, at several message lengths:
- RE2: `compile_go_regex(pattern).matches(message)`, the path `decide` takes.
- re: `re.compile(rewritten).search(message)`, the old path. Pathological patterns run only on
  short messages, and a pattern stops growing its message once one match takes over --cap
  seconds, so the script never hangs.

Usage: python bench/patterns_bench.py [--cap SECONDS]
"""

from __future__ import annotations

import argparse
import functools
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from decider.core.go_regex import compile_go_regex  # noqa: E402

# The Job controller's message when a Job runs out of retries.
BACKOFF = "Job has reached the specified backoff limit"


def backoff_text(n: int) -> str:
    return ((BACKOFF + " ") * (n // (len(BACKOFF) + 1) + 1))[:n]


# (pattern, the old path's rewrite of it, message of length n it fails to match)
PATHOLOGICAL: list[tuple[str, str, Callable[[int], str]]] = [
    ("(a+)+$", r"(a+)+\Z", lambda n: "a" * (n - 1) + "!"),
    ("(.*)*X", "(.*)*X", backoff_text),
    ("(x+x+)+y", "(x+x+)+y", lambda n: "x" * n),
]
ORDINARY: list[tuple[str, str, Callable[[int], str]]] = [
    ("backoff limit$", r"backoff limit\Z", lambda n: backoff_text(n) + "!"),
    ("(?i)oomkilled", "(?i)oomkilled", backoff_text),
    (r"exit code \d+$", r"exit code [0-9]+\Z", backoff_text),
]
RE_PATHOLOGICAL_LENGTHS = (10, 14, 18, 20, 22, 24, 26, 28)
LENGTHS = (100, 1_000, 10_000, 100_000)


def timed(fn: Callable[[], object], budget: float = 0.2) -> float:
    """Median seconds of one call, repeated for about `budget` seconds (at least 3 runs)."""
    runs: list[float] = []
    spent = 0.0
    while len(runs) < 3 or spent < budget:
        start = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - start)
        spent += runs[-1]
        if len(runs) >= 1000:
            break
    return statistics.median(runs)


def fmt(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} us"
    if seconds < 1:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds:.2f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cap", type=float, default=2.0,
                        help="stop lengthening a message under re once a match takes this long")
    args = parser.parse_args()

    print("## Pathological patterns (no match), Python's re (old path)\n")
    print("| pattern | " + " | ".join(f"n={n}" for n in RE_PATHOLOGICAL_LENGTHS) + " |")
    print("|---|" + "---|" * len(RE_PATHOLOGICAL_LENGTHS))
    for pattern, rewritten, message in PATHOLOGICAL:
        compiled = re.compile(rewritten)
        cells: list[str] = []
        for n in RE_PATHOLOGICAL_LENGTHS:
            if cells and cells[-1].endswith(("stopped", "(over cap)")):
                cells.append("stopped")
                continue
            text = message(n)
            # Exponential: time a single call, it can take seconds.
            start = time.perf_counter()
            compiled.search(text)
            spent = time.perf_counter() - start
            cells.append(fmt(spent) if spent < args.cap else f"{fmt(spent)} (over cap)")
        print(f"| `{pattern}` | " + " | ".join(cells) + " |")

    print("\n## RE2 (decide's path) and re, by message length\n")
    print("| pattern | engine | " + " | ".join(f"n={n:,}" for n in LENGTHS) + " |")
    print("|---|---|" + "---|" * len(LENGTHS))
    for pattern, rewritten, message in PATHOLOGICAL + ORDINARY:
        go = compile_go_regex(pattern)
        assert go is not None, pattern
        texts = [message(n) for n in LENGTHS]
        cells = [fmt(timed(functools.partial(go.matches, t))) for t in texts]
        print(f"| `{pattern}` | RE2 | " + " | ".join(cells) + " |")
        if (pattern, rewritten, message) in ORDINARY:
            search = re.compile(rewritten).search
            cells = [fmt(timed(functools.partial(search, t))) for t in texts]
            print(f"| `{pattern}` | re | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
