"""Decision time by JobSet size and shape, and gRPC Decide against the transport floor.

Prints (Markdown), after the machine, its load and the date:
1. in-process, by size: `decide()` on the core's types ("core") and what a decision worker runs
   per request ("worker": `dispatch.answer`, request bytes in, answer bytes out) for JobSets of
   4 replicated Jobs and 10 to 10,000 Jobs, steady, restart and recreate (bench/inproc.py);
2. in-process, by shape: 10,000 Jobs as 10 x 1,000 to 2,000 x 5 replicated Jobs, and 4,000 x 1;
3. the replicated-Job sweep: 1 Job x R replicated Jobs, R = 250 to 4,000, with the ratio of
   each time to the one at half the size (linear: about 2);
4. gRPC, one server process on this machine: latency (one call in flight) and throughput
   (32 calls in flight from an asyncio client) of Decide for steady JobSets, beside the
   standard health Check on the same server, an RPC that does no work (the transport floor).

Every in-process repetition is interleaved across cases (and, with --baseline, across this tree
and the baseline's, each in its own process), so a slow moment of a shared machine falls on all
alike; both trees must give byte-identical answers.

Usage: python bench/decide_bench.py [--quick] [--only in-process|grpc] [--baseline REF]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import platform
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from inproc import Case, Result, Tree, measure, pct  # noqa: E402

from decider.core.decide import decide  # noqa: E402
from decider.core.model import Observed  # noqa: E402
from decider_client import observe  # noqa: E402
from support.builders import job, jobset, rjob, service  # noqa: E402

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)
SIZES = [10, 100, 1_000, 10_000]
SITUATIONS = ["steady", "restart", "recreate"]
SHAPES = [(10_000, 10), (10_000, 100), (10_000, 1_000), (10_000, 2_000), (4_000, 4_000)]
SWEEP = [250, 500, 1_000, 2_000, 4_000]


def scenario(n_jobs: int, kind: str) -> tuple[dict, list]:
    """A JobSet of 4 replicated Jobs totalling exactly n_jobs child Jobs (the gRPC rows)."""
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


def ms(x: float) -> str:
    return f"{x * 1000:.2f}"


def machine() -> str:
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (f"{cores} cores ({model}), Python {sys.version.split()[0]}, protobuf backend "
            f"{_backend()}, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC")


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f}"


def checkout(ref: str, into: Path) -> Path:
    """The tree of git ref `ref`, unpacked under `into`."""
    archive = subprocess.run(["git", "archive", ref], cwd=ROOT, capture_output=True,
                             check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


class Report:
    """Tables over one Result: this tree's numbers, and the baseline's beside them."""

    def __init__(self, result: Result, baseline: bool) -> None:
        self.result = result
        self.baseline = baseline

    def samples(self, case: Case, tree: str = "this") -> list[float]:
        return self.result.samples[(tree, case)]

    def cell(self, case: Case) -> str:
        mine = self.samples(case)
        out = f"{ms(statistics.median(mine))} | {ms(pct(mine, 99))}"
        if self.baseline:
            base = self.samples(case, "baseline")
            ratio = statistics.median(base) / statistics.median(mine)
            out += f" | {ms(statistics.median(base))} | {ratio:.1f}x"
        return out

    def header(self, first: str) -> None:
        cols = ["median ms", "p99 ms"] + (["baseline median ms", "speed-up"]
                                          if self.baseline else [])
        names = [f"{path} {col}" for path in ("core", "worker") for col in cols]
        print(f"| {first} | actions | " + " | ".join(names) + " |")
        print("|---|---:|---:|" + "---:|" * len(names))

    def sizes(self) -> None:
        self.header("situation | child Jobs")
        for situation in SITUATIONS:
            for n in SIZES:
                core, worker = ("core", situation, n, 4), ("worker", situation, n, 4)
                print(f"| {situation} | {n:,} | {self.result.actions[core]:,} | "
                      f"{self.cell(core)} | {self.cell(worker)} |")

    def shapes(self) -> None:
        extra = " baseline µs per Job | speed-up |" if self.baseline else ""
        print(f"| situation | replicated Jobs x Jobs | worker median ms | µs per Job |{extra}")
        print("|---|---|---:|---:|" + ("---:|---:|" if self.baseline else ""))
        for situation in SITUATIONS:
            for n, r in SHAPES:
                case = ("worker", situation, n, r)
                mine = statistics.median(self.samples(case))
                row = (f"| {situation} | {r:,} x {n // r:,} | {ms(mine)} | "
                       f"{mine / n * 1e6:.1f} |")
                if self.baseline:
                    base = statistics.median(self.samples(case, "baseline"))
                    row += f" {base / n * 1e6:.1f} | {base / mine:.1f}x |"
                print(row)

    def sweep(self) -> None:
        """Median times; the ratio to half the size is of the best times (a burst of another
        process's work on this shared machine moves a median of a few slow calls)."""
        trees = ["this", "baseline"] if self.baseline else ["this"]
        cols = "".join(f" {t} median ms | {t} best ms | x per doubling |" for t in trees)
        print(f"| situation | replicated Jobs (1 Job each) |{cols}")
        print("|---|---:|" + "---:|---:|---:|" * len(trees))
        for situation in SITUATIONS:
            before: dict[str, float] = {}
            for r in SWEEP:
                row = f"| {situation} | {r:,} |"
                for tree in trees:
                    samples = self.samples(("worker", situation, r, r), tree)
                    best = min(samples)
                    ratio = f"{best / before[tree]:.2f}" if tree in before else ""
                    row += f" {ms(statistics.median(samples))} | {ms(best)} | {ratio} |"
                    before[tree] = best
                print(row)


def in_process(quick: bool, baseline: str | None) -> None:
    cases: list[Case] = [(path, situation, n, 4) for situation in SITUATIONS for n in SIZES
                         for path in ("core", "worker")]
    cases += [("worker", situation, n, r) for situation in SITUATIONS for n, r in SHAPES]
    cases += [("worker", situation, r, r) for situation in SITUATIONS for r in SWEEP]
    with tempfile.TemporaryDirectory() as tmp:
        trees = [Tree("this", ROOT)]
        if baseline is not None:
            trees.append(Tree("baseline", checkout(baseline, Path(tmp))))
        try:
            result = measure(trees, cases, 0.2 if quick else 1.5, rounds=3 if quick else 5)
        finally:
            for tree in trees:
                tree.close()
    report = Report(result, baseline is not None)
    what = f" against {baseline}" if baseline else ""
    print(f"By size{what}: 4 replicated Jobs, 4 pods per Job.\n")
    report.sizes()
    print(f"\nBy shape{what} (worker path).\n")
    report.shapes()
    print(f"\nReplicated-Job sweep{what} (worker path).\n")
    report.sweep()


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

    from decider_api.v1 import decider_pb2_grpc as pb_grpc

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
                        help="print one part only")
    parser.add_argument("--baseline", help="git ref to compare the in-process tables with, "
                                           "e.g. main (its tree is unpacked and measured in "
                                           "its own process, interleaved)")
    args = parser.parse_args()
    print(f"{machine()}; {load()} at the start.\n")
    if args.only != "grpc":
        in_process(args.quick, args.baseline)
        print(f"\n{load()} at the end of the in-process tables.\n")
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
