"""The Kueue scenarios' fixtures: Kueue and the check controllers for the module, and per test
a ResourceFlavor, ClusterQueue and AdmissionCheck of its own, on KWOK nodes of its own that
carry the flavor's label and taint.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.e2e.framework import (
    EXIT_CODE,
    conditions,
    eventually,
    has_condition,
    jobset,
    phases,
    replicated_job,
)
from tests.e2e.kueue import Kueue
from tests.e2e.kueue_scenarios import (
    KUEUE,
    QUEUE_LABEL,
    SheddingDecider,
    admission_check,
    cluster_queue,
    create_cluster_scoped,
    flavor,
    local_queue,
    start_check,
    workloads,
)
from tools.controlplane.product import kubectl

CHECK_CONTROLLER = "jobset-decider.x-k8s.io/admission-check"
SHEDDING_CONTROLLER = "e2e.jobset-decider.io/shedding-check"
POOL_LABEL = "e2e.jobset-decider.io/pool"


@dataclass
class KueueEnv:
    kueue: Kueue
    shedding: SheddingDecider


@pytest.fixture(scope="module")
def kueue_env(e2e: Any) -> Iterator[KueueEnv]:
    """Kueue and two check controllers (one asking the decider, one a decider that sheds
    while told to), for this module only: Kueue's pod webhook would otherwise stand in front of
    every other test's pods."""
    cluster = e2e.cluster
    kueue = Kueue(cluster.kubeconfig, cluster.dir / "kueue", kubectl=kubectl(),
                  processes=cluster.state)
    try:
        kueue.install()
        start_check(cluster, e2e.product["decider_address"], CHECK_CONTROLLER, "kueue-check")
        with SheddingDecider(e2e.product["decider_address"], pushback_ms=2000) as shedding:
            start_check(cluster, f"127.0.0.1:{shedding.port}", SHEDDING_CONTROLLER,
                        "kueue-check-shedding", ("--decider-timeout=3",))
            yield KueueEnv(kueue, shedding)
    finally:
        for name in ("kueue-check", "kueue-check-shedding"):
            if any(p["name"] == name for p in cluster.state.processes):
                cluster.state.stop(name)
        kueue.uninstall()


@dataclass
class Queue:
    ns: str
    flavor: str
    cluster_queue: str
    check: str
    nodes: list[str]
    labels: dict[str, str]


def make_queue(e2e: Any, ns: str, cpus: int = 8, controller: str = CHECK_CONTROLLER,
               preemption: dict[str, Any] | None = None) -> Queue:
    """A flavor whose nodes (2 KWOK nodes, labelled and tainted) only this test uses, a
    ClusterQueue of `cpus` CPUs in it asking `controller`'s AdmissionCheck, a LocalQueue."""
    kube = e2e.kube
    suffix = secrets.token_hex(3)
    labels = {POOL_LABEL: f"pool-{suffix}"}
    taint = (POOL_LABEL, f"pool-{suffix}")
    nodes = e2e.cluster.add_nodes(2, prefix=f"kueue-{suffix}", labels=labels)
    for node in nodes:
        kube.patch(f"/api/v1/nodes/{node}", {"spec": {"taints": [
            {"key": taint[0], "value": taint[1], "effect": "NoSchedule"}]}})
    queue = Queue(ns, f"flavor-{suffix}", f"cq-{suffix}", f"check-{suffix}", nodes, labels)
    create_cluster_scoped(kube, flavor(queue.flavor, labels, taint))
    create_cluster_scoped(kube, admission_check(queue.check, controller))
    create_cluster_scoped(kube, cluster_queue(queue.cluster_queue, ns, queue.flavor, cpus,
                                              [queue.check], preemption))
    kube.create(f"{KUEUE}/namespaces/{ns}/localqueues", local_queue(ns, "user-queue",
                                                                     queue.cluster_queue))
    eventually(f"ClusterQueue {queue.cluster_queue} Active", lambda: kube.get(
        f"{KUEUE}/clusterqueues/{queue.cluster_queue}"),
        lambda cq: has_condition(cq, "Active"), show=conditions)
    return queue


@pytest.fixture
def queue(e2e: Any, ns: str, kueue_env: KueueEnv) -> Iterator[Queue]:
    made = make_queue(e2e, ns)
    yield made
    remove_queue(e2e, made)


def remove_queue(e2e: Any, queue: Queue) -> None:
    kube = e2e.kube
    for path in (f"{KUEUE}/clusterqueues/{queue.cluster_queue}",
                 f"{KUEUE}/admissionchecks/{queue.check}",
                 f"{KUEUE}/resourceflavors/{queue.flavor}",
                 *[f"/api/v1/nodes/{n}" for n in queue.nodes]):
        if kube.maybe(path) is not None:
            kube.delete(path)


def finish(kube: Any, ns: str, pods: list[dict[str, Any]], code: str = "0") -> None:
    """The pods end (KWOK's stage): succeed with "0", fail with any other exit code."""
    for pod in pods:
        kube.patch(f"/api/v1/namespaces/{ns}/pods/{pod['metadata']['name']}",
                   {"metadata": {"annotations": {EXIT_CODE: code}}})


def running(kube: Any, ns: str, jobset_name: str, count: int) -> list[dict[str, Any]]:
    """Once exactly `count` pods of the JobSet exist, all Running (none ending): those."""
    return eventually(f"{count} pods of {jobset_name} Running", lambda: [
        p for p in kube.pods(ns, jobset_name) if not p["metadata"].get("deletionTimestamp")],
        lambda ps: len(ps) == count and set(phases(ps).values()) == {"Running"}, show=phases)


def queued(ns: str, name: str, **spec: Any) -> dict[str, Any]:
    """A shim-managed JobSet for LocalQueue user-queue: a leader and 2 workers of 2 pods, one
    CPU each (5 CPUs)."""
    cpu = {"name": "main", "image": "registry.invalid/e2e:1", "command": ["true"],
           "resources": {"requests": {"cpu": "1"}}}
    js = jobset(ns, name, [replicated_job("leader", container=cpu),
                           replicated_job("workers", replicas=2, parallelism=2, completions=2,
                                          container=cpu)], **spec)
    js["metadata"]["labels"] = {QUEUE_LABEL: "user-queue"}
    return js


def the_workload(e2e: Any, ns: str, name: str) -> dict[str, Any]:
    found = eventually(f"the Workload of JobSet {name}", lambda: workloads(e2e.kube, ns, name),
                       lambda ws: len(ws) == 1,
                       show=lambda ws: [w["metadata"]["name"] for w in ws])
    return found[0]


DECIDER_HOOKS = ("mutatingwebhookconfigurations/jobset-decider-mutating",
                 "validatingwebhookconfigurations/jobset-decider-validating")
ADMISSION = "/apis/admissionregistration.k8s.io/v1"


def without_decider_webhooks(e2e: Any) -> list[tuple[str, dict[str, Any]]]:
    """The decider's webhook configurations removed (the webhook "down"); what was removed."""
    saved = []
    for hook in DECIDER_HOOKS:
        obj = e2e.kube.get(f"{ADMISSION}/{hook}")
        e2e.kube.delete(f"{ADMISSION}/{hook}")
        saved.append((hook.split("/")[0], obj))
    return saved


def restore(e2e: Any, saved: list[tuple[str, dict[str, Any]]]) -> None:
    for plural, obj in saved:
        meta = obj["metadata"]
        obj["metadata"] = {k: meta[k] for k in ("name", "labels", "annotations") if k in meta}
        e2e.kube.create(f"{ADMISSION}/{plural}", obj)
