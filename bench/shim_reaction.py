"""The shim's reaction times against the fake API server: restart stages, creation, TTL.

For each scale (JobSets watched), a fresh fake cluster (tests/fakekube) gets that many JobSets
(one replicated Job of 2 replicas each, RestartJobSet policy, Recreate), a shim against a real
decider carries them to running, and then, one at a time:

- restart: a Job of a random JobSet fails. Its stages: failure written -> seen by the shim's
  informer -> restart recorded in the JobSet's status -> the old Jobs' DELETEs received; then
  per Job: its DELETE received -> gone from the store (foreground deletion done) -> the shim's
  informer sees it go -> a worker takes the JobSet -> Decide answers -> the create is sent ->
  the new Job is in the store. Also: failure -> first DELETE (the old single number) and
  failure -> every new Job created.
- create: a new JobSet is created -> both of its Jobs are in the store.
- ttl: JobSets with ttlSecondsAfterFinished finish, staggered over a second; the delay from the
  finish their status records (lastTransitionTime, whole seconds as metav1.Time) to the DELETE of
  the JobSet, and from the write of that status to the DELETE.

Each sample runs on a quiet shim (no pass for 0.3 s, the limiter's bucket full again), under
every client-side limit of --limits in turn (interleaved: sample i of every limit, then i+1);
the initial convergence runs under the first. `--pass-cost` measures instead what one pass
reads of the shim's caches at each scale (tests/shim/pass_cost.py: one in five JobSets
gang-scheduled, two pods each, InPlaceRestart on, an empty plan answered).

    python bench/shim_reaction.py [--scales 1,100,1000] [--samples 30] [--workers 4]
                                  [--limits 500/100,5/10] [--ttl 5] [--ttl-samples 10]

Everything runs in this process on loopback; the fake API server is Python, so absolute numbers
include its cost too (a real kube-apiserver answers a write in ~1-5 ms).
"""

from __future__ import annotations

import argparse
import json
import logging
import platform
import random
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "clients" / "python")]

from kubernetes import client  # noqa: E402

from bench.reaction_trace import Trace  # noqa: E402
from decider.service.server import BackgroundServer  # noqa: E402
from decider_client import DeciderClient  # noqa: E402
from fakekube import FakeKube, JobSimulator  # noqa: E402
from shim.config import Config  # noqa: E402
from shim.controller import Shim  # noqa: E402
from shim.main import build_kube  # noqa: E402

CONTROLLER = "jobset-decider.io/shim"
NS = "bench"
ATTEMPT = "jobset.sigs.k8s.io/restart-attempt"
REPLICAS = 2


def jobset(name: str, ttl: int | None = None) -> dict:
    spec: dict[str, Any] = {
        "managedBy": CONTROLLER,
        "failurePolicy": {"maxRestarts": 1000},
        "successPolicy": {"operator": "All"},
        "startupPolicy": {"startupPolicyOrder": "AnyOrder"},
        "network": {"enableDNSHostnames": True, "publishNotReadyAddresses": True},
        "replicatedJobs": [
            {
                "name": "w",
                "groupName": "default",
                "replicas": REPLICAS,
                "template": {
                    "spec": {
                        "parallelism": 1,
                        "completions": 1,
                        "completionMode": "Indexed",
                        "template": {
                            "spec": {
                                "restartPolicy": "OnFailure",
                                "containers": [{"name": "main", "image": "busybox"}],
                            }
                        },
                    }
                },
            }
        ],
    }
    if ttl is not None:
        spec["ttlSecondsAfterFinished"] = ttl
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": name, "namespace": NS},
        "spec": spec,
    }


def wait(pred, timeout: float, what: str, step: float = 0.001) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(step)


def job_names(name: str) -> list[str]:
    return [f"{name}-w-{i}" for i in range(REPLICAS)]


