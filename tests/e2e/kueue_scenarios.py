"""What the Kueue scenarios are written with: Kueue's objects, the check controller as deploy/
runs it, a decider that sheds load, and reading a Workload's state.

The check controller (`decider-kueue-check`) runs on this machine with the arguments of
deploy/components/kueue-check's Deployment, only the decider's address, the healthz port and
the controller name moved, under a token of that component's ServiceAccount: its RBAC is what
it gets, as in a cluster.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import urllib.request
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import yaml

from decider_api.v1 import decider_pb2 as pb
from decider_api.v1 import decider_pb2_grpc as pb_grpc
from decider_client import DeciderClient
from tests.e2e.framework import Kube
from tools.controlplane.cluster import Cluster, kubeconfig_for_token
from tools.controlplane.processes import free_ports, wait_for
from tools.controlplane.product import adapted_args, kubectl

REPO = Path(__file__).resolve().parents[2]
KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
CHECK_NAMESPACE = "jobset-decider"
CHECK_ACCOUNT = "decider-kueue-check"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PUSHBACK = "grpc-retry-pushback-ms"


def check_component() -> list[dict[str, Any]]:
    """deploy/kueue rendered, its objects of the kueue-check component."""
    out = subprocess.run([kubectl(), "kustomize", str(REPO / "deploy" / "kueue")], check=True,
                         capture_output=True, text=True)
    return [d for d in yaml.safe_load_all(out.stdout)
            if d and d["metadata"]["name"] == CHECK_ACCOUNT]


def start_check(cluster: Cluster, decider_address: str, controller_name: str,
                process_name: str, extra: tuple[str, ...] = ()) -> str:
    """Apply the component's RBAC, run decider-kueue-check as its Deployment would; its
    healthz URL once ready."""
    docs = check_component()
    rbac = [d for d in docs if d["kind"] != "Deployment"]
    manifest = cluster.dir / "kueue-check-rbac.yaml"
    manifest.write_text(yaml.safe_dump_all(rbac))
    subprocess.run([kubectl(), f"--kubeconfig={cluster.kubeconfig}", "apply", "--server-side",
                    "-f", str(manifest)], check=True, capture_output=True, text=True)
    token = cluster.request(
        "POST", f"/api/v1/namespaces/{CHECK_NAMESPACE}/serviceaccounts/{CHECK_ACCOUNT}/token",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
         "spec": {"expirationSeconds": 86400}})["status"]["token"]
    config = kubeconfig_for_token(cluster, cluster.dir / f"{process_name}.kubeconfig", token)
    spec = next(d for d in docs if d["kind"] == "Deployment")["spec"]["template"]["spec"][
        "containers"][0]
    (port,) = free_ports(1)
    args = adapted_args(spec["args"], {"--decider-address": decider_address,
                                       "--healthz-port": str(port),
                                       "--controller-name": controller_name},
                        [f"--kubeconfig={config}", *extra])
    bindir = Path(sys.executable).parent
    record = cluster.state.start(process_name, [str(bindir / spec["command"][0]), *args],
                                 ports=(port,), env={"PATH": f"{bindir}:/usr/bin:/bin",
                                                     "HOME": str(cluster.dir)}, cwd=cluster.dir)
    url = f"http://127.0.0.1:{port}"
    wait_for(f"{process_name} /readyz", lambda: _ready(f"{url}/readyz"), 120,
             Path(record["log"]))
    return url


def _ready(url: str) -> bool:
    with urllib.request.urlopen(url, timeout=5) as resp:
        return resp.status == 200


class SheddingDecider(pb_grpc.DeciderServicer):
    """A decider front that, while `shedding` is set, answers every call as the decider does
    when it sheds load (RESOURCE_EXHAUSTED with the retry pushback trailer), and otherwise
    passes the call to the real decider."""

    def __init__(self, real: str, pushback_ms: int) -> None:
        self.real = DeciderClient(real, timeout=30)
        self.pushback_ms = pushback_ms
        self.shedding = threading.Event()
        self.shed = 0
        self.server = grpc.server(futures.ThreadPoolExecutor(4),
                                  options=[("grpc.so_reuseport", 0)])
        pb_grpc.add_DeciderServicer_to_server(self, self.server)
        self.port = self.server.add_insecure_port("127.0.0.1:0")

    def _shed(self, context: grpc.ServicerContext) -> None:
        if self.shedding.is_set():
            self.shed += 1
            context.set_trailing_metadata(((PUSHBACK, str(self.pushback_ms)),))
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED,
                          "server busy: 1 requests wait for a worker (--max-pending 1)")

    def Validate(self, request: pb.ValidateRequest,  # noqa: N802 - the RPC's name
                 context: grpc.ServicerContext) -> pb.ValidateResponse:
        self._shed(context)
        return self.real.validate(request)

    def PodSets(self, request: pb.PodSetsRequest,  # noqa: N802 - the RPC's name
                context: grpc.ServicerContext) -> pb.PodSetsResponse:
        self._shed(context)
        return self.real.pod_sets(request)

    def __enter__(self) -> SheddingDecider:
        self.server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.stop(grace=None).wait()
        self.real.close()


# ---- Kueue's objects ----------------------------------------------------------------------

def flavor(name: str, labels: dict[str, str], taint: tuple[str, str]) -> dict[str, Any]:
    key, value = taint
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
            "metadata": {"name": name},
            "spec": {"nodeLabels": labels, "tolerations": [
                {"key": key, "operator": "Equal", "value": value, "effect": "NoSchedule"}]}}


def admission_check(name: str, controller_name: str) -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck",
            "metadata": {"name": name}, "spec": {"controllerName": controller_name}}


def cluster_queue(name: str, namespace: str, flavor_name: str, cpus: int,
                  checks: list[str], preemption: dict[str, Any] | None = None
                  ) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
        "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
            {"name": flavor_name, "resources": [{"name": "cpu", "nominalQuota": str(cpus)}]}]}]}
    if checks:
        spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": c} for c in checks]}
    if preemption:
        spec["preemption"] = preemption
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
            "metadata": {"name": name}, "spec": spec}


def priority_class(name: str, value: int) -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
            "metadata": {"name": name}, "value": value}


def local_queue(namespace: str, name: str, cluster_queue_name: str) -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"clusterQueue": cluster_queue_name}}


def create_cluster_scoped(kube: Kube, obj: dict[str, Any]) -> dict[str, Any]:
    plural = {"ResourceFlavor": "resourceflavors", "AdmissionCheck": "admissionchecks",
              "ClusterQueue": "clusterqueues",
              "WorkloadPriorityClass": "workloadpriorityclasses"}[obj["kind"]]
    return kube.create(f"{KUEUE}/{plural}", obj)


def workloads(kube: Kube, ns: str, jobset: str) -> list[dict[str, Any]]:
    return [w for w in kube.items(f"{KUEUE}/namespaces/{ns}/workloads")
            if any(r.get("kind") == "JobSet" and r.get("name") == jobset
                   for r in w["metadata"].get("ownerReferences") or [])]


def check_state(workload: dict[str, Any] | None, check: str) -> dict[str, Any]:
    for state in ((workload or {}).get("status") or {}).get("admissionChecks") or []:
        if state["name"] == check:
            return dict(state)
    return {}


def reserved_cpu(queue: dict[str, Any] | None, flavor_name: str) -> str:
    """The ClusterQueue's reserved CPU in the flavor, as Kueue reports it ("0" when none)."""
    for f in ((queue or {}).get("status") or {}).get("flavorsReservation") or []:
        if f["name"] == flavor_name:
            for r in f.get("resources") or []:
                if r["name"] == "cpu":
                    return str(r.get("total", "0"))
    return "0"
