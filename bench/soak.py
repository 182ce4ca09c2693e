"""Fuzz and soak a running `decider serve`: status codes per RPC, latency percentiles, and the
server's memory over time.

Two phases against one server process (its decision workers included in the memory figures):
1. fuzz: N requests drawn from a fixed mix of valid and hostile ones (undecodable bytes, lone
   surrogates, out-of-range timestamps, huge and negative counts, deep nesting, pathological
   patterns, oversized plans), 32 in flight; prints the codes each RPC got.
2. soak: valid Decide requests (10 Jobs), 32 in flight, for S seconds; prints throughput,
   latency percentiles, errors, and resident memory sampled every 10 s.

With --baseline REF the soak also runs against the server of an older commit (`git archive`
of REF, run from a temporary directory), interleaved with this tree's in one run, so the two
throughputs are comparable on this shared machine.

Usage: python bench/soak.py [--requests 100000] [--seconds 120] [--workers N] [--baseline REF]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import random
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import grpc
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from decider_api.v1 import decider_pb2 as pb  # noqa: E402
from decider_client import observe  # noqa: E402
from support.builders import NOW  # noqa: E402

EXAMPLE = yaml.safe_load((ROOT / "examples" / "leader-workers.yaml").read_text())
IN_FLIGHT = 32
PATTERNS = ("(a+)+$", "(.*)*X", "(x+x+)+y", "((a|aa)+)+b")


def _jobset(**spec: object) -> dict:
    js = json.loads(json.dumps(EXAMPLE))
    js["spec"].update(spec)
    return js


def _decide(js: dict, jobs: list | None = None) -> pb.DecideRequest:
    return observe.build_decide_request(js, jobs or [], NOW)


def _steady_request(n_jobs: int = 10) -> bytes:
    """Decide for a JobSet whose n Jobs all exist and run: the shim's everyday request."""
    js = _jobset()
    js["spec"]["replicatedJobs"][1]["replicas"] = n_jobs - 1
    jobs = []
    for rj, count in (("leader", 1), ("workers", n_jobs - 1)):
        for i in range(count):
            jobs.append({"apiVersion": "batch/v1", "kind": "Job", "metadata": {
                "name": f"trainer-{rj}-{i}", "uid": f"u-{rj}-{i}", "labels": {
                    "jobset.sigs.k8s.io/jobset-name": "trainer",
                    "jobset.sigs.k8s.io/replicatedjob-name": rj,
                    "jobset.sigs.k8s.io/restart-attempt": "0",
                    "jobset.sigs.k8s.io/job-index": str(i)},
                "ownerReferences": [{"uid": js["metadata"].get("uid", ""), "controller": True,
                                     "kind": "JobSet", "name": "trainer"}]},
                "spec": {"parallelism": 1, "completions": 1},
                "status": {"active": 1, "ready": 1}})
    return _decide(js, jobs).SerializeToString()