def running(store, jobs_rt, name: str, attempt: int) -> bool:
    for job_name in job_names(name):
        job = store.try_get(jobs_rt, NS, job_name)
        if (
            job is None
            or job["metadata"].get("deletionTimestamp")
            or job["metadata"]["labels"].get(ATTEMPT) != str(attempt)
            or not (job.get("status") or {}).get("active")
        ):
            return False
    return True


class Limits:
    """Switches the shim's client-side limiter between the settings compared."""

    def __init__(self, shim: Shim, specs: list[tuple[float, int]]) -> None:
        self.bucket = shim.kube.limiter
        self.specs = specs

    def use(self, qps: float, burst: int) -> None:
        if self.bucket is None:
            return
        self.bucket.qps, self.bucket.burst = qps, burst

    def refill_seconds(self, qps: float, burst: int) -> float:
        # An empty bucket (a few tokens in debt at most) is full again after this long.
        return (burst + 2) / qps if self.bucket is not None else 0.0


def label(spec: tuple[float, int]) -> str:
    return f"{spec[0]:g} QPS/burst {spec[1]}"


def quiet(shim: Shim, seconds: float) -> None:
    """Wait until no pass ran for `seconds` (delayed keys, e.g. TTL requeues, do not count)."""
    since = time.monotonic()
    while time.monotonic() - since < seconds:
        if not shim.queue.idle():
            since = time.monotonic()
        time.sleep(0.005)


def restart_sample(kube, sim, store, jobs_rt, trace: Trace, names: list[str],
                   attempts: dict[str, int]) -> list[dict]:
    """Fail a Job of each JobSet named at once; one stage breakdown per JobSet."""
    mark = len(kube.audit)
    failed: dict[str, float] = {}
    for name in names:
        failed[name] = time.monotonic()
        sim.fail(NS, f"{name}-w-0")
    for name in names:
        wait(lambda n=name: running(store, jobs_rt, n, attempts[n] + 1), 30, f"restart of {name}")
    out = []
    for name in names:
        prefix = f"/jobs/{name}-w-"
        deletes: dict[str, float] = {}
        for rec in kube.audit[mark:]:
            if rec.method == "DELETE" and prefix in rec.path:
                deletes.setdefault(rec.path.rsplit("/", 1)[1], rec.time)
        attempt = attempts[name]
        t0 = failed[name]
        stages = trace.restart_stages(t0, name, job_names(name), str(attempt), str(attempt + 1),
                                      deletes)
        stages["first_delete"] = min(deletes.values()) - t0 if deletes else None
        created = [j["created_at"] for j in stages["jobs"] if j]
        stages["all_created"] = max(created) - t0 if len(created) == REPLICAS else None
        attempts[name] += 1
        out.append(stages)
    return out


def create_sample(store, js_rt, jobs_rt, trace: Trace, name: str) -> float:
    t0 = time.monotonic()
    store.create(js_rt, NS, jobset(name))
    wait(lambda: all(store.try_get(jobs_rt, NS, n) for n in job_names(name)), 30,
         f"jobs of {name}")
    added = [r.t for r in trace.since(t0) if r.what == "job-added" and r.name in job_names(name)]
    return max(added) - t0


