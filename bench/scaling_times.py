"""Decision time at twice the replicated Jobs, per situation: what line counts do not see.

tests/test_scaling.py proves every decision path linear by the lines of the decider's code it
executes (deterministic, on any machine). Work done inside C (`x in some_list`, a `sorted` in a
loop) is not counted there; it shows in time. This times each situation of
tests/support/scaling.py at 1,000 and 2,000 replicated Jobs of one Job each and prints the
ratio (linear: about 2; the quadratic costs it was written against were 3.6 to 3.9). Times are
best of --runs, the two sizes interleaved so that a slow moment of a shared machine falls on
both; the exit status is 1 when a ratio passes --bound.

Usage: python bench/scaling_times.py [--runs 5] [--rounds 3] [--bound 3.0] [SITUATION...]
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from decider.core.decide import decide  # noqa: E402
from decider.core.model import Observed  # noqa: E402
from support.scaling import SITUATIONS, Shape  # noqa: E402

# The situations whose cost grows with replicated Jobs in ways lines may not show (those that
# write every Job, fail or finish them, gang objects and volumes).
DEFAULT = ["recreate", "restart_job_recreate", "restart_job_failed", "failed", "succeeded",
           "elastic", "gang", "volumes"]
SIZES = (1000, 2000)


def _once(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _ratio(observed: dict[int, Observed], runs: int) -> tuple[float, float, float]:
    """(best time small, best time large, ratio), the sizes alternating run by run."""
    best = {size: float("inf") for size in SIZES}
    for size in SIZES:
        decide(observed[size])  # warm: the spec and the JobSet are read once
    for _ in range(runs):
        for size in SIZES:
            best[size] = min(best[size], _once(lambda size=size: decide(observed[size])))
    small, large = best[SIZES[0]], best[SIZES[1]]
    return small, large, large / small


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("situations", nargs="*", default=DEFAULT, metavar="SITUATION",
                        help=f"of tests/support/scaling.py (default: {' '.join(DEFAULT)})")
    parser.add_argument("--runs", type=int, default=5, help="timed runs per size (best kept)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds per situation; the lowest ratio is kept (a slow moment of "
                             "a shared machine may spoil one)")
    parser.add_argument("--bound", type=float, default=3.0,
                        help="the ratio past which the exit status is 1 (default 3.0)")
    args = parser.parse_args()
    unknown = [name for name in args.situations if name not in SITUATIONS]
    if unknown:
        parser.error(f"unknown situation(s) {', '.join(unknown)}; known: {', '.join(SITUATIONS)}")
    print(f"{platform.processor() or platform.machine()}, Python {platform.python_version()}; "
          f"best of {args.runs}, lowest ratio of {args.rounds} rounds\n")
    print(f"| situation | {SIZES[0]:,} rJobs (ms) | {SIZES[1]:,} rJobs (ms) | ratio |")
    print("|---|---:|---:|---:|")
    worst = 0.0
    for name in args.situations:
        observed = {size: SITUATIONS[name](Shape(size, 1)) for size in SIZES}
        small, large, ratio = min((_ratio(observed, args.runs) for _ in range(args.rounds)),
                                  key=lambda r: r[2])
        worst = max(worst, ratio)
        print(f"| {name} | {small * 1000:.1f} | {large * 1000:.1f} | {ratio:.2f} |", flush=True)
    print(f"\nworst ratio {worst:.2f} (bound {args.bound})")
    return 1 if worst > args.bound else 0


if __name__ == "__main__":
    sys.exit(main())
