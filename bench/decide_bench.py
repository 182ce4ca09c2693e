"""Decision time by JobSet size, and gRPC Decide against the transport floor.

Prints two tables (Markdown):
1. in-process: median and p99 of `decide()` on the core's types, and of the whole in-process
   path a server runs (DecideRequest proto -> core -> DecideResponse proto), for JobSets with
   10 to 10,000 child Jobs, in three situations: steady (every Job exists, running and ready,
   status already written), restart (every Job belongs to the previous attempt and is deleted)
   and recreate (no Job exists: all of them are built).
2. gRPC, one server process on this machine: latency (one call in flight) and throughput
   (32 calls in flight from an asyncio client) of Decide for steady JobSets, beside the
   standard health Check on the same server, an RPC that does no work (the transport floor).

Usage: python bench/decide_bench.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from decider import convert  # noqa: E402
from decider.core.decide import decide  # noqa: E402
from decider.core.model import Observed  # noqa: E402
from decider_client import observe  # noqa: E402
from support.builders import job, jobset, rjob, service  # noqa: E402

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)


def scenario(n_jobs: int, kind: str) -> tuple[dict, list]:
    """A JobSet of 4 replicated Jobs totalling exactly n_jobs child Jobs."""
    names = ["driver", "ps", "workers", "evaluators"]
    replicas = {n: n_jobs // 4 + (1 if i < n_jobs % 4 else 0) for i, n in enumerate(names)}
    js = jobset(*[rjob(n, replicas[n], parallelism=4, completions=4) for n in names],
                failurePolicy={"maxRestarts": 10})
    if kind == "recreate":
        return js, []
    attempt = 0
    if kind == "restart":
        js["status"] = {"restarts": 1, "restartsCountTowardsMax": 1}
    jobs = [job(n, i, attempt=attempt, ready=4, active=4, parallelism=4, completions=4)
            for n in names for i in range(replicas[n])]
    if kind == "steady":
        # Write the status the first pass computes, so the steady pass finds nothing to change.
        js["status"] = decide(Observed(jobset=js, now=NOW, jobs=jobs,
                                       objects=[service()])).status
    return js, jobs


def to_k8s(js: dict, jobs: list) -> list[dict]:
    """The Job objects as an API server would serve them, for the proto path."""
    out = []
    for j in jobs:
        out.append({"apiVersion": "batch/v1", "kind": "Job",
                    "metadata": {"name": j.name, "uid": j.uid, "labels": j.labels,
                                 "ownerReferences": [{"uid": j.controller_uid,
                                                      "controller": True}]},
                    "spec": {"parallelism": j.parallelism, "completions": j.completions,
                             "suspend": j.suspend},
                    "status": {"active": j.active, "ready": j.ready}})
    out.append({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "js"}})
    return out


def timed(fn: Callable[[], object], rounds: int) -> list[float]:
    fn()  # warm-up
    samples = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return samples


def pct(samples: list[float], p: float) -> float:
    s = sorted(samples)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def ms(x: float) -> str:
    return f"{x * 1000:.2f}"


def in_process(sizes: list[int], budget: float) -> None:
    print("| situation | child Jobs | actions | core median ms | core p99 ms "
          "| proto→core→proto median ms | p99 ms |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for kind in ("steady", "restart", "recreate"):
        for n in sizes:
            js, jobs = scenario(n, kind)
            obs = Observed(jobset=js, now=NOW, jobs=jobs, objects=[service()])
            plan = decide(obs)
            t_one = timed(lambda obs=obs: decide(obs), 1)[0]
            rounds = max(5, min(300, int(budget / max(t_one, 1e-6))))
            core = timed(lambda obs=obs: decide(obs), rounds)
            req = observe.build_decide_request(js, to_k8s(js, jobs), NOW)
            full = timed(lambda req=req: convert.decide_response(req), rounds)
            print(f"| {kind} | {n:,} | {len(plan.actions):,} | {ms(statistics.median(core))} "
                  f"| {ms(pct(core, 99))} | {ms(statistics.median(full))} "
                  f"| {ms(pct(full, 99))} |", flush=True)


def start_server() -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "decider.cli", "serve", "--host",
                             "127.0.0.1", "--port", "0"], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "OTEL_TRACES_EXPORTER": "none"})
    assert proc.stdout is not None
    line = proc.stdout.readline()
    return proc, line.strip().rsplit(" ", 1)[-1]


async def grpc_rows(target: str, sizes: list[int], seconds: float) -> None:
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    from decider.v1 import decider_pb2_grpc as pb_grpc

    opts = [("grpc.max_receive_message_length", 64 << 20),
            ("grpc.max_send_message_length", 64 << 20)]
    async with grpc.aio.insecure_channel(target, options=opts) as channel:
        decider = pb_grpc.DeciderStub(channel)
        health = health_pb2_grpc.HealthStub(channel)
        calls: list[tuple[str, Callable[[], object]]] = [
            ("health Check (empty RPC, the floor)",
             lambda: health.Check(health_pb2.HealthCheckRequest()))]
        for n in sizes:
            js, jobs = scenario(n, "steady")
            req = observe.build_decide_request(js, to_k8s(js, jobs), NOW)
            calls.append((f"Decide, steady, {n:,} Jobs ({req.ByteSize():,} B)",
                          lambda req=req: decider.Decide(req)))
        print("| RPC | latency p50 ms | latency p99 ms | throughput RPC/s (32 in flight) |")
        print("|---|---:|---:|---:|")
        for label, call in calls:
            for _ in range(20):
                await call()
            lat = []
            deadline = time.perf_counter() + seconds
            while time.perf_counter() < deadline and len(lat) < 2000:
                t0 = time.perf_counter()
                await call()
                lat.append(time.perf_counter() - t0)
            done = 0
            stop_at = time.perf_counter() + seconds

            async def worker(call: Callable[[], object] = call, stop_at: float = stop_at) -> None:
                nonlocal done
                while time.perf_counter() < stop_at:
                    await call()
                    done += 1

            t0 = time.perf_counter()
            await asyncio.gather(*(worker() for _ in range(32)))
            rate = done / (time.perf_counter() - t0)
            print(f"| {label} | {ms(pct(lat, 50))} | {ms(pct(lat, 99))} | {rate:,.0f} |",
                  flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller budgets, for a smoke run")
    parser.add_argument("--only", choices=("in-process", "grpc"),
                        help="print one table only")
    args = parser.parse_args()
    budget = 0.5 if args.quick else 3.0
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, "
          f"protobuf backend {_backend()}\n")
    if args.only != "grpc":
        in_process([10, 100, 1_000, 10_000], budget)
        print()
    if args.only == "in-process":
        return
    proc, target = start_server()
    try:
        asyncio.run(grpc_rows(target, [10, 100, 1_000], 1.0 if args.quick else 4.0))
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _backend() -> str:
    from google.protobuf.internal import api_implementation

    return api_implementation.Type()


if __name__ == "__main__":
    main()