def ttl_samples(kube, sim, store, js_rt, jobs_rt, trace: Trace, names: list[str],
                ttl: int) -> list[dict]:
    """Finish each JobSet a tenth of a second after the previous one; measure their TTLs."""
    for name in names:
        store.create(js_rt, NS, jobset(name, ttl))
    wait(lambda: all(running(store, jobs_rt, n, 0) for n in names), 60, "TTL JobSets running")
    time.sleep((0.05 - time.time()) % 1.0)
    t0 = time.monotonic()
    finishing: dict[str, float] = {}
    for name in names:
        finishing[name] = time.monotonic()
        for job in job_names(name):
            sim.succeed(NS, job)
        time.sleep(1.0 / len(names))
    recorded: dict[str, datetime] = {}

    def completed() -> bool:
        for name in set(names) - set(recorded):
            js = store.try_get(js_rt, NS, name)
            for cond in ((js or {}).get("status") or {}).get("conditions") or []:
                if cond.get("type") == "Completed" and cond.get("status") == "True":
                    recorded[name] = datetime.fromisoformat(
                        cond["lastTransitionTime"].replace("Z", "+00:00"))
        return len(recorded) == len(names)

    wait(completed, 30, "TTL JobSets completed")
    wait(lambda: all(store.try_get(js_rt, NS, n) is None for n in names), ttl + 30,
         "TTL JobSets deleted")
    # Audit times are monotonic; a recorded finish is wall-clock time.
    offset = time.time() - time.monotonic()
    recs = trace.since(t0)
    out = []
    for name in names:
        delete = next(r for r in kube.audit if r.method == "DELETE"
                      and r.path.endswith(f"/jobsets/{name}"))
        written = next(r.t for r in recs if r.what == "jobset-finished" and r.name == name)
        out.append({
            "from_recorded_finish": delete.time + offset - recorded[name].timestamp(),
            "from_status_write": delete.time - written,
            "from_jobs_finishing": delete.time - finishing[name],
        })
    return out


def measure(scale: int, samples: int, workers: int, decider_target: str,
            specs: list[tuple[float, int]], ttl: int, ttl_count: int,
            pod_termination: float | None, concurrent: int) -> dict:
    kube = FakeKube(bookmark_interval=5.0).start()
    sim = JobSimulator(kube.store, pods=pod_termination is not None,
                       pod_termination_seconds=pod_termination or 0.0).start()
    cfg_k = client.Configuration()
    cfg_k.host = kube.url
    cfg_k.connection_pool_maxsize = 64
    qps, burst = specs[0]
    cfg = Config(
        controller_name=CONTROLLER,
        leader_elect=False,
        workers=workers,
        decider_timeout=10.0,
        backoff_base=0.05,
        backoff_max=2.0,
        kube_api_qps=qps,
        kube_api_burst=burst,
    )
    decider = DeciderClient(decider_target, timeout=10.0, options=[("grpc.so_reuseport", 0)])
    shim = Shim(cfg, build_kube(cfg, client.ApiClient(cfg_k)), decider)
    trace = Trace()
    store = kube.store
    store.add_listener(trace.on_store)
    trace.attach(shim)
    limits = Limits(shim, specs)
    jobs_rt = store.resource_for("batch", "v1", "jobs")
    js_rt = store.resource_for("jobset.x-k8s.io", "v1alpha2", "jobsets")
    results: dict[str, Any] = {"scale": scale, "by_limit": {label(s): {} for s in specs}}
    try:
        names = [f"js{i:04d}" for i in range(scale)]
        shim.start()
        started = time.monotonic()
        for name in names:
            store.create(js_rt, NS, jobset(name))
        wait(
            lambda: all(running(store, jobs_rt, n, 0) for n in names),
            60 + scale * 0.2,
            "initial convergence",
            step=0.01,
        )
        results["converge"] = time.monotonic() - started
        attempts = dict.fromkeys(names, 0)
        rng = random.Random(scale)
        conflicts = shim.stats.conflicts
        for i in range(samples):
            for spec in specs:
                out = results["by_limit"][label(spec)]
                limits.use(*spec)
                quiet(shim, 0.3)
                time.sleep(limits.refill_seconds(*spec))
                chosen = rng.sample(names, concurrent)
                waits = len(trace.limiter_waits)
                restarts = restart_sample(kube, sim, store, jobs_rt, trace, chosen, attempts)
                # Let the passes that follow the restarts finish, then count their requests.
                quiet(shim, 0.3)
                restarts[0]["requests"] = len(trace.limiter_waits) - waits
                restarts[0]["limiter_wait"] = sum(trace.limiter_waits[waits:])
                out.setdefault("restarts", []).extend(restarts)
                out.setdefault("samples", []).append(restarts[0])
                quiet(shim, 0.3)
                time.sleep(limits.refill_seconds(*spec))
                new = f"new-{i:03d}-{int(spec[0])}"
                out.setdefault("creates", []).append(
                    create_sample(store, js_rt, jobs_rt, trace, new))
                wait(lambda n=new: running(store, jobs_rt, n, 0), 30, f"{new} running")
                store.delete(js_rt, NS, new, {"propagationPolicy": "Background"})
        results["conflicts"] = shim.stats.conflicts - conflicts
        for spec in specs:
            limits.use(*spec)
            quiet(shim, 0.3)
            count = ttl_count
            ttl_names = [f"ttl-{int(spec[0])}-{k}" for k in range(count)]
            results["by_limit"][label(spec)]["ttl"] = ttl_samples(
                kube, sim, store, js_rt, jobs_rt, trace, ttl_names, ttl) if count else []
        results["decide_p50"] = statistics.median(shim.stats.decide_seconds) * 1000
        results["deferred"] = getattr(shim.stats, "deferred", None)
        results["errors"] = shim.stats.errors
        return results
    finally:
        shim.shutdown()
        decider.close()
        sim.stop()
        kube.stop()


