"""The shim at scale on a real control plane, beside upstream's JobSet controller in the same run.

`python bench/shim_scale.py --real` (or this file): for each controller in --controllers, a fresh
control plane (tools/controlplane: Kubernetes 1.37 from source, KWOK nodes enough for every pod),
that controller installed as its users install it, and the stages of bench/shim_scale.py on the
same JobSets (one replicated Job of 5, DNS hostnames on; upstream's without spec.managedBy):

1. created -> all Jobs exist: N JobSets created at once (16 at a time through the webhooks);
   done when every JobSet's 5 Jobs exist.
2. restarts -> new Jobs: once every Job's pod is ready and the cluster is quiet (no Job or
   JobSet changed for 2 s), the pod of Job 0 fails (KWOK, exit code 3) in each of --restarts
   JobSets; done when each has its 5 Jobs of attempt 1.
3. pods done -> Completed: once those run and the cluster is quiet, every running pod
   succeeds (KWOK, exit code 0); done when every JobSet has its Completed condition.

Timed from the bench's own watches of Jobs and JobSets, to the last JobSet (per-JobSet p50 and
p99 too), with the CPU seconds of the controller (the shim and `decider serve`; upstream's one
binary), the kube-apiserver and the kube-controller-manager in each stage; then the ratio shim /
upstream per stage. A fresh control plane per controller: neither pays for the other's 5,000
pods being collected, nor meets the other's webhooks (upstream's pod webhooks see every pod
with a JobSet label), and etcd and the watch caches start equally empty.

    python bench/shim_scale.py --real [--jobsets 1000] [--restarts 100]
                                      [--controllers shim,upstream] [--upstream-version V]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from bench import upstream_jobset  # noqa: E402
from bench.real_cluster import (  # noqa: E402
    JOB_INDEX_LABEL,
    Api,
    Watch,
    install_upstream,
    quiet,
)
from bench.shim_scale import (  # noqa: E402
    ATTEMPT_LABEL,
    JOBS,
    JOBSETS,
    NAME_LABEL,
    NS,
    REPLICAS,
    Seen,
    jobset,
    pcts,
    peak_rss_mb,
    tree_cpu_seconds,
    wait,
)
from tools.controlplane import cluster as cp  # noqa: E402
from tools.controlplane import product  # noqa: E402

EXIT_CODE = "e2e.jobset-decider.io/exit-code"
# The Job controller and the garbage collector share the controller-manager's client, 20 QPS
# by default: 5,000 Jobs completing would take minutes whichever JobSet controller runs, and the
# ratio would say nothing. Lifted as kwokctl's --disable-qps-limits lifts it (the controllers
# under test keep theirs: 500/500 both). The API server keeps its priority and fairness.
UNLIMITED = ("--kube-api-qps=5000", "--kube-api-burst=10000")
EXTRA_ARGS = {"kube-controller-manager": UNLIMITED, "kube-scheduler": UNLIMITED}
PODS_PER_NODE = 500
STAGES = ("created -> all Jobs exist", "restarts -> new Jobs", "pods done -> Completed")


class Live(Seen):
    """Seen, and every Job as it is now (its JobSet, attempt and ready pods), and when each Job
    was first seen finished (Complete or Failed): what the Job controller did, apart from what
    the JobSet controller did after it."""

    def __init__(self) -> None:
        super().__init__()
        self.now: dict[str, tuple[str, str, int]] = {}
        self.ended: dict[tuple[str, str], dict[str, float]] = {}

    def on_store(self, resource: str, event_type: str, obj: dict[str, Any]) -> None:
        super().on_store(resource, event_type, obj)
        if resource != JOBS:
            return
        meta = obj["metadata"]
        labels = meta.get("labels") or {}
        key = (labels.get(NAME_LABEL, ""), labels.get(ATTEMPT_LABEL, ""))
        if any(c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
               for c in (obj.get("status") or {}).get("conditions") or []):
            with self.lock:
                self.ended.setdefault(key, {}).setdefault(meta["name"], time.monotonic())
        with self.lock:
            if event_type == "DELETED" or meta.get("deletionTimestamp"):
                self.now.pop(meta["name"], None)
                return
            self.now[meta["name"]] = (*key, (obj.get("status") or {}).get("ready") or 0)

    def ready(self, names: list[str], attempt: str) -> bool:
        """Every JobSet in `names` has REPLICAS Jobs of `attempt` whose pod is ready."""
        count: dict[str, int] = {}
        with self.lock:
            for owner, att, ready in self.now.values():
                if att == attempt and ready:
                    count[owner] = count.get(owner, 0) + 1
        return all(count.get(n, 0) >= REPLICAS for n in names)

    def last_ended(self, names: list[str], attempt: str, count: int) -> dict[str, float]:
        """When the JobSet's `count`-th Job of `attempt` ended (1: its first, REPLICAS: all)."""
        with self.lock:
            out = {}
            for n in names:
                times = sorted(self.ended.get((n, attempt), {}).values())
                if len(times) >= count:
                    out[n] = times[count - 1]
            return out


