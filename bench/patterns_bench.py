"""Failure-message pattern match time by message length: RE2 (today) against Python's re (before).

Until RE2 replaced it, an admitted pattern was rewritten (`$` became `\\Z`, `\\d` an ASCII class)
and searched with Python's backtracking `re`. This prints, as Markdown, the time of one match
(median of repeated runs) for pathological patterns, which backtrack exponentially under `re`,
and for ordinary ones, at several message lengths:
- RE2: `compile_go_regex(pattern).matches(message)`, the path `decide` takes.
- re: `re.compile(rewritten).search(message)`, the old path. Pathological patterns run only on
  short messages, and a pattern stops growing its message once one match takes over --cap
  seconds, so the script never hangs.

With --budget it prints instead what a costly pattern Go accepts costs the decider (go_regex's
budget), cold, as a new worker process meets it:
- in process: the admission check (`pattern_error`) and a decision's compile and match
  (`compile_go_regex(...).matches`), with the pattern caches emptied before each pattern;
- through `decider serve --workers 1` (this checkout, and --baseline REF's beside it): the
  first Decide that carries the pattern (a failed Job's message to match), then a second;
- the match time of a pattern at the budget against a hostile message, by length: what is
  left once compiling is bounded (linear in the message, RE2's NFA once its DFA gives up).

Usage: python bench/patterns_bench.py [--cap SECONDS]
       python bench/patterns_bench.py --budget [--baseline REF]
"""

from __future__ import annotations

import argparse
import functools
import random
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import re2  # noqa: E402

from decider.core import go_regex  # noqa: E402
from decider.core.go_regex import compile_go_regex, pattern_error  # noqa: E402

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
    parser.add_argument("--budget", action="store_true",
                        help="cold compile costs of costly patterns Go accepts (see above)")
    parser.add_argument("--baseline", help="with --budget: git ref of a server to compare")
    args = parser.parse_args()
    if args.budget:
        budget(args.baseline)
        return

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


# Costly patterns Go accepts (issue 20's first two), then the costliest the budget admits.
COSTLY = [
    r"\pL{999}", r"\pL{998}", r"(?:\pL\pN\pL){300}", r"(?i)\pL{999}", r"[^\pL]{1000}",
    "a{0,1000}" * 11, r"\pL{4}",
    r"(?i)\pL{3}", r"[\x{80}-\x{10FFFF}]{600}", r"(?i)[\pL\PL]" * 8, "(?s).{400}", "a" * 4000,
    "[a-q][^u-z]{500}x", "(?i)oomkilled|out of memory",
]


def _shown(pattern: str) -> str:
    return pattern if len(pattern) <= 28 else f"{pattern[:20]}... ({len(pattern)} chars)"


def _cold() -> None:
    # Both the new check's cache and the old one's, whichever this checkout has, and re2's.
    for name in ("check_pattern", "_compile"):
        cached = getattr(go_regex, name, None)
        if cached is not None:
            cached.cache_clear()
    re2.purge()


def budget(baseline: str | None) -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    import tempfile

    import grpc
    from soak import Server, _checkout, _decide, _jobset

    print("## Cold cost of a pattern, in process\n")
    print("| pattern | admitted | check (Validate) | compile + match (Decide) |")
    print("|---|---|---:|---:|")
    for pattern in COSTLY:
        _cold()
        start = time.perf_counter()
        refused = pattern_error(pattern)
        check = time.perf_counter() - start
        _cold()
        start = time.perf_counter()
        compiled = compile_go_regex(pattern)
        if compiled is not None:
            compiled.matches(BACKOFF)
        decide = time.perf_counter() - start
        verdict = "yes" if refused is None else "no"
        print(f"| `{_shown(pattern)}` | {verdict} | {fmt(check)} | {fmt(decide)} |")

    def request(pattern: str) -> bytes:
        js = _jobset(failurePolicy={"maxRestarts": 3, "rules": [{
            "name": "r", "action": "FailJobSet", "onJobFailureMessagePatterns": [pattern]}]})
        failed = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {
            "name": "trainer-leader-0", "uid": "u-leader-0", "labels": {
                "jobset.sigs.k8s.io/jobset-name": "trainer",
                "jobset.sigs.k8s.io/replicatedjob-name": "leader",
                "jobset.sigs.k8s.io/restart-attempt": "0",
                "jobset.sigs.k8s.io/job-index": "0"},
            "ownerReferences": [{"uid": js["metadata"].get("uid", ""), "controller": True,
                                 "kind": "JobSet", "name": "trainer"}]},
            "spec": {"parallelism": 1, "completions": 1},
            "status": {"failed": 1, "conditions": [
                {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
                 "message": BACKOFF, "lastTransitionTime": "2026-01-01T00:30:00Z"}]}}
        return _decide(js, [failed]).SerializeToString()

    with tempfile.TemporaryDirectory() as tmp:
        servers = [Server("this checkout", ROOT, 1)]
        if baseline:
            servers.append(Server(baseline, _checkout(baseline, Path(tmp)), 1))
        try:
            print("\n## Decide through `decider serve --workers 1`: first call with the pattern"
                  " (cold), second\n")
            print("| pattern | " + " | ".join(s.label for s in servers) + " |")
            print("|---|" + "---:|" * len(servers))
            for pattern in COSTLY:
                payload = request(pattern)
                cells = []
                for server in servers:
                    with grpc.insecure_channel(server.target) as channel:
                        call = channel.unary_unary("/decider.v1.Decider/Decide")
                        spent = []
                        for _ in range(2):
                            start = time.perf_counter()
                            try:
                                call(payload, timeout=60)
                            except grpc.RpcError as err:
                                spent.append(-1.0)
                                print(f"<!-- {server.label}: {err.code().name} -->")
                                continue
                            spent.append(time.perf_counter() - start)
                        cells.append(" / ".join(fmt(t) if t >= 0 else "error" for t in spent))
                print(f"| `{_shown(pattern)}` | " + " | ".join(cells) + " |")
        finally:
            for server in servers:
                server.stop()

    print("\n## Matching, once compiled: a pattern at the budget, hostile message (no match)\n")
    hostile = "[a-q][^u-z]{500}x"  # 4,013 instructions; messages from a-t make its DFA explode
    compiled = compile_go_regex(hostile)
    print(f"`{hostile}`; the message is pseudo-random letters a-t\n")
    print("| message | match |")
    print("|---:|---:|")
    rng = random.Random(1)
    for n in (1_000, 32_768, 262_144):
        text = "".join(rng.choice("abcdefghijklmnopqrst") for _ in range(n))
        assert compiled is not None
        print(f"| {n:,} B | {fmt(timed(functools.partial(compiled.matches, text), 0.5))} |")


if __name__ == "__main__":
    main()
