"""The shim at scale, as an operator runs it: 1,000 JobSets of 5 Jobs through each controller stage.

This process holds the fake API server (tests/fakekube) and its Job simulator, and times every
stage from the store's own events; `decider serve` and `decider-shim` run as the processes a
user starts (the shim on the fake server's kubeconfig, the decider on a loopback port), so the
shim's CPU seconds and peak RSS are its own. For each client-side limit in --limits, on a fresh
cluster and a fresh shim:

1. created -> all Jobs exist: N JobSets (one replicated Job of 5, DNS hostnames on, so a
   headless Service each) are created at once; done when every JobSet's 5 Jobs exist.
2. restarts -> new Jobs: once every Job runs and the shim is quiet (no request for 2 s), a Job
   fails in each of --restarts JobSets at once (RestartJobSet); done when each has its 5 Jobs
   of the next attempt.
3. Jobs done -> JobSets Completed: once those run and the shim is quiet, every Job succeeds at
   once; done when every JobSet has its Completed condition.

Per stage: the wall time to the last JobSet, per-JobSet p50/p99, and the shim's CPU seconds
(utime + stime); at the end its peak RSS (VmHWM) and CPU per JobSet. The fake API server is
Python, in this process: its cost is inside the wall times (a real kube-apiserver answers a
write in ~1-5 ms), and it competes with the shim for the same cores.

    python bench/shim_scale.py [--jobsets 1000] [--restarts 100] [--limits default,5/10]
                               [--workers 4] [--profile DIR]

`--real` runs the same stages on a real control plane (Kubernetes from source, KWOK nodes) and
upstream's JobSet controller beside the shim: bench/shim_scale_real.py.

`--limits default` runs the shim without the flags (its defaults); `Q/B` passes
`--kube-api-qps Q --kube-api-burst B`. `--profile DIR` runs the shim under py-spy (PyPI
`py-spy`) and writes its collapsed stacks per limit there, and prints the functions that took
the most of its samples.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "clients" / "python")]

from fakekube import FakeKube, JobSimulator  # noqa: E402

CONTROLLER = "jobset-decider.io/shim"
NS = "scale"
REPLICAS = 5
NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
ATTEMPT_LABEL = "jobset.sigs.k8s.io/restart-attempt"
JOBS = "batch/v1/jobs"
JOBSETS = "jobset.x-k8s.io/v1alpha2/jobsets"
TICK = os.sysconf("SC_CLK_TCK")


def jobset(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "managedBy": CONTROLLER,
            "failurePolicy": {"maxRestarts": 10},
            "successPolicy": {"operator": "All"},
            "startupPolicy": {"startupPolicyOrder": "AnyOrder"},
            "network": {"enableDNSHostnames": True, "publishNotReadyAddresses": True},
            "replicatedJobs": [{
                "name": "w",
                "groupName": "default",
                "replicas": REPLICAS,
                "template": {"spec": {
                    "parallelism": 1,
                    "completions": 1,
                    "completionMode": "Indexed",
                    "backoffLimit": 0,
                    "template": {"spec": {
                        "restartPolicy": "Never",
                        "containers": [{"name": "main", "image": "busybox"}],
                    }},
                }},
            }],
        },
    }


# ---- what the store saw ---------------------------------------------------------------------


@dataclass
class Seen:
    """Store events, by JobSet: when each Job of each attempt appeared, when it completed."""

    jobs: dict[tuple[str, str], dict[str, float]] = field(default_factory=dict)
    completed: dict[str, float] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def on_store(self, resource: str, event_type: str, obj: dict[str, Any]) -> None:
        if event_type == "DELETED":
            return
        meta = obj["metadata"]
        now = time.monotonic()
        if resource == JOBS and event_type == "ADDED":
            labels = meta.get("labels") or {}
            key = (labels.get(NAME_LABEL, ""), labels.get(ATTEMPT_LABEL, ""))
            with self.lock:
                self.jobs.setdefault(key, {}).setdefault(meta["name"], now)
        elif resource == JOBSETS:
            for cond in (obj.get("status") or {}).get("conditions") or []:
                if cond.get("type") == "Completed" and cond.get("status") == "True":
                    with self.lock:
                        self.completed.setdefault(meta["name"], now)

    def all_jobs(self, names: list[str], attempt: str) -> dict[str, float] | None:
        """When each JobSet had all its Jobs of `attempt`; None until every one has."""
        out = {}
        with self.lock:
            for name in names:
                jobs = self.jobs.get((name, attempt), {})
                if len(jobs) < REPLICAS:
                    return None
                out[name] = max(jobs.values())
        return out

    def all_completed(self, names: list[str]) -> dict[str, float] | None:
        with self.lock:
            if any(n not in self.completed for n in names):
                return None
            return {n: self.completed[n] for n in names}


def wait(pred: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = pred()
        if got:
            return got
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout:.0f} s")
        time.sleep(0.05)


def quiet(kube: FakeKube, seconds: float, timeout: float) -> None:
    """Wait until the API server has had no request for `seconds`: the shim has finished the
    passes the last stage's events gave it, so the next stage measures its own."""
    deadline = time.monotonic() + timeout
    last, since = -1, time.monotonic()
    while time.monotonic() - since < seconds:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the shim not quiet within {timeout:.0f} s")
        count = sum(kube.request_counts.values())
        if count != last:
            last, since = count, time.monotonic()
        time.sleep(0.1)


