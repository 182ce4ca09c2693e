"""What the gang scenarios (test_gang.py) are written with: a control plane of their own per
Kubernetes release with jobset-decider installed with the gang gates on (the session's runs
with none, and one release), nodes of a test's own, and `decider gang`'s answer.

The session's control plane is left as it is: its product runs on deploy/'s defaults, where
the webhook refuses `spec.scheduling`. A module-scoped control plane beside it has ports,
processes and a directory of its own, and is checked on the way down as the session's is.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.e2e.framework import Kube
from tests.e2e.planes import fresh_namespace, own_plane
from tools.controlplane import cluster as cp
from tools.controlplane import product, versions
from tools.controlplane.processes import tail

DECIDER = str(Path(sys.executable).parent / "decider")
SCHEDULING = "/apis/scheduling.k8s.io"
# Pods of a test go to its own nodes only: a label on them, a nodeSelector on the pods.
POOL = "e2e.jobset-decider.io/pool"
# The gates upstream's JobSet controller reads spec.scheduling under; the shim and the
# webhook get them as deploy/'s --feature-gates flags would give them.
FLAT_GATES = "JobSetWorkloadAwareSchedulingAPI=true"
# And spec.scheduling compiled to a CompositePodGroup tree (1.37 only).
TREE_GATES = FLAT_GATES + ",JobSetGangOfGangs=true"


@dataclass
class GangCluster:
    """A control plane of one release with jobset-decider installed under `gates`."""

    cluster: cp.Cluster
    kube: Kube
    gates: str

    @property
    def version(self) -> str:
        return self.cluster.version

    @property
    def api_version(self) -> str:
        """The Workload/PodGroup generation the release serves and the shim writes."""
        return versions.release(self.version).scheduling_api_version

    def scheduling(self, resource: str, ns: str, name: str = "",
                   version: str | None = None) -> Any:
        group_version = (version or self.api_version).split("/")[1]
        path = f"{SCHEDULING}/{group_version}/namespaces/{ns}/{resource}"
        return self.kube.maybe(f"{path}/{name}") if name else self.kube.items(path)

    def log(self, name: str, lines: int = 40) -> str:
        return tail(Path(self.cluster.state.find(name)["log"]), lines)


@contextmanager
def gang_control_plane(version: str, gates: str = FLAT_GATES) -> Iterator[GangCluster]:
    """Up (no nodes: each test adds its own), the product installed with `gates`; down at the
    end with the session's checks (planes.own_plane)."""
    with own_plane(f"gang-{version}", version, 0) as plane:
        product.install(plane.cluster, feature_gates=gates)
        yield GangCluster(plane.cluster, plane.kube, gates)


@contextmanager
def namespace(gc: GangCluster, test: str) -> Iterator[str]:
    """A namespace of the test's own on `gc` (planes.fresh_namespace), deleted at the end with
    the test's nodes (named after it)."""
    name = ""
    try:
        with fresh_namespace(gc.kube, test, lambda: [f"(on {gc.version})", gc.log("shim"),
                                                      gc.log("kube-scheduler", 20)]) as name:
            yield name
    finally:
        nodes = gc.kube.items("/api/v1/nodes", labelSelector=f"{POOL}={name}") if name else []
        for node in nodes:
            gc.kube.delete(f"/api/v1/nodes/{node['metadata']['name']}")


def add_pool_nodes(gc: GangCluster, pool: str, count: int, cpu: str,
                   pods: str = "110") -> list[str]:
    """`count` KWOK nodes labelled for `pool` (Ready when this returns)."""
    return gc.cluster.add_nodes(count, prefix=f"{pool}-n", cpu=cpu, memory="64Gi", pods=pods,
                                labels={POOL: pool})


def pool_pod_spec(pool: str, name: str, cpu: str) -> dict[str, Any]:
    """A pod template's spec bound to `pool`'s nodes, each pod asking for `cpu`."""
    return {"restartPolicy": "Never", "nodeSelector": {POOL: pool},
            "containers": [{"name": name, "image": "registry.invalid/e2e:1",
                            "command": ["true"],
                            "resources": {"requests": {"cpu": cpu}}}]}


def decider_gang(manifests: list[dict[str, Any]], directory: Path, api_version: str,
                 gates: str = "") -> dict[str, Any]:
    """`decider gang` on these objects (the first a Job or JobSet, the rest what exists)."""
    path = directory / "gang-input.yaml"
    path.write_text(yaml.safe_dump_all(manifests))
    args = [DECIDER, "gang", "-f", str(path), "--api-version", api_version, "-o", "json"]
    if gates:
        args += ["--feature-gates", gates]
    done = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def without_server_fields(meta: dict[str, Any]) -> dict[str, Any]:
    """An object's metadata as its author wrote it: what the API server adds taken out."""
    drop = {"uid", "resourceVersion", "creationTimestamp", "generation", "managedFields",
            "finalizers"}
    return {k: v for k, v in meta.items() if k not in drop}


def pod_bound(pod: dict[str, Any]) -> bool:
    return bool(pod["spec"].get("nodeName"))


def scheduled_at(pod: dict[str, Any]) -> str:
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c["type"] == "PodScheduled" and c["status"] == "True":
            return c["lastTransitionTime"]
    return ""