# ---- report ---------------------------------------------------------------------------------

STAGES = [
    ("failure -> seen by the shim", lambda r: [r["observed"]]),
    ("seen -> restart recorded (status written)", lambda r: [r["recorded"]]),
    ("status written -> old Jobs' DELETEs received", lambda r: [r["deletes"]]),
    ("DELETE received -> Job gone (foreground done)", lambda r: _jobs(r, "deleted")),
    ("Job gone -> seen by the shim's informer", lambda r: _jobs(r, "seen")),
    ("seen -> a worker takes the JobSet", lambda r: _jobs(r, "queue")),
    ("taken -> Decide answered", lambda r: _jobs(r, "decide")),
    ("Decide answered -> create sent", lambda r: _jobs(r, "apply")),
    ("create sent -> Job in the store", lambda r: _jobs(r, "create")),
    ("**Job gone -> new Job created**", lambda r: _jobs(r, "gone_to_created")),
    ("failure -> first DELETE received", lambda r: [r["first_delete"]]),
    ("**failure -> every new Job created**", lambda r: [r["all_created"]]),
]


def _jobs(r: dict, key: str) -> list[float | None]:
    return [j[key] if j else None for j in r["jobs"]]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def cell(values: list[float | None]) -> str:
    vals = [v for v in values if v is not None]
    if not vals:
        return "n/a | n/a"
    return f"{statistics.median(vals) * 1000:.1f} | {pct(vals, 0.99) * 1000:.1f}"