def running(store: Any, jobs_rt: Any, names: list[str], attempt: str) -> bool:
    items, _ = store.list(jobs_rt, NS)
    active: dict[str, int] = {}
    for job in items:
        labels = job["metadata"].get("labels") or {}
        if (labels.get(ATTEMPT_LABEL) == attempt and not job["metadata"].get("deletionTimestamp")
                and (job.get("status") or {}).get("active")):
            active[labels.get(NAME_LABEL, "")] = active.get(labels.get(NAME_LABEL, ""), 0) + 1
    return all(active.get(n, 0) == REPLICAS for n in names)


# ---- the processes --------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime


def tree_cpu_seconds(pid: int) -> float:
    """CPU seconds of a process and every process under it (the decider's workers)."""
    total = cpu_seconds(pid)
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            with contextlib.suppress(OSError):
                total += tree_cpu_seconds(int(child))
    return total


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def start_decider(port: int, workers: int | None) -> subprocess.Popen:
    cmd = [str(Path(sys.executable).parent / "decider"), "serve", "--host", "127.0.0.1",
           "--port", str(port)]
    if workers:
        cmd += ["--workers", str(workers)]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    import grpc

    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        grpc.channel_ready_future(channel).result(timeout=60)
    finally:
        channel.close()
    return proc


def start_shim(kubeconfig: Path, decider: str, limit: str, workers: int,
               profile: Path | None, log: Path) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "shim.main", "--kubeconfig", str(kubeconfig),
           "--decider-address", decider, "--no-leader-elect", "--workers", str(workers),
           "--log-level", "WARNING"]
    if limit != "default":
        qps, _, burst = limit.partition("/")
        cmd += ["--kube-api-qps", qps, "--kube-api-burst", burst or "1"]
    if profile is not None:
        spy = shutil.which("py-spy")
        if spy is None:
            raise SystemExit("--profile needs py-spy (pip install py-spy)")
        stacks = profile / f"shim-{limit.replace('/', '-')}.txt"
        # Collapsed stacks (flamegraph.pl / speedscope read them; so does `--top` below).
        # --gil: only samples of the thread holding the GIL, i.e. where its CPU goes.
        cmd = [spy, "record", "--rate", "100", "--gil", "--format", "raw", "-o", str(stacks),
               "--", *cmd]
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    return subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=log.open("w"),
                            env=env)


def shim_pid(proc: subprocess.Popen, profiled: bool) -> int:
    """The shim's own pid (under py-spy, its child's)."""
    if not profiled:
        return proc.pid

    def child() -> int | None:
        for task in Path(f"/proc/{proc.pid}/task").iterdir():
            kids = (task / "children").read_text().split()
            if kids:
                return int(kids[0])
        return None

    return wait(child, 30, "the profiled shim")


# ---- one run --------------------------------------------------------------------------------


def pcts(latencies: list[float]) -> tuple[float, float]:
    ordered = sorted(latencies)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]


