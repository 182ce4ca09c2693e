"""The shim's reaction time: from a Job's failure to the restart's deletes being sent.

For each scale (JobSets watched), a fresh fake cluster (tests/fakekube) gets that many JobSets
(one replicated Job of 2 replicas each, RestartJobSet policy), a shim against a real decider
carries them to running, then Jobs are failed one at a time. A sample is the time from the
failure being written to the API server until the API server receives the first DELETE of that
JobSet's Jobs: the Job watch event, a Decide pass that records the restart in the status, the
status watch event, and a second Decide pass that deletes the previous attempt's Jobs.

    python bench/shim_reaction.py [--scales 1,100,1000] [--samples 30] [--workers 4]

Everything runs in this process on loopback; the fake API server is Python, so absolute numbers
include its cost too (a real kube-apiserver answers a write in ~1-5 ms).
"""

from __future__ import annotations

import argparse
import logging
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from kubernetes import client  # noqa: E402

from decider.server import BackgroundServer  # noqa: E402
from decider_client import DeciderClient  # noqa: E402
from fakekube import FakeKube, JobSimulator  # noqa: E402
from shim.config import Config  # noqa: E402
from shim.controller import Shim  # noqa: E402
from shim.kube import Kube  # noqa: E402

CONTROLLER = "jobset-decider.io/shim"
NS = "bench"
ATTEMPT = "jobset.sigs.k8s.io/restart-attempt"


def jobset(name: str) -> dict:
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "managedBy": CONTROLLER,
            "failurePolicy": {"maxRestarts": 1000},
            "successPolicy": {"operator": "All"},
            "startupPolicy": {"startupPolicyOrder": "AnyOrder"},
            "network": {"enableDNSHostnames": True, "publishNotReadyAddresses": True},
            "replicatedJobs": [
                {
                    "name": "w",
                    "groupName": "default",
                    "replicas": 2,
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
        },
    }


def wait(pred, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.002)


def running(store, jobs_rt, name: str, attempt: int) -> bool:
    for i in range(2):
        job = store.try_get(jobs_rt, NS, f"{name}-w-{i}")
        if (
            job is None
            or job["metadata"].get("deletionTimestamp")
            or job["metadata"]["labels"].get(ATTEMPT) != str(attempt)
            or not (job.get("status") or {}).get("active")
        ):
            return False
    return True


def measure(scale: int, samples: int, workers: int, decider_target: str) -> dict:
    kube = FakeKube(bookmark_interval=5.0).start()
    sim = JobSimulator(kube.store, pods=False).start()
    cfg_k = client.Configuration()
    cfg_k.host = kube.url
    cfg_k.connection_pool_maxsize = 64
    cfg = Config(
        controller_name=CONTROLLER,
        leader_elect=False,
        workers=workers,
        decider_timeout=10.0,
        backoff_base=0.05,
        backoff_max=2.0,
    )
    decider = DeciderClient(decider_target, timeout=10.0, options=[("grpc.so_reuseport", 0)])
    shim = Shim(cfg, Kube(client.ApiClient(cfg_k)), decider)
    store = kube.store
    jobs_rt = store.resource_for("batch", "v1", "jobs")
    js_rt = store.resource_for("jobset.x-k8s.io", "v1alpha2", "jobsets")
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
        )
        converge = time.monotonic() - started
        # Sample the steady state: let the passes that follow convergence (status writes,
        # RestartingJobSet bookkeeping) drain first.
        quiet_since = time.monotonic()
        while time.monotonic() - quiet_since < 0.5:
            if not shim.queue.idle():
                quiet_since = time.monotonic()
            time.sleep(0.01)
        attempts = dict.fromkeys(names, 0)
        rng = random.Random(scale)
        reactions: list[float] = []
        for _ in range(samples):
            name = rng.choice(names)
            mark = len(kube.audit)
            t0 = time.monotonic()
            sim.fail(NS, f"{name}-w-0")
            prefix = f"/jobs/{name}-w-"

            def deleted(mark: int = mark, prefix: str = prefix) -> bool:
                return any(r.method == "DELETE" and prefix in r.path for r in kube.audit[mark:])

            wait(deleted, 30, f"delete for {name}")
            first = next(r for r in kube.audit[mark:] if r.method == "DELETE" and prefix in r.path)
            reactions.append(first.time - t0)
            attempts[name] += 1
            wait(
                lambda name=name: running(store, jobs_rt, name, attempts[name]),
                30,
                f"restart of {name}",
            )
        reactions.sort()
        return {
            "scale": scale,
            "samples": len(reactions),
            "p50": statistics.median(reactions) * 1000,
            "p99": reactions[min(len(reactions) - 1, int(0.99 * len(reactions)))] * 1000,
            "max": reactions[-1] * 1000,
            "converge": converge,
            "decide_p50": statistics.median(shim.stats.decide_seconds) * 1000,
            "conflicts": shim.stats.conflicts,
            "errors": shim.stats.errors,
        }
    finally:
        shim.shutdown()
        decider.close()
        sim.stop()
        kube.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scales", default="1,100,1000")
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--workers", type=int, default=4)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    scales = [int(s) for s in args.scales.split(",") if s]
    rows = []
    with BackgroundServer("127.0.0.1:0") as server:
        for scale in scales:
            rows.append(measure(scale, args.samples, args.workers, server.target))
            r = rows[-1]
            print(
                f"  scale {scale}: p50 {r['p50']:.1f} ms, p99 {r['p99']:.1f} ms, "
                f"status conflicts {r['conflicts']}, errors {r['errors']}",
                file=sys.stderr,
            )
    print()
    print("Shim reaction time: Job failure -> first DELETE of the restart (2 Decide passes)")
    print(f"workers={args.workers}, samples per scale={args.samples}, fake API server in-process")
    header = (
        f"{'JobSets':>8} {'samples':>8} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} "
        f"{'Decide p50 ms':>14} {'initial sync s':>15}"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r['scale']:>8} {r['samples']:>8} {r['p50']:>8.1f} {r['p99']:>8.1f} "
            f"{r['max']:>8.1f} {r['decide_p50']:>14.2f} {r['converge']:>15.1f}"
        )


if __name__ == "__main__":
    main()
