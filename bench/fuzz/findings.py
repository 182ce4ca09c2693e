"""Findings: what counts as one, where its request is saved, and the report of a run.

Each finding's request is saved as it is met (`<n>-<rpc>-<code>.bin` with a `.json` beside it),
not at the end, so that a run that kills the server or is stopped still leaves them for
--replay.
"""

from __future__ import annotations

import collections
import json
from dataclasses import dataclass, field
from pathlib import Path

from .case import METHODS, WEBHOOK, Case
from .server import Server


@dataclass
class Findings:
    """Codes per RPC, each RPC's slowest call, and the requests saved. The last calls sent are
    kept: an error in the server's log cannot name its request, so they are all saved."""

    out: Path
    codes: dict[str, collections.Counter[str]] = field(
        default_factory=lambda: collections.defaultdict(collections.Counter))
    saved: list[tuple[str, str, str]] = field(default_factory=list)
    latency: dict[str, float] = field(default_factory=lambda: collections.defaultdict(float))
    recent: collections.deque[Case] = field(
        default_factory=lambda: collections.deque(maxlen=64))

    def save(self, case: Case, code: str, message: str) -> None:
        n = len(self.saved) + 1
        stem = f"{n:04d}-{case.method.replace('/', '-')}-{code}"
        (self.out / f"{stem}.bin").write_bytes(case.payload)
        (self.out / f"{stem}.json").write_text(json.dumps({
            "method": case.method, "code": code, "message": message[:4000],
            "timeout": case.timeout, "seed": case.note, "gates": case.gates}, indent=1))
        self.saved.append((stem, code, message[:300]))


# Answers the project promises bad input never gets: it is INVALID_ARGUMENT or
# RESOURCE_EXHAUSTED over gRPC, a 4xx or a 200 review from the webhook, in good time.
BAD_CODES = {"INTERNAL", "UNKNOWN", "HANG", "SLOW", "HTTP-500", "HTTP-502", "HTTP-503",
             "HTTP-504", "DISCONNECTED", "UNAVAILABLE", "DATA_LOSS"}


def report(findings: Findings, took: float, total: int, server: Server | None) -> None:
    print(f"\n## Fuzz: {total:,} requests over every RPC and the webhook, {took:.0f} s "
          f"({total / took:.0f}/s)\n")
    all_codes = sorted({c for counts in findings.codes.values() for c in counts})
    print("| RPC | requests | " + " | ".join(all_codes) + " | slowest s |")
    print("|---|---:|" + "---:|" * len(all_codes) + "---:|")
    for method in (*METHODS, *WEBHOOK):
        counts = findings.codes.get(method, collections.Counter())
        print(f"| {method} | {sum(counts.values()):,} | "
              + " | ".join(f"{counts.get(c, 0):,}" for c in all_codes)
              + f" | {findings.latency.get(method, 0):.1f} |")
    lines = bad = 0
    if server is not None and server.decision_log.exists():
        with open(server.decision_log, "rb") as f:
            for raw in f:
                lines += 1
                try:
                    json.loads(raw)
                except ValueError:
                    bad += 1
        print(f"\ndecision log: {lines:,} lines, {bad} not JSON; server log: "
              f"{server.log_path.stat().st_size:,} bytes")
    problems = [s for s in findings.saved if s[1] != "LOGGED"]
    logged = [s for s in findings.saved if s[1] == "LOGGED"]
    print(f"\n## Findings: {len(problems)} calls, {len({s[2] for s in logged})} distinct "
          f"server-log errors ({len(logged)} candidate requests saved) in {findings.out}\n")
    for stem, code, message in problems[:200]:
        print(f"- {stem}: {code}: {message[:200]}")
    for message in sorted({s[2] for s in logged})[:50]:
        print(f"- server log: {message[:200]}")
