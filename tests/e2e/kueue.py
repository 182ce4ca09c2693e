"""Kueue, built from its module and installed onto a running API server, for the end-to-end suite.

    kueue = Kueue(kubeconfig, workdir)      # the API server's admin kubeconfig, a scratch dir
    kueue.install()                          # build (cached), render, adapt, apply, start, ready
    ...
    kueue.uninstall()                        # stop the manager, delete what install applied

The manager binary is `sigs.k8s.io/kueue/cmd/kueue` at KUEUE_VERSION, built with `go install`
from the Go module proxy (CGO off) into ${XDG_CACHE_HOME:-~/.cache}/jobset-decider/kueue/<v>/,
once per version (`python -m tests.e2e.kueue build` does only that, for CI). Its manifests
are the module's own `config/default`, rendered by `kubectl kustomize` and adapted for loopback
(kueue_manifests.py says exactly how). The manager runs under its own ServiceAccount's token,
so Kueue's RBAC is what it gets, as in a cluster.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import IO, Any

import yaml

from tests.e2e.kueue_manifests import Adapted, Loopback, adapt
from tests.support.certs import make_pki

KUEUE_VERSION = "v0.17.0"
MODULE = "sigs.k8s.io/kueue"
NAMESPACE = "kueue-system"
SERVICE_ACCOUNT = "kueue-controller-manager"
READY_TIMEOUT = 180.0
# Where Kueue's main (cmd/kueue) reads the metrics server's certificate when its internal
# certificate management is off; Kueue's cert-manager option mounts a Secret there.
METRICS_CERTS = Path("/etc/kueue/metrics/certs")

Obj = dict[str, Any]


def cache_dir(version: str = KUEUE_VERSION) -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "jobset-decider" / "kueue" / version


def binary(version: str = KUEUE_VERSION) -> Path:
    return cache_dir(version) / "bin" / "kueue"


def build(version: str = KUEUE_VERSION, log: IO[str] | None = None) -> Path:
    """The manager binary, built once per version (minutes on a busy 2-core machine)."""
    target = binary(version)
    if target.exists():
        return target
    staging = cache_dir(version) / "bin.tmp"
    shutil.rmtree(staging, ignore_errors=True)
    env = {**os.environ, "GOBIN": str(staging), "CGO_ENABLED": "0"}
    ldflags = f"-X {MODULE}/pkg/version.GitVersion={version}"
    subprocess.run(["go", "install", "-ldflags", ldflags, f"{MODULE}/cmd/kueue@{version}"],
                   env=env, check=True, stdout=log, stderr=subprocess.STDOUT if log else None)
    target.parent.mkdir(parents=True, exist_ok=True)
    # A rename, so a build cut short never leaves a binary that looks finished.
    (staging / "kueue").rename(target)
    shutil.rmtree(staging, ignore_errors=True)
    return target


def module_dir(version: str = KUEUE_VERSION) -> Path:
    """The module's files in the Go module cache (downloaded if absent)."""
    out = subprocess.run(["go", "mod", "download", "-json", f"{MODULE}@{version}"],
                         check=True, capture_output=True, text=True)
    return Path(json.loads(out.stdout)["Dir"])


def render(version: str = KUEUE_VERSION, kubectl: str = "kubectl") -> list[Obj]:
    """Kueue's config/default as its release manifests are built from it."""
    out = subprocess.run([kubectl, "kustomize", str(module_dir(version) / "config" / "default")],
                         check=True, capture_output=True, text=True)
    return [doc for doc in yaml.safe_load_all(out.stdout) if doc]