def _hostile_mix(rng: random.Random) -> list[tuple[str, bytes]]:
    """(method, serialized request) pairs, valid and hostile, built once."""
    out: list[tuple[str, bytes]] = []
    base = _decide(_jobset())
    out += [("Decide", base.SerializeToString())] * 20
    out.append(("Decide", _steady_request(10)))
    out.append(("Decide", _steady_request(100)))
    for raw in (b"\xff\xff\xff\x0f junk", b"\x0a\x02\xc3\x28", os.urandom(64)):
        out.append(("Decide", raw))
        out.append(("Validate", raw))
    for seconds, nanos in ((10**15, 0), (-(10**15), 0), (0, -1), (0, 10**9)):
        req = _decide(_jobset())
        req.now.seconds, req.now.nanos = seconds, nanos
        out.append(("Decide", req.SerializeToString()))
    text = json.dumps(_jobset())
    for bad in (text.replace('"trainer"', '"tr\\ud800"', 1),
                text.replace('"spec"', '"sp\\udc00ec"', 1), "[" * 5000 + "]" * 5000,
                text.replace('"replicas": 3', '"replicas": 1e999')):
        req = _decide(_jobset())
        req.jobset_json = bad
        out.append(("Decide", req.SerializeToString()))
        out.append(("Validate", pb.ValidateRequest(object_json=bad).SerializeToString()))
        out.append(("PlanGang", pb.PlanGangRequest(object_json=bad).SerializeToString()))
    for replicas in (-1, 2**31 - 1, 2**63, 100_001):
        js = _jobset()
        js["spec"]["replicatedJobs"][1]["replicas"] = replicas
        out.append(("Decide", _decide(js).SerializeToString()))
        out.append(("PodSets", pb.PodSetsRequest(object_json=json.dumps(js))
                    .SerializeToString()))
    for pattern in PATTERNS:
        js = _jobset(failurePolicy={"maxRestarts": 3, "rules": [
            {"name": "slow", "action": "FailJobSet", "onJobFailureMessagePatterns": [pattern]}]})
        failed = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {
            "name": "trainer-workers-0", "uid": "u0", "labels": {
                "jobset.sigs.k8s.io/replicatedjob-name": "workers",
                "jobset.sigs.k8s.io/restart-attempt": "0",
                "jobset.sigs.k8s.io/job-index": "0"},
            "ownerReferences": [{"uid": js["metadata"].get("uid", ""), "controller": True}]},
            "status": {"failed": 1, "conditions": [{
                "type": "Failed", "status": "True", "reason": "PodFailurePolicy",
                "message": "a" * 40 + "!"}]}}
        out.append(("Decide", _decide(js, [failed]).SerializeToString()))
        out.append(("Validate", pb.ValidateRequest(object_json=json.dumps(js))
                    .SerializeToString()))
    big = _jobset()
    big["spec"]["replicatedJobs"][1]["replicas"] = 99_999  # 100,000 Jobs in all
    out.append(("Decide", _decide(big).SerializeToString()))  # plan over 64 MiB
    rng.shuffle(out)
    return out


class Server:
    def __init__(self, label: str, cwd: Path, workers: int,
                 env: dict[str, str] | None = None, flags: tuple[str, ...] = ()) -> None:
        env = dict(os.environ, PYTHONPATH=f"{cwd}:{cwd / 'clients' / 'python'}", **(env or {}))
        args = [sys.executable, "-m", "decider.cli", "serve", "--host", "127.0.0.1",
                "--port", "0", *flags]
        if workers and any((cwd / "decider" / rel).exists()
                           for rel in ("service/pool.py", "pool.py")):
            args += ["--workers", str(workers), "--drain-delay", "0"]
        self.label = label
        self.proc = subprocess.Popen(args, cwd=cwd, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True)
        assert self.proc.stdout is not None
        self.target = self.proc.stdout.readline().strip().rsplit(" ", 1)[-1]

    def rss_mib(self) -> float:
        pids = [self.proc.pid]
        children = subprocess.run(["pgrep", "-P", str(self.proc.pid)], capture_output=True,
                                  text=True).stdout.split()
        pids += [int(p) for p in children]
        total = 0
        for pid in pids:
            try:
                with open(f"/proc/{pid}/status") as f:
                    for line in f:
                        if line.startswith("VmRSS:"):
                            total += int(line.split()[1])
            except FileNotFoundError:
                pass
        return total / 1024

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _identity(b: bytes) -> bytes:
    return b


async def _drive(target: str, items: list[tuple[str, bytes]], count: int | None,
                 seconds: float | None, on_tick: object = None
                 ) -> tuple[dict[str, collections.Counter[str]], dict[str, list[float]], float]:
    """Send items round-robin, IN_FLIGHT at a time, for `count` requests or `seconds`."""
    options = [("grpc.max_receive_message_length", 256 << 20),
               ("grpc.max_send_message_length", 256 << 20)]
    codes: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    latencies: dict[str, list[float]] = collections.defaultdict(list)
    async with grpc.aio.insecure_channel(target, options=options) as channel:
        # A method name of the Decider service, or a full path ("/grpc.health.v1.Health/Check").
        calls = {m: channel.unary_unary(m if m.startswith("/") else f"/decider.v1.Decider/{m}",
                                        request_serializer=_identity,
                                        response_deserializer=_identity)
                 for m in {m for m, _ in items} | {"Decide"}}
        warm_up = _decide(_jobset()).SerializeToString()
        await calls["Decide"](warm_up, timeout=30, wait_for_ready=True)
        started = time.monotonic()
        sent = 0

        def more() -> bool:
            if count is not None:
                return sent < count
            return time.monotonic() - started < (seconds or 0)

        async def worker() -> None:
            nonlocal sent
            while more():
                method, payload = items[sent % len(items)]
                sent += 1
                t = time.monotonic()
                try:
                    await calls[method](payload, timeout=30)
                    code = "OK"
                except grpc.aio.AioRpcError as exc:
                    code = exc.code().name
                codes[method][code] += 1
                latencies[method].append(time.monotonic() - t)

        ticker = asyncio.ensure_future(on_tick()) if on_tick else None  # type: ignore[operator]
        await asyncio.gather(*(worker() for _ in range(IN_FLIGHT)))
        if ticker:
            ticker.cancel()
        return codes, latencies, time.monotonic() - started