def report(rows: list[dict], specs: list[tuple[float, int]], args: argparse.Namespace) -> None:
    print()
    print(f"Shim reaction times, fake API server in-process; {args.samples} restart samples "
          f"({args.concurrent} JobSet(s) failing at once) and {args.samples} creations per "
          f"scale and limit, workers={args.workers}; "
          f"{platform.python_implementation()} {platform.python_version()}, "
          f"{platform.machine()}, {datetime.now(UTC):%Y-%m-%d}; "
          + (f"pods terminating in {args.pods:g} s" if args.pods is not None else "no pods"))
    for r in rows:
        print()
        print(f"{r['scale']} JobSets watched (initial convergence {r['converge']:.1f} s, "
              f"Decide p50 {r['decide_p50']:.2f} ms, stale status writes {r['conflicts']}, "
              f"failed passes {r['errors']}, passes put off {r['deferred']})")
        print()
        heads = " | ".join(f"{label(s)} p50 ms | p99 ms" for s in specs)
        print(f"| stage | {heads} |")
        print("|---|" + "---:|---:|" * len(specs))
        for title, get in STAGES:
            cells = []
            for spec in specs:
                restarts = r["by_limit"][label(spec)].get("restarts", [])
                cells.append(cell([v for x in restarts for v in get(x)]))
            print(f"| {title} | " + " | ".join(cells) + " |")
        cells = [cell(r["by_limit"][label(s)].get("creates", [])) for s in specs]
        print("| **JobSet created -> both Jobs created** | " + " | ".join(cells) + " |")
        cells = []
        for spec in specs:
            by = r["by_limit"][label(spec)]
            passes = [j["passes"] for x in by.get("restarts", []) for j in x["jobs"] if j]
            samples = by.get("samples", [])
            cells.append(
                f"{statistics.mean(passes):.2f} passes per Job re-created; per sample "
                f"{statistics.mean(x['requests'] for x in samples):.1f} requests, "
                f"{statistics.mean(x['limiter_wait'] for x in samples) * 1000:.0f} ms waited "
                "for the limiter" if samples else "n/a")
        print("| (per restart) | " + " | ".join(f"{c} | " for c in cells))
        for spec in specs:
            ttl = r["by_limit"][label(spec)].get("ttl") or []
            if not ttl:
                continue
            print()
            print(f"TTL {args.ttl} s, {label(spec)}, {len(ttl)} JobSets finishing a tenth of a "
                  "second apart: JobSet DELETE received after")
            for key, what in (("from_recorded_finish", "the finish the status records"),
                              ("from_status_write", "that status being written"),
                              ("from_jobs_finishing", "its last Job finishing")):
                vals = [t[key] for t in ttl]
                print(f"  {what}: min {min(vals):.3f} s, p50 {statistics.median(vals):.3f} s, "
                      f"max {max(vals):.3f} s")


def pass_cost(scales: list[int]) -> None:
    from tests.shim.pass_cost import measure

    print("| JobSets | objects cached | objects read per pass (mean, max) | reads per pass | "
          "ms per pass (mean, p50) | s to pass each once |")
    print("|---:|---:|---:|---:|---:|---:|")
    for scale in scales:
        r = measure(scale)
        print(f"| {scale:,} | {r['cached']:,} | {r['objects_mean']:,.0f}, {r['objects_max']:,} | "
              f"{r['reads_mean']:,.0f} | {r['pass_ms_mean']:.2f}, {r['pass_ms_p50']:.2f} | "
              f"{r['all_once_s']:.2f} |", flush=True)


def parse_limits(text: str) -> list[tuple[float, int]]:
    out = []
    for part in text.split(","):
        qps, _, burst = part.partition("/")
        out.append((float(qps), int(burst or 1)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scales", default="1,100,1000")
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--limits", default="500/100,5/10",
                        help="client-side limits compared, QPS/burst (the tests' and "
                             "client-go's defaults)")
    parser.add_argument("--pods", type=float, default=None, metavar="SECONDS",
                        help="simulate pods that take this long to terminate: a Job deleted in "
                             "the foreground lingers until they are gone (default: no pods)")
    parser.add_argument("--concurrent", type=int, default=1,
                        help="JobSets whose Jobs fail at once in a restart sample (a node "
                             "failure hits several); each is a sample of the stages")
    parser.add_argument("--json", metavar="PATH", help="also write every sample there")
    parser.add_argument("--ttl", type=int, default=5)
    parser.add_argument("--ttl-samples", type=int, default=10)
    parser.add_argument("--pass-cost", action="store_true",
                        help="only measure the cached objects one pass reads, and its time")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    scales = [int(s) for s in args.scales.split(",") if s]
    if args.pass_cost:
        pass_cost(scales)
        return
    specs = parse_limits(args.limits)
    rows = []
    with BackgroundServer("127.0.0.1:0") as server:
        for scale in scales:
            rows.append(measure(scale, args.samples, args.workers, server.target, specs,
                                args.ttl, args.ttl_samples, args.pods, args.concurrent))
            print(f"  scale {scale} done", file=sys.stderr)
    report(rows, specs, args)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1, default=str))


if __name__ == "__main__":
    main()
