"""A control plane of a module's own, beside the session's: for scenarios that need other gates,
another release, no nodes, or components they stop and restart, which the session's other
tests must not see. Taken down at the end with the session's own checks: no process, port or
directory left behind, and no RBAC refusal in the shim's log outside the spans a test said it
expected. E2E_LOGS=DIR keeps the logs in DIR/<tag>."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tests.e2e.conftest import TMP_PREFIX, rbac_refusals
from tests.e2e.framework import Kube
from tools.controlplane import cluster as cp


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