def _pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(p / 100 * len(values)))] * 1000


def fuzz(server: Server, n: int) -> None:
    items = _hostile_mix(random.Random(8))
    codes, latencies, took = asyncio.run(_drive(server.target, items, n, None))
    print(f"\n## Fuzz: {n:,} requests ({len(items)} distinct, valid and hostile), "
          f"{IN_FLIGHT} in flight, {took:.1f} s, server RSS after {server.rss_mib():.0f} MiB\n")
    print("| RPC | requests | codes | p50 ms | p99 ms | max ms |")
    print("|---|---:|---|---:|---:|---:|")
    for method in sorted(codes):
        lat = latencies[method]
        summary = ", ".join(f"{c} {k:,}" for c, k in codes[method].most_common())
        print(f"| {method} | {len(lat):,} | {summary} | {_pct(lat, 50):.1f} | "
              f"{_pct(lat, 99):.1f} | {max(lat) * 1000:.0f} |")


def soak(servers: list[Server], seconds: float, rounds: int) -> None:
    items = [("Decide", _steady_request(10))]
    per_server: dict[str, dict[str, list[float]]] = {
        s.label: {"rps": [], "lat": [], "errors": [], "rss": []} for s in servers}
    for r in range(rounds):
        for server in servers:  # interleaved: each round runs every server once
            stats = per_server[server.label]

            async def tick(server: Server = server, stats: dict = stats) -> None:
                while True:
                    stats["rss"].append(server.rss_mib())
                    await asyncio.sleep(10)

            codes, latencies, took = asyncio.run(
                _drive(server.target, items, None, seconds / rounds, tick))
            stats["rps"].append(sum(codes["Decide"].values()) / took)
            stats["lat"].extend(latencies["Decide"])
            stats["errors"].append(sum(k for c, k in codes["Decide"].items() if c != "OK"))
            stats["rss"].append(server.rss_mib())
            print(f"  round {r + 1}/{rounds} {server.label}: "
                  f"{stats['rps'][-1]:.0f} RPC/s", file=sys.stderr)
    print(f"\n## Soak: Decide, steady 10-Job JobSet, {IN_FLIGHT} in flight, {seconds:g} s per "
          f"server in {rounds} interleaved rounds\n")
    print("| server | RPC/s | p50 ms | p99 ms | errors | RSS MiB first / last / max |")
    print("|---|---:|---:|---:|---:|---|")
    for label, stats in per_server.items():
        rss = stats["rss"]
        print(f"| {label} | {statistics.mean(stats['rps']):,.0f} | {_pct(stats['lat'], 50):.2f} "
              f"| {_pct(stats['lat'], 99):.2f} | {sum(stats['errors'])} | "
              f"{rss[0]:.0f} / {rss[-1]:.0f} / {max(rss):.0f} |")


def _checkout(ref: str, into: Path) -> Path:
    archive = subprocess.run(["git", "archive", ref], cwd=ROOT, capture_output=True,
                             check=True).stdout
    tar = into / "src.tar"
    tar.write_bytes(archive)
    with tarfile.open(tar) as t:
        t.extractall(into / "src", filter="data")
    return into / "src"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--baseline", help="git ref of the server to compare (e.g. a5ccc9b)")
    args = parser.parse_args()
    print(f"# decider soak, {time.strftime('%Y-%m-%d')}, {os.cpu_count()} CPUs, "
          f"Python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory() as tmp:
        servers = [Server("this tree", ROOT, args.workers)]
        if args.baseline:
            servers.append(Server(f"baseline {args.baseline}", _checkout(args.baseline,
                                                                         Path(tmp)), 0))
        try:
            if args.requests:
                fuzz(servers[0], args.requests)
            if args.seconds:
                soak(servers, args.seconds, args.rounds)
        finally:
            for s in servers:
                s.stop()


if __name__ == "__main__":
    main()