def pids(cluster: cp.Cluster, controller: str) -> dict[str, int]:
    """The processes whose CPU a stage reports: the controller's (shim and decider, or
    upstream's binary), the API server's, the controller-manager's."""
    names = {"shim": ("shim", "decider"), "upstream": ("upstream-jobset",)}[controller]
    out = {n: cluster.state.find(n)["pid"] for n in names}
    out["kube-apiserver"] = cluster.state.find("kube-apiserver")["pid"]
    out["kube-controller-manager"] = cluster.state.find("kube-controller-manager")["pid"]
    return out


def cpu(pid_map: dict[str, int]) -> dict[str, float]:
    # The shim and the decider run under tools/controlplane/supervise.py, as a container under
    # its kubelet: their CPU is the tree's (and the decider's workers are in it too).
    return {name: tree_cpu_seconds(pid) for name, pid in pid_map.items()}


def container_pid(pid: int) -> int:
    """The process supervise.py runs (itself for a process that is not supervised)."""
    for task in Path(f"/proc/{pid}/task").iterdir():
        children = (task / "children").read_text().split()
        if children and "supervise.py" in Path(f"/proc/{pid}/cmdline").read_text():
            return int(children[0])
    return pid


def parallel(calls: list[Any], workers: int = 16) -> None:
    with ThreadPoolExecutor(workers) as pool:
        for future in [pool.submit(c) for c in calls]:
            future.result()


