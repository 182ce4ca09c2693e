"""Bring a control plane up on loopback, and down again.

etcd, kube-apiserver, kube-controller-manager, kube-scheduler and KWOK, each a process of its
own on ports chosen free for this run, with the workload-aware scheduling gates on all three
Kubernetes components and the scheduling.k8s.io versions of the release served. Everything a
run writes (certificates, kubeconfigs, etcd's data, logs, state.json) stays in its directory.
"""

from __future__ import annotations

import json
import shutil
import socket
import ssl
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tools.controlplane import build, pki, versions
from tools.controlplane.processes import State, free_ports, wait_for

KWOK_STAGES = Path(__file__).resolve().parent / "kwok-stages.yaml"
# Nodes KWOK manages carry this annotation (and nothing else on the cluster is a node).
KWOK_NODE_ANNOTATION = ("kwok.x-k8s.io/node", "fake")
SERVICE_CIDR = "10.96.0.0/16"
START_TIMEOUT = 180.0


@dataclass
class Cluster:
    """A running control plane: read back from <dir>/state.json."""

    dir: Path
    state: State

    @classmethod
    def at(cls, directory: Path) -> Cluster:
        state = State(directory)
        if "server" not in state.data:
            raise SystemExit(f"controlplane: no control plane was brought up in {directory}")
        return cls(directory, state)

    @property
    def server(self) -> str:
        return self.state.data["server"]

    @property
    def kubeconfig(self) -> Path:
        return Path(self.state.data["kubeconfig"])

    @property
    def version(self) -> str:
        return self.state.data["version"]

    @property
    def ca_file(self) -> Path:
        return Path(self.state.data["ca"])

    def ssl_context(self) -> ssl.SSLContext:
        admin = self.state.data["admin"]
        ctx = ssl.create_default_context(cafile=str(self.ca_file))
        ctx.load_cert_chain(admin["cert"], admin["key"])
        return ctx

    def request(self, method: str, path: str, body: Any = None,
                content_type: str = "application/json") -> Any:
        """One API call as the admin; the decoded answer."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.server + path, data=data, method=method,
                                     headers={"Content-Type": content_type,
                                              "Accept": "application/json"})
        with urllib.request.urlopen(req, context=self.ssl_context(), timeout=30) as resp:
            raw = resp.read()
        return json.loads(raw) if raw else None

    def add_nodes(self, count: int, prefix: str = "kwok-node", cpu: str = "32",
                  memory: str = "128Gi", pods: str = "110",
                  labels: dict[str, str] | None = None) -> list[str]:
        """KWOK nodes (Ready within seconds); their names."""
        names = []
        existing = {n["metadata"]["name"] for n in self.request("GET", "/api/v1/nodes")["items"]}
        i = 0
        while len(names) < count:
            name = f"{prefix}-{i}"
            i += 1
            if name in existing:
                continue
            self.request("POST", "/api/v1/nodes", node_manifest(name, cpu, memory, pods, labels))
            names.append(name)
        for name in names:
            wait_for(f"node {name} Ready (KWOK)", lambda n=name: node_ready(
                self.request("GET", f"/api/v1/nodes/{n}")), 60,
                Path(self.state.find("kwok")["log"]))
        return names

    def down(self, grace: float = 10.0) -> list[str]:
        return self.state.stop_all(grace)

    def ready(self, name: str) -> bool:
        """Whether one of the processes serves: what `up` (and product.install) wait for."""
        ports = self.state.data["ports"]
        insecure = ssl.create_default_context()
        insecure.check_hostname = False
        insecure.verify_mode = ssl.CERT_NONE
        if name == "etcd":
            with urllib.request.urlopen(f"http://127.0.0.1:{ports['etcd']}/health",
                                        timeout=5) as resp:
                return json.loads(resp.read()).get("health") == "true"
        if name == "kube-apiserver":
            return _healthz(f"{self.server}/readyz", self.ssl_context())
        if name in ("kube-controller-manager", "kube-scheduler"):
            port = ports[name.removeprefix("kube-")]
            return _healthz(f"https://127.0.0.1:{port}/healthz", insecure)
        if name == "kwok":
            return _healthz(f"http://127.0.0.1:{ports['kwok']}/healthz", insecure)
        product = self.state.data["product"]
        if name == "shim":
            with urllib.request.urlopen(product["shim_healthz"] + "/readyz", timeout=5) as resp:
                return resp.status == 200
        if name == "decider":
            ctx = ssl.create_default_context(cafile=product["webhook_ca"])
            with socket.create_connection(("127.0.0.1", product["webhook_port"]), timeout=5) \
                    as raw, ctx.wrap_socket(raw, server_hostname="127.0.0.1"):
                return True
        raise KeyError(name)

    def wait_ready(self, name: str, timeout: float = START_TIMEOUT) -> None:
        record = self.state.find(name)
        wait_for(f"{name} ready", lambda: self.ready(name), timeout, Path(record["log"]),
                 record)

    def restart(self, name: str, timeout: float = START_TIMEOUT) -> None:
        """Stop one process and start it again as it was (same flags, ports, identity);
        return once it serves. Fault scenarios: the API server or the shim restarted."""
        self.state.restart(name)
        self.wait_ready(name, timeout)


def node_manifest(name: str, cpu: str, memory: str, pods: str,
                  labels: dict[str, str] | None) -> dict[str, Any]:
    resources = {"cpu": cpu, "memory": memory, "pods": pods}
    key, value = KWOK_NODE_ANNOTATION
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "annotations": {key: value, "node.alpha.kubernetes.io/ttl": "0"},
                     "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                "kubernetes.io/arch": "amd64", "type": "kwok",
                                **(labels or {})}},
        "status": {"allocatable": resources, "capacity": resources},
    }


def node_ready(node: dict[str, Any]) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True"
               for c in node.get("status", {}).get("conditions", []))


def _kubeconfig(path: Path, server: str, ca: Path, cert: Path | None = None,
                key: Path | None = None, token: str | None = None) -> Path:
    user: dict[str, Any] = {}
    if cert is not None and key is not None:
        user = {"client-certificate": str(cert), "client-key": str(key)}
    if token is not None:
        user = {"token": token}
    doc = {"apiVersion": "v1", "kind": "Config", "current-context": "e2e",
           "clusters": [{"name": "e2e", "cluster": {"server": server,
                                                     "certificate-authority": str(ca)}}],
           "users": [{"name": "e2e", "user": user}],
           "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": "e2e"}}]}
    path.write_text(yaml.safe_dump(doc))
    path.chmod(0o600)
    return path


def kubeconfig_for_token(cluster: Cluster, path: Path, token: str) -> Path:
    return _kubeconfig(path, cluster.server, cluster.ca_file, token=token)


def _healthz(url: str, ctx: ssl.SSLContext) -> bool:
    with urllib.request.urlopen(url, context=ctx, timeout=5) as resp:
        return resp.status == 200 and resp.read().strip() == b"ok"


def up(directory: Path, version: str = versions.DEFAULT_RELEASE, nodes: int = 0,
       extra_gates: tuple[str, ...] = (),
       extra_args: dict[str, tuple[str, ...]] | None = None) -> Cluster:
    """Build what the cache lacks, start everything, wait until it serves; the running
    control plane. On any failure what was started is stopped again. `extra_args`: more flags
    for a component, by its name (bench/shim_scale_real.py lifts the controller-manager's
    client rate limit)."""
    rel = versions.release(version)
    build.ensure_all(version)
    kube, etcd_c, kwok_c = build.components(version)
    directory.mkdir(parents=True, exist_ok=True)
    state = State(directory)
    if state.processes:
        raise SystemExit(f"controlplane: {directory} already runs a control plane "
                         "(down first)")
    for attempt in range(3):
        try:
            return _start(directory, state, rel, kube, etcd_c, kwok_c, nodes, extra_gates,
                          extra_args or {})
        except BaseException:
            state.stop_all()
            # Ports are free when chosen and taken a moment later: another run may have been
            # given one in between. Then again, on others; anything else is the answer.
            if attempt == 2 or not _lost_a_port(directory):
                raise
            for log in (directory / "logs").glob("*.log"):
                log.rename(log.with_suffix(f".attempt{attempt}"))
            shutil.rmtree(directory / "etcd-data", ignore_errors=True)
    raise AssertionError("unreachable")


def _lost_a_port(directory: Path) -> bool:
    return any("address already in use" in log.read_text(errors="replace")
               for log in (directory / "logs").glob("*.log"))


def _start(directory: Path, state: State, rel: versions.Release, kube: build.Component,
           etcd_c: build.Component, kwok_c: build.Component, nodes: int,
           extra_gates: tuple[str, ...], extra_args: dict[str, tuple[str, ...]]) -> Cluster:
    started = time.monotonic()
    certs = directory / "pki"
    certs.mkdir(exist_ok=True)
    ca = pki.CA(certs)
    serving = ca.issue("apiserver", "kube-apiserver", ips=("127.0.0.1", "10.96.0.1"),
                       dns=("localhost", "kubernetes", "kubernetes.default",
                            "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"),
                       server=True)
    admin = ca.issue("admin", "e2e-admin", organizations=("system:masters",))
    kcm = ca.issue("controller-manager", "system:kube-controller-manager")
    sched = ca.issue("scheduler", "system:kube-scheduler")
    kwok_id = ca.issue("kwok", "kwok", organizations=("system:masters",))
    sa = pki.service_account_keys(certs)

    etcd_client, etcd_peer, api_port, kcm_port, sched_port, kwok_port = free_ports(6)
    server = f"https://127.0.0.1:{api_port}"
    gates = ",".join([f"{g}=true" for g in rel.gates] + list(extra_gates))
    state.data.update(version=rel.version, server=server, ca=str(ca.pair.cert),
                      admin={"cert": str(admin.cert), "key": str(admin.key)},
                      ports={"etcd": etcd_client, "etcd-peer": etcd_peer, "apiserver": api_port,
                             "controller-manager": kcm_port, "scheduler": sched_port,
                             "kwok": kwok_port},
                      gates=gates, runtime_config=list(rel.runtime_config))
    kubeconfig = _kubeconfig(directory / "admin.kubeconfig", server, ca.pair.cert,
                             admin.cert, admin.key)
    state.data["kubeconfig"] = str(kubeconfig)
    state.save()

    etcd = state.start("etcd", [
        str(etcd_c.binary("etcd")), "--name=e2e", f"--data-dir={directory / 'etcd-data'}",
        f"--listen-client-urls=http://127.0.0.1:{etcd_client}",
        f"--advertise-client-urls=http://127.0.0.1:{etcd_client}",
        f"--listen-peer-urls=http://127.0.0.1:{etcd_peer}",
        f"--initial-advertise-peer-urls=http://127.0.0.1:{etcd_peer}",
        f"--initial-cluster=e2e=http://127.0.0.1:{etcd_peer}",
        "--quota-backend-bytes=4294967296",
        # A test cluster thrown away at the end: no fsync, on a disk other builds share.
        "--unsafe-no-fsync", "--log-level=warn"], ports=(etcd_client, etcd_peer))
    wait_for("etcd healthy", lambda: json.loads(urllib.request.urlopen(
        f"http://127.0.0.1:{etcd_client}/health", timeout=5).read()).get("health") == "true",
        START_TIMEOUT, Path(etcd["log"]), etcd)

    api = state.start("kube-apiserver", [
        str(kube.binary("kube-apiserver")),
        f"--etcd-servers=http://127.0.0.1:{etcd_client}",
        "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
        f"--secure-port={api_port}",
        f"--tls-cert-file={serving.cert}", f"--tls-private-key-file={serving.key}",
        f"--client-ca-file={ca.pair.cert}",
        f"--service-account-key-file={sa.cert}", f"--service-account-signing-key-file={sa.key}",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        # No kubelet or kube-proxy: the kubernetes Service gets no endpoints to keep.
        "--endpoint-reconciler-type=none",
        "--authorization-mode=Node,RBAC",
        "--runtime-config=" + ",".join(f"{v}=true" for v in rel.runtime_config),
        f"--feature-gates={gates}",
        "--allow-privileged=true", "--profiling=false",
        f"--cert-dir={directory / 'apiserver-certs'}"], ports=(api_port,))
    ctx = ssl.create_default_context(cafile=str(ca.pair.cert))
    ctx.load_cert_chain(str(admin.cert), str(admin.key))
    wait_for("kube-apiserver /readyz", lambda: _healthz(f"{server}/readyz", ctx),
             START_TIMEOUT, Path(api["log"]), api)

    kcm_config = _kubeconfig(directory / "controller-manager.kubeconfig", server,
                             ca.pair.cert, kcm.cert, kcm.key)
    cm = state.start("kube-controller-manager", [
        str(kube.binary("kube-controller-manager")),
        f"--kubeconfig={kcm_config}", f"--authentication-kubeconfig={kcm_config}",
        f"--authorization-kubeconfig={kcm_config}",
        "--bind-address=127.0.0.1", f"--secure-port={kcm_port}",
        f"--cert-dir={directory / 'controller-manager-certs'}",
        "--use-service-account-credentials=true",
        f"--service-account-private-key-file={sa.key}", f"--root-ca-file={ca.pair.cert}",
        f"--cluster-signing-cert-file={ca.pair.cert}",
        f"--cluster-signing-key-file={ca.pair.key}",
        "--leader-elect=false", f"--feature-gates={gates}",
        *extra_args.get("kube-controller-manager", ())], ports=(kcm_port,))
    sched_config = _kubeconfig(directory / "scheduler.kubeconfig", server, ca.pair.cert,
                               sched.cert, sched.key)
    sc = state.start("kube-scheduler", [
        str(kube.binary("kube-scheduler")),
        f"--kubeconfig={sched_config}", f"--authentication-kubeconfig={sched_config}",
        f"--authorization-kubeconfig={sched_config}",
        "--bind-address=127.0.0.1", f"--secure-port={sched_port}",
        f"--cert-dir={directory / 'scheduler-certs'}",
        "--leader-elect=false", f"--feature-gates={gates}",
        *extra_args.get("kube-scheduler", ())], ports=(sched_port,))
    kwok_config = _kubeconfig(directory / "kwok.kubeconfig", server, ca.pair.cert,
                              kwok_id.cert, kwok_id.key)
    kw = state.start("kwok", [
        str(kwok_c.binary("kwok")), f"--kubeconfig={kwok_config}", f"--config={KWOK_STAGES}",
        "--manage-all-nodes=false",
        "--manage-nodes-with-annotation-selector=" + "=".join(KWOK_NODE_ANNOTATION),
        "--cidr=10.244.0.0/16", "--node-ip=10.0.0.1", "--node-lease-duration-seconds=40",
        f"--server-address=127.0.0.1:{kwok_port}"], ports=(kwok_port,),
        env={"HOME": str(directory), "PATH": "/usr/bin:/bin"})

    # Their serving certificates are their own (self-signed): health is all that is asked.
    insecure = ssl.create_default_context()
    insecure.check_hostname = False
    insecure.verify_mode = ssl.CERT_NONE
    wait_for("kube-controller-manager /healthz", lambda: _healthz(
        f"https://127.0.0.1:{kcm_port}/healthz", insecure), START_TIMEOUT, Path(cm["log"]), cm)
    wait_for("kube-scheduler /healthz", lambda: _healthz(
        f"https://127.0.0.1:{sched_port}/healthz", insecure), START_TIMEOUT, Path(sc["log"]), sc)
    wait_for("kwok /healthz", lambda: _healthz(f"http://127.0.0.1:{kwok_port}/healthz",
                                               insecure), START_TIMEOUT, Path(kw["log"]), kw)
    cluster = Cluster(directory, state)
    # The namespace every client starts in, and its service account (the
    # controller-manager's to make): pods are refused until it exists.
    wait_for("serviceaccount default/default", lambda: cluster.request(
        "GET", "/api/v1/namespaces/default/serviceaccounts/default"), START_TIMEOUT,
        Path(cm["log"]), cm)
    if nodes:
        cluster.add_nodes(nodes)
    state.data["up_seconds"] = round(time.monotonic() - started, 1)
    state.save()
    return cluster
