"""What telemetry costs the decider: Decide throughput with traces and metrics off and on (OTLP
to a real receiver), interleaved in one run, and start-up and shutdown times with the collector
up, down, and telemetry off.

Usage: python bench/telemetry_bench.py [--seconds 5] [--rounds 4] [--workers 2]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from soak import IN_FLIGHT, _drive, _steady_request  # noqa: E402

from support.otlp import GrpcReceiver  # noqa: E402


def _serve(env: dict[str, str], workers: int) -> tuple[subprocess.Popen[str], str, float]:
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "decider.cli", "serve", "--host", "127.0.0.1",
                             "--port", "0", "--workers", str(workers), "--drain-delay", "0"],
                            cwd=ROOT, env={**os.environ, **env}, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    target = proc.stdout.readline().strip().rsplit(" ", 1)[-1]
    return proc, target, time.monotonic() - started


def _stop(proc: subprocess.Popen[str]) -> float:
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)
    return time.monotonic() - started


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    items = [("Decide", _steady_request(10))]
    print(f"# telemetry cost, {time.strftime('%Y-%m-%d')}, {os.cpu_count()} CPUs, Decide of a "
          f"steady 10-Job JobSet, {IN_FLIGHT} in flight, {args.workers} workers\n")
    with GrpcReceiver() as rx:
        settings = {
            "off": {"OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none"},
            "traces+metrics (OTLP)": {"OTEL_TRACES_EXPORTER": "otlp",
                                      "OTEL_METRICS_EXPORTER": "otlp",
                                      "OTEL_EXPORTER_OTLP_ENDPOINT": rx.endpoint,
                                      "OTEL_METRIC_EXPORT_INTERVAL": "5000"},
        }
        servers = {label: _serve(env, args.workers) for label, env in settings.items()}
        rps: dict[str, list[float]] = {label: [] for label in settings}
        for _ in range(args.rounds):
            for label, (_, target, _) in servers.items():
                codes, _, took = asyncio.run(_drive(target, items, None, args.seconds))
                rps[label].append(sum(codes["Decide"].values()) / took)
        for proc, _, _ in servers.values():
            _stop(proc)
        spans = len(rx.received.spans())
    off = statistics.mean(rps["off"])
    print("| telemetry | Decide RPC/s (mean of rounds) | rounds | ratio to off |")
    print("|---|---:|---|---:|")
    for label, values in rps.items():
        print(f"| {label} | {statistics.mean(values):,.0f} | "
              f"{', '.join(f'{v:,.0f}' for v in values)} | {statistics.mean(values) / off:.2f} |")
    print(f"\n({spans:,} spans reached the receiver.)\n")

    down = f"http://127.0.0.1:{_free_port()}"
    print("| telemetry | start-up s (to serving) | shutdown s (SIGTERM to exit) |")
    print("|---|---:|---:|")
    for label, env in (("off", settings["off"]),
                       ("OTLP, collector down", {"OTEL_TRACES_EXPORTER": "otlp",
                                                 "OTEL_METRICS_EXPORTER": "otlp",
                                                 "OTEL_EXPORTER_OTLP_ENDPOINT": down})):
        starts, stops = [], []
        for _ in range(3):
            proc, target, start = _serve(env, args.workers)
            asyncio.run(_drive(target, items, 200, None))
            starts.append(start)
            stops.append(_stop(proc))
        print(f"| {label} | {statistics.median(starts):.2f} | {statistics.median(stops):.2f} |")


if __name__ == "__main__":
    main()