def run(controller: str, args: argparse.Namespace, workdir: Path, out: dict[str, Any]) -> None:
    """The stages on a fresh control plane; `out` holds what was measured even if a later
    stage fails."""
    pods = args.jobsets * REPLICAS + args.restarts * REPLICAS
    nodes = max(1, -(-pods // (PODS_PER_NODE * 8 // 10)))
    directory = workdir / controller
    started = time.monotonic()
    cluster = cp.up(directory, args.kubernetes_version, extra_args=EXTRA_ARGS)
    out.update(controller=controller, stages={})
    watches: list[Watch] = []
    try:
        cluster.add_nodes(nodes, pods=str(PODS_PER_NODE), cpu="1000", memory="4000Gi")
        if controller == "shim":
            product.install(cluster)
        else:
            install_upstream(cluster, args.upstream_version)
        out["setup_s"] = time.monotonic() - started
        api = Api(cluster)
        api.call("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                "metadata": {"name": NS}})
        wait(lambda: api.items(f"/api/v1/namespaces/{NS}/serviceaccounts"), 120,
             f"serviceaccount {NS}/default")
        live = Live()
        watches = [Watch(api, f"/apis/batch/v1/namespaces/{NS}/jobs", JOBS, live.on_store),
                   Watch(api, f"/apis/jobset.x-k8s.io/v1alpha2/namespaces/{NS}/jobsets",
                         JOBSETS, live.on_store)]
        for w in watches:
            w.start()
            w.synced.wait(60)
        pid_map = pids(cluster, controller)
        out["load"] = [os.getloadavg()[0]]
        names = [f"js{i:05d}" for i in range(args.jobsets)]
        timeout = args.timeout

        def stage(key: str, begun: dict[str, float], done: dict[str, float],
                  before: dict[str, float], jobs_ended: dict[str, float] | None = None) -> None:
            after = cpu(pid_map)
            used = {n: after[n] - before[n] for n in after}
            lat = [done[n] - begun[n] for n in done]
            p50, p99 = pcts(lat)
            wall = max(done.values()) - min(begun.values())
            row = {"wall": wall, "p50": p50, "p99": p99, "n": len(done), "cpu": used}
            if jobs_ended:
                # The JobSet controller's own share: from the Job controller's verdict (the
                # Job Failed; the last Job Complete) to the JobSet's answer.
                own = [done[n] - jobs_ended[n] for n in done if n in jobs_ended]
                row["own_p50"], row["own_p99"] = pcts(own)
                row["own_wall"] = max(own)
            out["stages"][key] = row
            print(f"  [{controller}] {key}: {wall:.1f} s (p50 {p50:.1f}, p99 {p99:.1f})"
                  + (f", after the Jobs ended: max {row['own_wall']:.1f} s (p50 "
                     f"{row['own_p50']:.1f}, p99 {row['own_p99']:.1f})" if jobs_ended else "")
                  + "; CPU s " + ", ".join(f"{n} {v:.1f}" for n, v in used.items()),
                  file=sys.stderr, flush=True)

        def body(name: str) -> dict[str, Any]:
            js = jobset(name)
            if controller == "upstream":
                del js["spec"]["managedBy"]  # upstream's own: no managedBy at all
            return js

        # 1. created -> all Jobs exist.
        created: dict[str, float] = {}
        path = f"/apis/jobset.x-k8s.io/v1alpha2/namespaces/{NS}/jobsets"

        def create(name: str) -> None:
            created[name] = time.monotonic()
            api.call("POST", path, body(name))

        before = cpu(pid_map)
        parallel([lambda n=n: create(n) for n in names])
        done = wait(lambda: live.all_jobs(names, "0"), timeout, "all Jobs created")
        stage(STAGES[0], created, done, before)
        wait(lambda: live.ready(names, "0"), timeout, "every Job's pod ready")
        quiet(watches, 2.0, timeout)

        # 2. restarts -> new Jobs: the pod of Job 0 fails in each restarted JobSet.
        restarted = names[:: max(1, len(names) // args.restarts)][: args.restarts]
        chosen = set(restarted)
        targets = [p for p in api.items(f"/api/v1/namespaces/{NS}/pods", labelSelector=(
            f"{JOB_INDEX_LABEL}=0,{ATTEMPT_LABEL}=0"))
            if p["metadata"]["labels"].get(NAME_LABEL) in chosen]
        assert len(targets) == len(restarted), (len(targets), len(restarted))
        failed: dict[str, float] = {}

        def end(pod: dict[str, Any], code: str, when: dict[str, float]) -> None:
            api.patch(f"/api/v1/namespaces/{NS}/pods/{pod['metadata']['name']}",
                      {"metadata": {"annotations": {EXIT_CODE: code}}})
            when[pod["metadata"]["labels"][NAME_LABEL]] = time.monotonic()

        before = cpu(pid_map)
        parallel([lambda p=p: end(p, "3", failed) for p in targets])
        done = wait(lambda: live.all_jobs(restarted, "1"), timeout, "the restarted Jobs")
        stage(STAGES[1], failed, done, before, live.last_ended(restarted, "0", 1))
        wait(lambda: live.ready(restarted, "1"), timeout, "restarted Jobs' pods ready")
        quiet(watches, 2.0, timeout)

        # 3. pods done -> Completed: every running pod succeeds, JobSet by JobSet.
        running = sorted(api.items(f"/api/v1/namespaces/{NS}/pods",
                                   fieldSelector="status.phase=Running"),
                         key=lambda p: p["metadata"]["labels"].get(NAME_LABEL, ""))
        assert len(running) == len(names) * REPLICAS, (len(running), len(names) * REPLICAS)
        finished: dict[str, float] = {}  # a JobSet's: when its last pod was told to end
        before = cpu(pid_map)
        parallel([lambda p=p: end(p, "0", finished) for p in running])
        done = wait(lambda: live.all_completed(names), timeout, "all JobSets Completed")
        current = {n: "1" if n in chosen else "0" for n in names}
        ended = {n: t for a in ("0", "1") for n, t in live.last_ended(
            [n for n in names if current[n] == a], a, REPLICAS).items()}
        stage(STAGES[2], finished, done, before, ended)
        main = pid_map.get("shim") or pid_map["upstream-jobset"]
        out["peak_rss_mb"] = peak_rss_mb(container_pid(main))
        if "decider" in pid_map:
            out["decider_peak_rss_mb"] = peak_rss_mb(container_pid(pid_map["decider"]))
        out["nodes"] = nodes
        out["load"].append(os.getloadavg()[0])
    finally:
        for w in watches:
            w.stop()
        if args.keep_logs:
            dest = Path(args.keep_logs) / controller
            shutil.copytree(directory / "logs", dest, dirs_exist_ok=True)
        left = cluster.down()
        if left:
            print(f"  [{controller}] left behind: {left}", file=sys.stderr)


def report(rows: dict[str, dict[str, Any]], args: argparse.Namespace) -> None:
    print()
    print(f"{args.jobsets:,} JobSets of {REPLICAS} Jobs ({args.restarts} restarted), Kubernetes "
          f"{args.kubernetes_version} on loopback with KWOK nodes, a fresh control plane per "
          f"controller; {os.cpu_count()} cores")
    print()
    names = list(rows)
    heads = " | ".join(f"{c} s (p50, p99)" for c in names)
    ratio = "shim / upstream" if {"shim", "upstream"} <= set(rows) else ""
    print(f"| stage | {heads} |" + (f" {ratio} |" if ratio else ""))
    print("|---|" + "---:|" * (len(names) + (1 if ratio else 0)))
    for key in STAGES:
        cells = []
        for c in names:
            s = rows[c]["stages"].get(key)
            cells.append(f"{s['wall']:.1f} ({s['p50']:.1f}, {s['p99']:.1f})" if s else "n/a")
        line = f"| {key} | " + " | ".join(cells) + " |"
        if ratio and all(key in rows[c]["stages"] for c in ("shim", "upstream")):
            times = [rows[c]["stages"][key]["wall"] for c in ("shim", "upstream")]
            line += f" {times[0] / times[1]:.2f}x |"
        print(line)
    print()
    print("From the Job controller's verdict (the restarted Job Failed; a JobSet's last Job "
          "Complete) to the JobSet controller's answer, the slowest JobSet's (p50, p99):")
    print()
    print(f"| stage | {heads} |" + (f" {ratio} |" if ratio else ""))
    print("|---|" + "---:|" * (len(names) + (1 if ratio else 0)))
    for key in STAGES[1:]:
        cells = []
        for c in names:
            s = rows[c]["stages"].get(key)
            cells.append(f"{s['own_wall']:.1f} ({s['own_p50']:.1f}, {s['own_p99']:.1f})"
                         if s and "own_wall" in s else "n/a")
        line = f"| {key} | " + " | ".join(cells) + " |"
        if ratio and all("own_wall" in rows[c]["stages"].get(key, {})
                         for c in ("shim", "upstream")):
            times = [rows[c]["stages"][key]["own_wall"] for c in ("shim", "upstream")]
            line += f" {times[0] / times[1]:.2f}x |"
        print(line)
    print()
    for c in names:
        for key, s in rows[c]["stages"].items():
            print(f"{c}, {key}: CPU s " + ", ".join(f"{n} {v:.1f}" for n, v in s["cpu"].items()))
        print(f"{c}: peak RSS {rows[c].get('peak_rss_mb', 0):.0f} MB"
              + (f" (decider {rows[c]['decider_peak_rss_mb']:.0f} MB)"
                 if "decider_peak_rss_mb" in rows[c] else "")
              + f"; control plane and install {rows[c].get('setup_s', 0):.0f} s, "
              f"{rows[c].get('nodes', 0)} KWOK nodes; load average (1 min) "
              + " -> ".join(f"{x:.1f}" for x in rows[c].get("load", [])))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--real", action="store_true", help="(as bench/shim_scale.py takes it)")
    parser.add_argument("--jobsets", type=int, default=1000)
    parser.add_argument("--restarts", type=int, default=100)
    parser.add_argument("--controllers", default="shim,upstream")
    parser.add_argument("--upstream-version", default=upstream_jobset.DEFAULT_VERSION)
    parser.add_argument("--kubernetes-version", default="v1.37.2")
    parser.add_argument("--timeout", type=float, default=3600.0, help="per stage, seconds")
    parser.add_argument("--keep-logs", metavar="DIR", help="every process's log, kept here")
    args = parser.parse_args(argv)
    args.restarts = min(args.restarts, args.jobsets)
    if "upstream" in args.controllers:
        print(f"upstream JobSet {args.upstream_version}: "
              f"{upstream_jobset.build(args.upstream_version)}", file=sys.stderr)
    rows: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="shim-scale-real-") as tmp:
        for controller in args.controllers.split(","):
            rows[controller] = {}
            try:
                run(controller, args, Path(tmp), rows[controller])
            except Exception as exc:  # the figures so far are still worth printing
                print(f"  [{controller}] failed: {exc!r}", file=sys.stderr, flush=True)
    report(rows, args)


if __name__ == "__main__":
    main()
