"""What the fault and Helm scenarios share: a control plane of a module's own (its components
are stopped, killed and restarted, which the session's other tests must not see), a namespace
per test on it, and the shim's health and metrics as an operator reads them."""

from __future__ import annotations

import contextlib
import os
import re
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from tests.e2e.conftest import NODES
from tests.e2e.framework import Kube
from tests.e2e.planes import fresh_namespace, own_plane
from tools.controlplane import cluster as cp
from tools.controlplane.processes import tail


@dataclass
class Own:
    """A control plane of one module's own; `product` is filled by whoever installs."""

    cluster: cp.Cluster
    kube: Kube
    product: dict[str, Any] = field(default_factory=dict)
    # Spans (character offsets) of the shim's log where an RBAC refusal is not a hole in the
    # RBAC: an API server just restarted answers 403 until its authorizer's caches have synced.
    refusals_expected: list[tuple[int, int]] = field(default_factory=list)

    @property
    def state(self) -> Any:
        return self.cluster.state

    def log(self, name: str, lines: int = 40) -> str:
        return tail(self.cluster.dir / "logs" / f"{name}.log", lines)

    def log_text(self, name: str) -> str:
        """The whole log, every start of the process (a restart appends), even once stopped."""
        return (self.cluster.dir / "logs" / f"{name}.log").read_text(errors="replace")


@contextlib.contextmanager
def own_control_plane(tag: str, shim_service_account: str | None = None) -> Iterator[Own]:
    """Up with E2E_NODES KWOK nodes and nothing installed; down at the end with the session's
    checks (planes.own_plane), the refusal spans the test records on `Own` included."""
    version = os.environ.get("E2E_KUBERNETES_VERSION", "v1.37.2")
    with own_plane(tag, version, NODES) as plane:
        yield Own(plane.cluster, plane.kube, refusals_expected=plane.refusals_expected)


def namespace(own: Own, base: str) -> contextlib.AbstractContextManager[str]:
    """A namespace of the test's own on `own` (planes.fresh_namespace)."""
    def logs() -> list[str]:
        out = []
        for name in ("shim", "decider"):
            with contextlib.suppress(KeyError, OSError):
                out.append(own.log(name, 30))
        return out
    return fresh_namespace(own.kube, base, logs)


def http_get(url: str) -> tuple[int, str]:
    """Status and body; a refused connection is status 0 with the reason."""
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.status, resp.read().decode(errors="replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")
    except OSError as exc:
        return 0, str(exc)


def counter(metrics_text: str, name: str, **labels: str) -> float:
    """The sum of a Prometheus counter's samples with these labels (0 when none)."""
    total = 0.0
    for line in metrics_text.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        m = re.match(r"^[^{ ]+(?:\{(.*)\})? ([0-9.eE+-]+)$", line)
        if m is None:
            continue
        have = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(1) or ""))
        if all(have.get(k) == v for k, v in labels.items()):
            total += float(m.group(2))
    return total