def run(limit: str, args: argparse.Namespace, decider: str, decider_pid: int,
        tmp: Path) -> dict[str, Any]:
    kube = FakeKube(bookmark_interval=60.0).start()
    sim = JobSimulator(kube.store, pods=False).start()
    seen = Seen()
    store = kube.store
    store.add_listener(seen.on_store)
    js_rt = store.resource_for("jobset.x-k8s.io", "v1alpha2", "jobsets")
    jobs_rt = store.resource_for("batch", "v1", "jobs")
    kubeconfig = kube.write_kubeconfig(tmp / f"kubeconfig-{limit.replace('/', '-')}")
    log = tmp / f"shim-{limit.replace('/', '-')}.log"
    profiled = args.profile is not None
    shim = start_shim(kubeconfig, decider, limit, args.workers,
                      Path(args.profile) if profiled else None, log)
    out: dict[str, Any] = {"limit": limit, "stages": {}}
    names = [f"js{i:05d}" for i in range(args.jobsets)]
    timeout = args.timeout
    try:
        pid = shim_pid(shim, profiled)
        # Started: the caches synced (an empty cluster), nothing to do yet.
        wait(lambda: kube.reads("/jobsets$", watch=True), 60, "the shim's JobSet watch")
        cpu0 = cpu_seconds(pid)

        def snapshot() -> tuple[float, float, float]:
            """CPU seconds so far: the shim, this process (the fake API server), the decider."""
            return cpu_seconds(pid), cpu_seconds(os.getpid()), tree_cpu_seconds(decider_pid)

        def stage(key: str, started: dict[str, float], done: dict[str, float],
                  before: tuple[float, float, float]) -> None:
            shim_cpu, api_cpu, decider_cpu = (b - a for a, b in zip(before, snapshot(),
                                                                     strict=True))
            lat = [done[n] - started[n] for n in done]
            p50, p99 = pcts(lat)
            wall = max(done.values()) - min(started.values())
            out["stages"][key] = {"wall": wall, "p50": p50, "p99": p99, "cpu": shim_cpu,
                                  "n": len(done), "api_cpu": api_cpu,
                                  "decider_cpu": decider_cpu}
            print(f"  [{limit}] {key}: {wall:.1f} s (p50 {p50:.1f} s, p99 {p99:.1f} s), CPU s: "
                  f"shim {shim_cpu:.1f}, fake API server {api_cpu:.1f}, decider "
                  f"{decider_cpu:.1f}", file=sys.stderr, flush=True)

        # 1. created -> all Jobs exist.
        created: dict[str, float] = {}
        before = snapshot()
        for name in names:
            created[name] = time.monotonic()
            store.create(js_rt, NS, jobset(name))
        done = wait(lambda: seen.all_jobs(names, "0"), timeout, "all Jobs created")
        stage("created -> all Jobs exist", created, done, before)
        wait(lambda: running(store, jobs_rt, names, "0"), timeout, "all Jobs running")
        quiet(kube, 2.0, timeout)

        # 2. restarts -> new Jobs.
        restarted = names[:: max(1, len(names) // args.restarts)][: args.restarts]
        failed: dict[str, float] = {}
        before = snapshot()
        for name in restarted:
            failed[name] = time.monotonic()
            sim.fail(NS, f"{name}-w-0")
        done = wait(lambda: seen.all_jobs(restarted, "1"), timeout, "the restarted Jobs")
        stage(f"restarts ({len(restarted)}) -> new Jobs", failed, done, before)
        wait(lambda: running(store, jobs_rt, restarted, "1"), timeout, "restarted Jobs running")
        quiet(kube, 2.0, timeout)

        # 3. Jobs done -> JobSets Completed.
        finished: dict[str, float] = {}
        before = snapshot()
        items, _ = store.list(jobs_rt, NS)
        live = [j for j in items if not j["metadata"].get("deletionTimestamp")]
        for job in live:
            sim.succeed(NS, job["metadata"]["name"])
            owner = (job["metadata"].get("labels") or {}).get(NAME_LABEL, "")
            finished[owner] = time.monotonic()
        done = wait(lambda: seen.all_completed(names), timeout, "all JobSets Completed")
        stage("Jobs done -> JobSets Completed", finished, done, before)

        out["cpu_total"] = cpu_seconds(pid) - cpu0
        # Idle: every JobSet finished, nothing changes; what does watching 1,000 cost?
        quiet(kube, 2.0, timeout)
        idle0 = cpu_seconds(pid)
        time.sleep(args.idle)
        out["idle_cpu_pct"] = 100 * (cpu_seconds(pid) - idle0) / args.idle
        out["cpu_per_jobset_ms"] = out["cpu_total"] / len(names) * 1000
        out["peak_rss_mb"] = peak_rss_mb(pid)
        out["requests"] = sum(kube.request_counts.values())
        by: dict[str, int] = {}
        for rec in kube.audit:
            kind = rec.path.rstrip("/").split("/")[-1 if rec.method == "POST" else -2]
            if rec.path.endswith("/status"):
                kind = "jobsets/status"
            key = f"{rec.method} {kind}"
            by[key] = by.get(key, 0) + 1
        out["writes"] = dict(sorted(by.items(), key=lambda kv: -kv[1]))
        return out
    finally:
        if profiled:
            # Interrupted, py-spy writes its stacks and leaves the shim running; then the shim.
            child = shim_pid(shim, True)
            shim.send_signal(signal.SIGINT)
            shim.wait(timeout=300)
            os.kill(child, signal.SIGTERM)
            wait(lambda: not Path(f"/proc/{child}").exists()
                 or "zombie" in Path(f"/proc/{child}/status").read_text(), 120, "the shim")
        else:
            shim.terminate()
            try:
                shim.wait(timeout=120)
            except subprocess.TimeoutExpired:
                shim.kill()
        sim.stop()
        kube.stop()


def top(stacks: Path, n: int = 25) -> None:
    """The functions in most of the samples (inclusive) and on top of them (self)."""
    inclusive: dict[str, int] = {}
    own: dict[str, int] = {}
    total = 0
    for line in stacks.read_text().splitlines():
        frames, _, count = line.rpartition(" ")
        if not frames or not count.isdigit():
            continue
        k = int(count)
        total += k
        names = [f.split(" (")[0] + " (" + f.split(" (")[-1].split(":")[0].rsplit("/", 1)[-1]
                 + ")" if " (" in f else f for f in frames.split(";")]
        for name in set(names):
            inclusive[name] = inclusive.get(name, 0) + k
        own[names[-1]] = own.get(names[-1], 0) + k
    print(f"\n{stacks.name}: {total:,} samples (idle threads included)")
    for title, table in (("inclusive", inclusive), ("self", own)):
        print(f"  top {title}:")
        for name, k in sorted(table.items(), key=lambda kv: -kv[1])[:n]:
            print(f"    {100 * k / max(total, 1):5.1f}%  {name}")


def report(rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    print()
    print(f"{args.jobsets:,} JobSets of {REPLICAS} Jobs, fake API server in the bench process, "
          f"`decider serve` and `decider-shim` (--workers {args.workers}) as processes; "
          f"{os.cpu_count()} cores")
    print()
    heads = " | ".join(f"{r['limit'] if r['limit'] != 'default' else 'defaults (500/500)'}"
                       f" s (p50, p99 per JobSet) | shim CPU s" for r in rows)
    print(f"| stage | {heads} |")
    print("|---|" + "---:|---:|" * len(rows))
    for key in rows[0]["stages"]:
        cells = []
        for r in rows:
            s = r["stages"].get(key)
            cells.append(f"{s['wall']:.1f} ({s['p50']:.1f}, {s['p99']:.1f}) | {s['cpu']:.1f}"
                         if s else "n/a | n/a")
        print(f"| {key} | " + " | ".join(cells) + " |")
    print("| (fake API server and Job simulator CPU s, by stage) | " + " | ".join(
        " / ".join(f"{s['api_cpu']:.1f}" for s in r["stages"].values()) + " | "
        for r in rows))
    print("| (`decider serve` CPU s, by stage) | " + " | ".join(
        " / ".join(f"{s['decider_cpu']:.1f}" for s in r["stages"].values()) + " | "
        for r in rows))
    print("| shim CPU per JobSet, whole run | "
          + " | ".join(f"{r['cpu_per_jobset_ms']:.1f} ms | " for r in rows))
    print("| shim peak RSS | " + " | ".join(f"{r['peak_rss_mb']:.0f} MB | " for r in rows))
    print(f"| shim CPU idle afterwards ({args.idle:g} s) | "
          + " | ".join(f"{r['idle_cpu_pct']:.1f} % of a core | " for r in rows))
    print("| API requests the fake server answered | "
          + " | ".join(f"{r['requests']:,} | " for r in rows))
    for r in rows:
        print(f"\n{r['limit']}: writes and gets of one object: "
              + ", ".join(f"{k} {v:,}" for k, v in r["writes"].items()))


def main() -> None:
    if "--real" in sys.argv[1:]:
        # A real control plane, beside upstream's controller: bench/shim_scale_real.py.
        from bench import shim_scale_real

        shim_scale_real.main(sys.argv[1:])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobsets", type=int, default=1000)
    parser.add_argument("--restarts", type=int, default=100)
    parser.add_argument("--limits", default="default,5/10")
    parser.add_argument("--workers", type=int, default=4, help="the shim's --workers")
    parser.add_argument("--decider-workers", type=int, default=0,
                        help="decider serve --workers (default: its own)")
    parser.add_argument("--timeout", type=float, default=3600.0, help="per stage, seconds")
    parser.add_argument("--idle", type=float, default=10.0,
                        help="seconds the shim's idle CPU is measured at the end")
    parser.add_argument("--profile", metavar="DIR", help="py-spy stacks of the shim here")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    if args.profile:
        Path(args.profile).mkdir(parents=True, exist_ok=True)
    port = free_port()
    decider = start_decider(port, args.decider_workers or None)
    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for limit in args.limits.split(","):
                rows.append(run(limit, args, f"127.0.0.1:{port}", decider.pid, Path(tmp)))
                print(f"  {limit} done", file=sys.stderr, flush=True)
            report(rows, args)
            print(f"\n(decider serve: {tree_cpu_seconds(decider.pid):.1f} CPU s over every run)")
            for limit in args.limits.split(",") if args.profile else ():
                name = limit.replace("/", "-")
                stacks = Path(args.profile) / f"shim-{name}.txt"
                if stacks.exists():
                    top(stacks)
                else:
                    log = (Path(tmp) / f"shim-{name}.log").read_text()
                    print(f"no stacks from py-spy; the shim's log ends:\n{log[-2000:]}")
    finally:
        decider.terminate()
        decider.wait(timeout=60)


if __name__ == "__main__":
    main()
