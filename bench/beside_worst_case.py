"""Latency of health and of small Decides while a worst-case decision runs beside them.

tests/test_server_hardening.py proves they are answered meanwhile (the worst case's worker is
stopped until they are, so none can have waited for it); how long they take is a figure of the
machine, measured here: a server of 2 workers, one busy with a Decide that builds every Job
of a 40,000-Job JobSet (seconds), and meanwhile 100 Decides of the leader-workers example and a
health Check every 10th, one at a time. Prints, per round, the latencies' median, p99 and
maximum, and whether the worst case was still running when the last small call returned (a
round where it was not measured nothing beside it).

Usage: python bench/beside_worst_case.py [--rounds 3] [--jobs 40000]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import threading
import time
from pathlib import Path

import grpc
import yaml
from grpc_health.v1 import health_pb2, health_pb2_grpc

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from decider.contract.limits import Limits  # noqa: E402
from decider.service.server import BackgroundServer  # noqa: E402
from decider_api.v1 import decider_pb2_grpc as pb_grpc  # noqa: E402
from decider_client import observe  # noqa: E402
from support.builders import NOW  # noqa: E402

BIG = 256 * 1024 * 1024
OPTIONS = [("grpc.max_receive_message_length", BIG), ("grpc.max_send_message_length", BIG)]
EXAMPLE = ROOT / "examples" / "leader-workers.yaml"


def _request(replicas: int | None = None) -> object:
    js = yaml.safe_load(EXAMPLE.read_text())
    if replicas is not None:
        js["spec"]["replicatedJobs"][1]["replicas"] = replicas
    return observe.build_decide_request(js, [], NOW)


def _ms(values: list[float]) -> str:
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return (f"{statistics.median(ordered) * 1000:.1f} / {p99 * 1000:.1f} / "
            f"{ordered[-1] * 1000:.1f}")


def _round(srv: BackgroundServer, jobs: int) -> tuple[list[float], list[float], bool]:
    with grpc.insecure_channel(srv.target, OPTIONS) as channel:
        stub = pb_grpc.DeciderStub(channel)
        health = health_pb2_grpc.HealthStub(channel)
        big, small = _request(jobs), _request()
        done = threading.Event()
        thread = threading.Thread(target=lambda: (stub.Decide(big, timeout=600), done.set()))
        thread.start()
        while srv.pool.busy == 0:
            time.sleep(0.005)
        small_latencies, health_latencies = [], []
        for i in range(100):
            started = time.perf_counter()
            stub.Decide(small, timeout=60)
            small_latencies.append(time.perf_counter() - started)
            if i % 10 == 0:
                started = time.perf_counter()
                health.Check(health_pb2.HealthCheckRequest(), timeout=60)
                health_latencies.append(time.perf_counter() - started)
        beside = not done.is_set()
        thread.join()
    return small_latencies, health_latencies, beside


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=40_000,
                        help="Jobs of the worst-case request (default 40,000)")
    args = parser.parse_args()
    print(f"{platform.processor() or platform.machine()}, Python {platform.python_version()}; "
          f"2 workers, worst case {args.jobs:,} Jobs\n")
    print("| round | small Decide ms (median / p99 / max) | health ms (median / p99 / max) "
          "| worst case still running |")
    print("|---|---|---|---|")
    with BackgroundServer(workers=2, max_decision_seconds=600,
                          limits=Limits(max_message_bytes=BIG)) as srv:
        for n in range(1, args.rounds + 1):
            small, health, beside = _round(srv, args.jobs + n)  # a new spec each round
            print(f"| {n} | {_ms(small)} | {_ms(health)} | {'yes' if beside else 'no'} |",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