def free_port() -> int:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Kueue:
    """One Kueue on one API server: its objects applied, its manager a child process."""

    def __init__(self, kubeconfig: Path, workdir: Path, *, version: str = KUEUE_VERSION,
                 kubectl: str = "kubectl", processes: Any = None) -> None:
        """`processes`: something with start(name, argv, ports=, env=, cwd=) and stop(name)
        (the e2e control plane's process table, so its teardown finds the manager too);
        without it the manager is a child process of this one."""
        self.kubeconfig = kubeconfig
        self.workdir = workdir
        self.version = version
        self.kubectl = kubectl
        self.processes = processes
        self.process: subprocess.Popen[bytes] | None = None
        self.adapted: Adapted | None = None
        self.log_path = workdir / "kueue-manager.log"
        self.health_port = 0

    def kubectl_run(self, *args: str, stdin: str | None = None,
                    kubeconfig: Path | None = None) -> str:
        out = subprocess.run([self.kubectl, "--kubeconfig", str(kubeconfig or self.kubeconfig),
                              *args], input=stdin, capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)}: {out.stderr.strip()}")
        return out.stdout

    def install(self) -> None:
        manager = build(self.version)
        self.workdir.mkdir(parents=True, exist_ok=True)
        cert_dir = self.workdir / "kueue-certs"
        cert_dir.mkdir(exist_ok=True)
        pki = make_pki(cert_dir)
        # controller-runtime's webhook server reads tls.crt and tls.key from its cert dir.
        shutil.copy(pki.server_cert, cert_dir / "tls.crt")
        shutil.copy(pki.server_key, cert_dir / "tls.key")
        self.health_port = free_port()
        loopback = Loopback(webhook_port=free_port(), metrics_port=free_port(),
                            health_port=self.health_port, cert_dir=str(cert_dir),
                            ca_pem=pki.ca.read_bytes())
        self.adapted = adapt(render(self.version, self.kubectl), loopback)
        manifests = self.workdir / "kueue-manifests.yaml"
        manifests.write_text(yaml.safe_dump_all(self.adapted.apply, sort_keys=False))
        config = self.workdir / "controller_manager_config.yaml"
        config.write_text(yaml.safe_dump(self.adapted.config, sort_keys=False))
        # Server-side: Kueue's CRDs are past the client-side apply annotation's size limit.
        self.kubectl_run("apply", "--server-side", "--force-conflicts", "-f", str(manifests))
        self.kubectl_run("wait", "--for=condition=Established", "--timeout=60s",
                         *[f"crd/{d['metadata']['name']}" for d in self.adapted.apply
                           if d["kind"] == "CustomResourceDefinition"])
        env = {**os.environ, "KUBECONFIG": str(self.service_account_kubeconfig())}
        argv = self.with_metrics_certs(cert_dir, [str(manager), f"--config={config}",
                                                  "--zap-log-level=2"])
        if self.processes is not None:
            record = self.processes.start("kueue", argv, ports=(
                loopback.webhook_port, loopback.health_port, loopback.metrics_port),
                env=env, cwd=self.workdir)
            self.log_path = Path(record["log"])
        else:
            with self.log_path.open("ab") as log:
                self.process = subprocess.Popen(argv, env=env, cwd=self.workdir, stdout=log,
                                                stderr=subprocess.STDOUT)
        self.wait_ready()

    def with_metrics_certs(self, cert_dir: Path, argv: list[str]) -> list[str]:
        """The manager started where it finds a certificate at METRICS_CERTS.

        With internal certificate management off, Kueue's main reads its metrics server's
        certificate from that fixed path (in its pod, a mounted Secret) and exits without it.
        Here it gets a mount namespace of its own in which /etc is this machine's /etc with
        that directory laid over it (overlayfs; the upper layer is in the run's directory), so
        nothing outside the run is written. Needs CAP_SYS_ADMIN (root on this machine)."""
        upper = self.workdir / "etc-overlay" / "upper"
        work = self.workdir / "etc-overlay" / "work"
        certs = upper / METRICS_CERTS.relative_to("/etc")
        certs.mkdir(parents=True, exist_ok=True)
        work.mkdir(parents=True, exist_ok=True)
        for name in ("tls.crt", "tls.key"):
            shutil.copy(cert_dir / name, certs / name)
        mount = (f"mount -t overlay overlay -o lowerdir=/etc,upperdir={upper},workdir={work} "
                 '/etc && exec "$@"')
        return ["unshare", "--mount", "--propagation", "private", "sh", "-c", mount, "kueue",
                *argv]

    def service_account_kubeconfig(self) -> Path:
        """The admin kubeconfig's cluster, with a token of Kueue's own ServiceAccount."""
        token = self.kubectl_run("create", "token", SERVICE_ACCOUNT, "-n", NAMESPACE,
                                 "--duration=24h").strip()
        admin = yaml.safe_load(self.kubeconfig.read_text())
        current = admin.get("current-context")
        context = next((c for c in admin["contexts"] if c["name"] == current),
                       admin["contexts"][0])
        cluster = next(c for c in admin["clusters"]
                       if c["name"] == context["context"]["cluster"])
        config = {"apiVersion": "v1", "kind": "Config", "clusters": [cluster],
                  "users": [{"name": SERVICE_ACCOUNT, "user": {"token": token}}],
                  "contexts": [{"name": "kueue", "context": {
                      "cluster": cluster["name"], "user": SERVICE_ACCOUNT}}],
                  "current-context": "kueue"}
        path = self.workdir / "kueue.kubeconfig"
        path.write_text(yaml.safe_dump(config))
        path.chmod(0o600)
        return path

    def wait_ready(self, timeout: float = READY_TIMEOUT) -> None:
        """Kueue's readyz answers 200 once its webhook server serves and its caches synced."""
        deadline = time.monotonic() + timeout
        seen = "no answer"
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"kueue manager exited {self.process.returncode}; "
                                   f"last lines:\n{self.tail()}")
            try:
                url = f"http://127.0.0.1:{self.health_port}/readyz"
                with urllib.request.urlopen(url, timeout=2) as resp:
                    if resp.status == 200:
                        return
                    seen = f"readyz {resp.status}"
            except OSError as exc:
                seen = str(exc)
            time.sleep(0.5)
        raise RuntimeError(f"kueue not ready after {timeout:.0f}s ({seen}); "
                           f"last lines:\n{self.tail()}")

    def tail(self, lines: int = 30) -> str:
        if not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> None:
        if self.processes is not None:
            self.processes.stop("kueue")
            return
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None

    def uninstall(self) -> None:
        """The webhooks go first: with the manager gone, their failurePolicy Fail would refuse
        every pod of the cluster."""
        self.stop()
        if self.adapted is None:
            return
        hooks = [d for d in self.adapted.apply if d["kind"].endswith("WebhookConfiguration")]
        for doc in hooks + [d for d in self.adapted.apply if d not in hooks]:
            kind = doc["kind"].lower()
            meta = doc["metadata"]
            args = ["delete", kind, meta["name"], "--ignore-not-found", "--wait=false"]
            if meta.get("namespace"):
                args += ["-n", meta["namespace"]]
            self.kubectl_run(*args)


def main(argv: list[str]) -> int:
    """`python -m tests.e2e.kueue build`: build and cache the manager, print its path."""
    if argv[:1] != ["build"]:
        print("usage: python -m tests.e2e.kueue build [VERSION]", file=sys.stderr)
        return 2
    version = argv[1] if len(argv) > 1 else KUEUE_VERSION
    started = time.monotonic()
    path = build(version, log=sys.stderr)
    print(f"{path} ({time.monotonic() - started:.0f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
