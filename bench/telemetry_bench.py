"""What telemetry costs the decider: Decide throughput with traces and metrics off, metrics alone,
traces and metrics with every span sampled, and with one trace in ten sampled
(parentbased_traceidratio 0.1), all through the OpenTelemetry SDK and OTLP to a receiver in a
process of its own, as a collector would be, interleaved in one run; and start-up and shutdown
times with the collector down and telemetry off.

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

# A stand-in collector: accepts every OTLP export and counts the bytes, parsing nothing, so that
# what is measured is the decider's cost, not a receiver's.
SINK = """
import sys, threading, grpc
from concurrent import futures
received = [0, 0]
lock = threading.Lock()
def export(request, context):
    with lock:
        received[0] += 1
        received[1] += len(request)
    return b""
def handler(service):
    return grpc.method_handlers_generic_handler(
        service, {"Export": grpc.unary_unary_rpc_method_handler(export)})
server = grpc.server(futures.ThreadPoolExecutor(4), options=[("grpc.so_reuseport", 0)])
for s in ("trace.v1.TraceService", "metrics.v1.MetricsService", "logs.v1.LogsService"):
    server.add_generic_rpc_handlers((handler("opentelemetry.proto.collector." + s),))
port = server.add_insecure_port("127.0.0.1:0")
server.start()
print(port, flush=True)
sys.stdin.read()
print(received[0], received[1], flush=True)
"""


class Sink:
    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", SINK], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        self.endpoint = f"http://127.0.0.1:{self.proc.stdout.readline().strip()}"

    def close(self) -> tuple[int, int]:
        out, _ = self.proc.communicate("", timeout=30)
        exports, size = (int(x) for x in out.split())
        return exports, size


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
    sink = Sink()
    if True:
        settings = {
            "off": {"OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none"},
            "metrics (OTLP)": {"OTEL_METRICS_EXPORTER": "otlp",
                               "OTEL_EXPORTER_OTLP_ENDPOINT": sink.endpoint,
                               "OTEL_METRIC_EXPORT_INTERVAL": "5000"},
            "traces, every span sampled + metrics (OTLP)": {
                "OTEL_TRACES_EXPORTER": "otlp", "OTEL_METRICS_EXPORTER": "otlp",
                "OTEL_EXPORTER_OTLP_ENDPOINT": sink.endpoint,
                "OTEL_METRIC_EXPORT_INTERVAL": "5000", "OTEL_TRACES_SAMPLER": "always_on"},
            # What docs/observability.md suggests for a busy decider: callers' sampled traces
            # kept whole, one in ten of the rest.
            "traces parentbased_traceidratio 0.1 + metrics (OTLP)": {
                "OTEL_TRACES_EXPORTER": "otlp", "OTEL_METRICS_EXPORTER": "otlp",
                "OTEL_EXPORTER_OTLP_ENDPOINT": sink.endpoint,
                "OTEL_METRIC_EXPORT_INTERVAL": "5000",
                "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
                "OTEL_TRACES_SAMPLER_ARG": "0.1"},
        }
        servers = {label: _serve(env, args.workers) for label, env in settings.items()}
        rps: dict[str, list[float]] = {label: [] for label in settings}
        for _ in range(args.rounds):
            for label, (_, target, _) in servers.items():
                codes, _, took = asyncio.run(_drive(target, items, None, args.seconds))
                rps[label].append(sum(codes["Decide"].values()) / took)
        for proc, _, _ in servers.values():
            _stop(proc)
        exports, size = sink.close()
    off = statistics.mean(rps["off"])
    print("| telemetry | Decide RPC/s (mean of rounds) | rounds | ratio to off |")
    print("|---|---:|---|---:|")
    for label, values in rps.items():
        print(f"| {label} | {statistics.mean(values):,.0f} | "
              f"{', '.join(f'{v:,.0f}' for v in values)} | {statistics.mean(values) / off:.2f} |")
    print(f"\n(The collector stand-in received {exports:,} exports, {size:,} bytes.)\n")

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
