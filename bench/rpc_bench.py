"""Decider RPCs over gRPC: throughput and latency by request size, workers and telemetry.

One `decider serve` per configuration (1 worker, N workers, N workers with traces and metrics
on, and optionally the server of an older commit), every measurement interleaved across them
in rounds, so the ratios hold on a shared machine. For each: RPC/s with 32 in flight, and p50/p99
latency of those calls, for the health Check (the empty RPC, the transport floor) and Decide of a
steady JobSet of 10, 100 and 1,000 Jobs.

With `--client h2load` the calls come from h2load (C; bench/h2load_driver.py) instead of a
Python asyncio client, which takes about a core of its own: the server's ratios then stand
without the load generator competing for the same two cores.

Usage: python bench/rpc_bench.py [--seconds 3] [--rounds 3] [--workers N] [--baseline REF]
                                 [--client python|h2load]
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

import grpc  # noqa: E402
import h2load_driver  # noqa: E402
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
    parser.add_argument("--client", choices=("python", "h2load"), default="python",
                        help="load generator (h2load: apt-get install nghttp2-client)")
    args = parser.parse_args()
    if args.client == "h2load" and not h2load_driver.available():
        parser.error("--client h2load: h2load is not installed (apt-get install nghttp2-client)")
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
                        done, latencies, took = _measure(args.client, server, item,
                                                         args.seconds)
                        rps.setdefault((load, server.label), []).append(done / took)
                        lat.setdefault((load, server.label), []).extend(latencies)
        finally:
            for server in servers:
                server.stop()
            sink.close()
    uptime = os.getloadavg()
    client = (f"one asyncio process on the same machine, {IN_FLIGHT} calls in flight"
              if args.client == "python" else
              f"h2load on the same machine, {h2load_driver.CONNECTIONS} connections of "
              f"{h2load_driver.STREAMS} streams")
    print(f"# gRPC, {time.strftime('%Y-%m-%d')}, {os.cpu_count()} CPUs (load average "
          f"{uptime[0]:.1f}), Python {sys.version.split()[0]}; client: {client}; "
          f"{args.rounds} interleaved rounds of {args.seconds:g} s\n")
    print("| RPC | server | RPC/s | p50 ms | p99 ms | ratio to the empty RPC |")
    print("|---|---|---:|---:|---:|---:|")
    for load in loads:
        for server in servers:
            key = (load, server.label)
            mean = statistics.mean(rps[key])
            floor = statistics.mean(rps[(next(iter(loads)), server.label)])
            print(f"| {load} | {server.label} | {mean:,.0f} | {_pct(lat[key], 50):.2f} | "
                  f"{_pct(lat[key], 99):.2f} | {mean / floor:.2f} |")


def _measure(client: str, server: Server, item: tuple[str, bytes], seconds: float
             ) -> tuple[int, list[float], float]:
    """(calls answered OK, their latencies in seconds, seconds taken)."""
    method, payload = item
    if client == "h2load":
        path = method if method.startswith("/") else f"/decider.v1.Decider/{method}"
        with grpc.insecure_channel(server.target) as channel:
            answer = channel.unary_unary(path)(payload, timeout=60, wait_for_ready=True)
        return h2load_driver.drive(server.target, path, payload, answer, seconds)
    codes, latencies, took = asyncio.run(_drive(server.target, [item], None, seconds))
    done = sum(codes[method].values())
    assert codes[method].get("OK") == done, (server.label, method, codes)
    return done, latencies[method], took


if __name__ == "__main__":
    main()
