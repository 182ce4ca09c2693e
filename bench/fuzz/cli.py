"""The fuzzer's options: a served run (the default), --inproc, or --replay of saved findings.

The help text is the package's docstring (bench/fuzz/__init__.py), what `python
bench/fuzz_rpc.py --help` has always printed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import time
from pathlib import Path

from . import __doc__ as USAGE
from .drive import drive
from .findings import Findings, report
from .generate import case_stream
from .inproc import inproc
from .replay import replay
from .seeds import build_seeds
from .server import Server
from .values import GATES, NEW_GATES


def main() -> None:
    parser = argparse.ArgumentParser(description=USAGE,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--in-flight", type=int, default=12)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", default="/tmp/fuzz-rpc")
    parser.add_argument("--webhook-gates", default="new", choices=("new", "none", "all"),
                        help="gates the webhook admits with (a server-wide setting)")
    parser.add_argument("--replay", nargs="+", metavar="FILE")
    parser.add_argument("--target", help="with --replay: a running server")
    parser.add_argument("--inproc", action="store_true",
                        help="decide the cases in this process, without a server")
    args = parser.parse_args()
    if args.replay:
        replay(args.replay, args.target, args.workers)
        return
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(args.seed)
    seeds = build_seeds()
    webhook_gates = {"new": dict.fromkeys(NEW_GATES, True), "none": {},
                     "all": dict.fromkeys(GATES, True)}[args.webhook_gates]
    print(f"# decider RPC fuzz, {time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} CPUs, "
          f"seed {args.seed}, {len(seeds)} seed JobSets, {args.in_flight} in flight, "
          f"{args.workers} workers, webhook gates {args.webhook_gates}")
    for old in [*out.glob("*.bin"), *out.glob("*.json")]:
        old.unlink()
    findings = Findings(out)
    if args.inproc:
        inproc(seeds, rng, args.requests, findings)
        return
    # The server's log, decision log and certificates stay beside the findings.
    workdir = out / "server"
    workdir.mkdir(exist_ok=True)
    server = Server(workdir, args.workers, webhook_gates)
    try:
        took = asyncio.run(drive(server, case_stream(seeds, rng), args.requests, args.in_flight,
                                 findings))
        report(findings, took, args.requests, server)
    finally:
        server.stop()
