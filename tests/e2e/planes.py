"""Control planes and namespaces for the e2e tests.

`own_plane`: a control plane, the session's (tests/e2e/conftest.py) or a module's own, for
scenarios that need other gates, another release, no nodes, or components they stop and
restart, which the session's other tests must not see. Taken down at the end with the suite's
checks: no process, port or directory left behind, and no RBAC refusal in the shim's log outside
the spans a test said it expected. E2E_LOGS=DIR keeps the logs in DIR/<tag>.

`fresh_namespace`: a namespace of a test's own on one of them."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tests.e2e.framework import TIMEOUT, Kube, eventually
from tools.controlplane import cluster as cp
from tools.controlplane import product

TMP_PREFIX = "jobset-decider-e2e-"


@dataclass
class Plane:
    cluster: cp.Cluster
    kube: Kube
    # Spans (character offsets) of the shim's log where an RBAC refusal is not a hole in the
    # RBAC: an API server just restarted answers 403 until its authorizer's caches have synced.
    refusals_expected: list[tuple[int, int]] = field(default_factory=list)


@contextlib.contextmanager
def own_plane(tag: str, version: str, nodes: int) -> Iterator[Plane]:
    """Up with `nodes` KWOK nodes and nothing of ours installed (the caller installs)."""
    directory = Path(tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{tag}-"))
    cluster = None
    kube = None
    expected: list[tuple[int, int]] = []
    try:
        cluster = cp.up(directory, version, nodes=nodes)
        kube = Kube(str(cluster.kubeconfig))
        yield Plane(cluster, kube, expected)
    finally:
        if kube is not None:
            kube.close()
        left = cluster.down() if cluster is not None else []
        refused = refusals(directory / "logs", expected)
        keep = os.environ.get("E2E_LOGS")
        if keep and (directory / "logs").is_dir():
            shutil.copytree(directory / "logs", Path(keep) / tag, dirs_exist_ok=True)
        shutil.rmtree(directory, ignore_errors=True)
        if directory.exists():
            left.append(f"directory {directory} still exists")
        assert not left, f"the {tag} control plane left behind:\n" + "\n".join(left)
        assert not refused, "RBAC refused the shim:\n" + "\n".join(refused[:10])


def refusals(logs: Path, expected: list[tuple[int, int]]) -> list[str]:
    """RBAC refusals in the shim's log outside the expected spans."""
    log = logs / "shim.log"
    if not log.is_file():
        return []
    text = log.read_text(errors="replace")
    for start, end in sorted(expected, reverse=True):
        text = text[:start] + text[end:]
    cut = logs / "shim.log.unexpected"
    cut.write_text(text)
    try:
        return rbac_refusals(cut)
    finally:
        cut.unlink()


def rbac_refusals(log: Path) -> list[str]:
    if not log.is_file():
        return []
    who = f'User "system:serviceaccount:{product.NAMESPACE}:{product.SHIM_SERVICE_ACCOUNT}" cannot'
    return [line for line in log.read_text(errors="replace").splitlines() if who in line]


@contextlib.contextmanager
def fresh_namespace(kube: Kube, base: str, logs: Callable[[], list[str]],
                   failed: Callable[[], bool] = lambda: False) -> Iterator[str]:
    """A namespace of a test's own, its default service account there (pods wait for it),
    deleted at the end. When the test failed (an exception through here, or `failed()` for a
    fixture, which sees none), its last events and `logs()` are printed."""
    name = f"e2e-{base[:40]}-{secrets.token_hex(2)}".lower()
    kube.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                       "metadata": {"name": name}})
    eventually(f"serviceaccount {name}/default", lambda: kube.maybe(
        f"/api/v1/namespaces/{name}/serviceaccounts/default"), bool, TIMEOUT)
    ok = False
    try:
        yield name
        ok = not failed()
    finally:
        if not ok:
            out = [f"--- namespace {name} after the failure"]
            with contextlib.suppress(Exception):
                for ev in kube.events(name)[-40:]:
                    obj = ev.get("involvedObject", {})
                    out.append(f"event {ev.get('type')} {obj.get('kind')}/{obj.get('name')} "
                               f"{ev.get('reason')}: {ev.get('message')}")
            with contextlib.suppress(Exception):
                out.extend(logs())
            print("\n".join(out), file=sys.stderr)
        with contextlib.suppress(Exception):
            kube.delete(f"/api/v1/namespaces/{name}")
