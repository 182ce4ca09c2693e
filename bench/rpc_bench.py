"""Decider RPCs over gRPC: throughput and latency by request size, workers and telemetry.

One `decider serve` per configuration (1 worker, N workers, N workers with traces and metrics
on, and optionally the server of an older commit), every measurement interleaved across them
in rounds, so the ratios hold on a shared machine. For each: RPC/s with 32 in flight, and p50/p99
latency of those calls, for the health Check (the empty RPC, the transport floor) and Decide of a
steady JobSet of 10, 100 and 1,000 Jobs.

Usage: python bench/rpc_bench.py [--seconds 3] [--rounds 3] [--workers N] [--baseline REF]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from grpc_health.v1 import health_pb2  # noqa: E402
from soak import IN_FLIGHT, Server, _checkout, _drive, _pct, _steady_request  # noqa: E402
from telemetry_bench import Sink  # noqa: E402

HEALTH = "/grpc.health.v1.Health/Check"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--baseline", help="git ref of a server to compare (e.g. a5ccc9b)")
    args = parser.parse_args()
    loads = {"health Check (empty RPC)": (HEALTH, health_pb2.HealthCheckRequest()
                                          .SerializeToString())}
    for jobs in (10, 100, 1000):
        payload = _steady_request(jobs)
        loads[f"Decide, steady, {jobs:,} Jobs ({len(payload):,} B)"] = ("Decide", payload)
    sink = Sink()
    telemetry_on = {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_METRICS_EXPORTER": "otlp",
                    "OTEL_EXPORTER_OTLP_ENDPOINT": sink.endpoint}
    with tempfile.TemporaryDirectory() as tmp:
        servers = [Server("1 worker", ROOT, 1),
                   Server(f"{args.workers} workers", ROOT, args.workers),
                   Server(f"{args.workers} workers, traces+metrics", ROOT, args.workers,
                          telemetry_on)]
        if args.baseline:
            servers.append(Server(f"baseline {args.baseline}",
                                  _checkout(args.baseline, Path(tmp)), 0))
        rps: dict[tuple[str, str], list[float]] = {}
        lat: dict[tuple[str, str], list[float]] = {}
        try:
            for _ in range(args.rounds):
                for load, item in loads.items():
                    for server in servers:
                        codes, latencies, took = asyncio.run(
                            _drive(server.target, [item], None, args.seconds))
                        done = sum(codes[item[0]].values())
                        assert codes[item[0]].get("OK") == done, (server.label, load, codes)
                        rps.setdefault((load, server.label), []).append(done / took)
                        lat.setdefault((load, server.label), []).extend(latencies[item[0]])
        finally:
            for server in servers:
                server.stop()
            sink.close()
    uptime = os.getloadavg()
    print(f"# gRPC, {time.strftime('%Y-%m-%d')}, {os.cpu_count()} CPUs (load average "
          f"{uptime[0]:.1f}), Python {sys.version.split()[0]}; client: one asyncio process on "
          f"the same machine, {IN_FLIGHT} calls in flight; {args.rounds} interleaved rounds of "
          f"{args.seconds:g} s\n")
    print("| RPC | server | RPC/s | p50 ms | p99 ms | ratio to the empty RPC |")
    print("|---|---|---:|---:|---:|---:|")
    for load in loads:
        for server in servers:
            key = (load, server.label)
            mean = statistics.mean(rps[key])
            floor = statistics.mean(rps[(next(iter(loads)), server.label)])
            print(f"| {load} | {server.label} | {mean:,.0f} | {_pct(lat[key], 50):.2f} | "
                  f"{_pct(lat[key], 99):.2f} | {mean / floor:.2f} |")


if __name__ == "__main__":
    main()
