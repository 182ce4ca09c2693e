"""Helm for the chart's tests: the binary .ci/ensure-helm builds, and `helm template` parsed.

The binary is looked for where .ci/ensure-helm puts it (its version pinned there, read from it
here so there is one place to change), or at $JOBSET_DECIDER_HELM. Nothing here builds it:
building takes minutes, which CI spends once in .ci/run before pytest.
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
from dataclasses import asdict
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "jobset-decider"
ENSURE = ROOT / ".ci" / "ensure-helm"
RELEASE = "jobset-decider"
NAMESPACE = "jobset-decider"


def pinned_version() -> str:
    found = re.search(r'^version="(v[0-9.]+)"$', ENSURE.read_text(), re.MULTILINE)
    assert found, f"{ENSURE}: no version=\"vX.Y.Z\" line"
    return found.group(1)


def cached_binary() -> Path:
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "jobset-decider" / "bin" / f"helm-{pinned_version()}"


def binary() -> Path | None:
    """The helm to use: $JOBSET_DECIDER_HELM (.ci/run sets it), else .ci/ensure-helm's cache;
    None when there is none."""
    given = os.environ.get("JOBSET_DECIDER_HELM")
    candidate = Path(given) if given else cached_binary()
    return candidate if os.access(candidate, os.X_OK) else None


def run(helm: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(helm), *args], capture_output=True, text=True, timeout=120)


def set_args(values: dict[str, Any]) -> list[str]:
    """--set-json per value, so that a list, a map, a number or a boolean keeps its type."""
    out: list[str] = []
    for key, value in values.items():
        out += ["--set-json", f"{key}={json.dumps(value)}"]
    return out


def template(helm: Path, values: dict[str, Any] | None = None, *,
             namespace: str = NAMESPACE, release: str = RELEASE,
             extra: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    return run(helm, "template", release, str(CHART), "--namespace", namespace,
               *set_args(values or {}), *extra)


def render(helm: Path, values: dict[str, Any] | None = None, **kw: Any) -> list[dict[str, Any]]:
    out = template(helm, values, **kw)
    assert out.returncode == 0, out.stderr
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def require() -> Path:
    """The helm binary, for a test fixture: one named by JOBSET_DECIDER_HELM, or under CI
    (CI=true), that is missing fails the test; elsewhere a missing one skips it, saying how to
    build it."""
    import pytest

    found = binary()
    if found is None:
        given = os.environ.get("JOBSET_DECIDER_HELM")
        why = (f"JOBSET_DECIDER_HELM={given} is not an executable" if given else
               f"helm {pinned_version()} is not built ({cached_binary()}): run .ci/ensure-helm")
        if given or os.environ.get("CI") == "true":
            pytest.fail(why)
        pytest.skip(why)
    return found


_RENDERS: dict[str, list[dict[str, Any]]] = {}


def rendered(helm: Path, values: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """render() in the release namespace, once per set of values (a copy each time)."""
    key = json.dumps(values or {}, sort_keys=True)
    if key not in _RENDERS:
        _RENDERS[key] = render(helm, values)
    return copy.deepcopy(_RENDERS[key])


# Configurations every test file checks: each value group set away from its default.
VARIANTS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "beside-upstream": {"crd.install": False, "webhook.onlyShimManaged": True},
    "cert-manager": {"webhook.certificate.mode": "cert-manager"},
    "cert-manager-own-issuer": {"webhook.certificate.mode": "cert-manager",
                                "webhook.certificate.certManager.issuerRef":
                                    {"kind": "ClusterIssuer", "name": "company-ca"}},
    "helm-certificate": {"webhook.certificate.mode": "helm"},
    "telemetry-sampled": {"telemetry.enabled": True, "telemetry.sampler":
                          "parentbased_traceidratio", "telemetry.samplerArg": "0.1"},
    "namespaced-with-extras": {"rbac.scope": "namespaced", "shim.namespaces": ["team-a"],
                               "featureGates": {"InPlaceRestart": True, "RestartJob": False},
                               "shim.gangTarget": "volcano"},
    "no-autoscaler-no-leader-election": {"decider.autoscaling.enabled": False,
                                         "decider.replicas": 3, "shim.replicas": 1,
                                         "shim.leaderElection.enabled": False,
                                         "decider.metricsPort": 9464,
                                         "shim.metricsPort": 9465},
}


# ---- reading a rendering ----------------------------------------------------------------------

def one(docs: list[dict[str, Any]], kind: str, name: str,
        namespace: str | None = None) -> dict[str, Any]:
    found = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name
             and (namespace is None or d["metadata"].get("namespace") == namespace)]
    assert len(found) == 1, (kind, name, namespace, len(found))
    return found[0]


def container(docs: list[dict[str, Any]], deployment: str) -> dict[str, Any]:
    (c,) = one(docs, "Deployment", deployment)["spec"]["template"]["spec"]["containers"]
    return c


def parsed_args(c: dict[str, Any]) -> dict[str, Any]:
    """What the process makes of its arguments, by its own parser: order, repetition (the last
    wins) and spelling (--no-webhook-self-signed after --webhook-self-signed, or neither) stop
    mattering; an argument it does not know fails here as it would at start."""
    args = c.get("args") or []
    if c["command"] == ["decider", "serve"]:
        from decider.cli.main import build_parser

        return vars(build_parser().parse_args(["serve", *args]))
    assert c["command"] == ["decider-shim"], c["command"]
    return asdict(shim_config(c))


def shim_config(c: dict[str, Any]) -> Any:
    from shim.flags import parse_args

    return parse_args(c.get("args") or [], env={})


def env_map(c: dict[str, Any]) -> dict[str, Any]:
    """The container's environment by name. Order would matter only to a $(NAME) reference,
    so there must be none; a name given twice is a mistake either way."""
    env = c.get("env") or []
    names = [e["name"] for e in env]
    assert len(names) == len(set(names)), names
    assert not any("$(" in str(e.get("value", "")) for e in env), env
    return {e["name"]: {k: v for k, v in e.items() if k != "name"} for e in env}


# ---- a cluster for `lookup` -------------------------------------------------------------------

class LookupCluster:
    """Just enough of an API server for `helm template --dry-run=server`, whose `lookup` reads
    the cluster: the version, core/v1's discovery, and GETs of the objects in `objects` (by
    their API path); anything else is 404. `seen` lists the paths asked for."""

    def __init__(self, directory: Path, objects: dict[str, dict[str, Any]]) -> None:
        self.objects = objects
        self.seen: list[str] = []
        self.kubeconfig = directory / "kubeconfig"
        self._directory = directory

    def __enter__(self) -> LookupCluster:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        cluster = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 - stdlib naming
                path = self.path.split("?")[0]
                cluster.seen.append(path)
                code, body = cluster.answer(path)
                raw = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        host, port = self._server.server_address[:2]
        self.kubeconfig.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "fake",
            "clusters": [{"name": "fake", "cluster": {"server": f"http://{host}:{port}"}}],
            "users": [{"name": "fake", "user": {"token": "fake"}}],
            "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake"}}]}))
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

    def answer(self, path: str) -> tuple[int, dict[str, Any]]:
        if path == "/version":
            return 200, {"major": "1", "minor": "35", "gitVersion": "v1.35.0"}
        if path == "/api":
            return 200, {"kind": "APIVersions", "versions": ["v1"]}
        if path == "/apis":
            return 200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": []}
        if path == "/api/v1":
            return 200, {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "v1",
                         "resources": [{"name": "secrets", "singularName": "secret",
                                        "namespaced": True, "kind": "Secret",
                                        "verbs": ["get", "list"]}]}
        if path in self.objects:
            return 200, self.objects[path]
        return 404, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                     "reason": "NotFound", "code": 404, "message": f"{path} not found"}

    def render(self, helm: Path, values: dict[str, Any], namespace: str = NAMESPACE
               ) -> list[dict[str, Any]]:
        return render(helm, values, namespace=namespace,
                      extra=("--dry-run=server", "--kubeconfig", str(self.kubeconfig)))
