"""The e2e suite's wiring: left out unless asked for, one control plane per session, a
namespace per test, and a check at the end that nothing is left behind.

Selection: an item under tests/e2e runs only when the -m expression names `e2e`
(`python -m pytest -m e2e`), or when tests/e2e (or a file in it) is named on the command line.
Everything else deselects it, so the README's `python -m pytest -q` never starts a control
plane. (An addopts `-m "not e2e"` would not do: pytest keeps only the last -m, so it would be
lost whenever anyone passes another -m, e.g. bench/suite_under_load.py's `-m waits`.)
"""

from __future__ import annotations

import os
import secrets
import shutil
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.framework import TIMEOUT, Kube, eventually
from tools.controlplane import cluster as cp
from tools.controlplane import product
from tools.controlplane.processes import tail

HERE = Path(__file__).resolve().parent
NODES = int(os.environ.get("E2E_NODES", "3"))
TMP_PREFIX = "jobset-decider-e2e-"


def _asked_for(config: pytest.Config) -> bool:
    if "e2e" in (config.option.markexpr or ""):
        return True
    for arg in config.args:
        path = Path(arg.split("::", 1)[0]).resolve()
        if path == HERE or HERE in path.parents:
            return True
    return False


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    mine = [i for i in items if HERE in Path(str(i.path)).parents]
    for item in mine:
        item.add_marker(pytest.mark.e2e)
    if mine and not _asked_for(config):
        config.hook.pytest_deselected(items=mine)
        chosen = set(map(id, mine))
        items[:] = [i for i in items if id(i) not in chosen]


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> Iterator[pytest.TestReport]:
    report = yield
    setattr(item, f"e2e_report_{report.when}", report)
    return report


@dataclass
class E2E:
    """The session's control plane with jobset-decider installed."""

    cluster: cp.Cluster
    kube: Kube
    product: dict[str, Any]

    def log(self, name: str, lines: int = 40) -> str:
        return tail(Path(self.cluster.state.find(name)["log"]), lines)


@pytest.fixture(scope="session")
def e2e() -> Iterator[E2E]:
    version = os.environ.get("E2E_KUBERNETES_VERSION", "v1.37.2")
    directory = Path(tempfile.mkdtemp(prefix=TMP_PREFIX))
    cluster = None
    try:
        cluster = cp.up(directory, version, nodes=NODES)
        info = product.install(cluster)
        kube = Kube(str(cluster.kubeconfig))
        yield E2E(cluster, kube, info)
        kube.close()
    finally:
        left = cluster.down() if cluster is not None else []
        shutil.rmtree(directory, ignore_errors=True)
        if directory.exists():
            left.append(f"directory {directory} still exists")
        # Processes, ports and this run's directory (every process's TMPDIR and HOME are in
        # it, so nothing they wrote is anywhere else).
        assert not left, "the e2e run left behind:\n" + "\n".join(left)


@pytest.fixture
def ns(e2e: E2E, request: pytest.FixtureRequest) -> Iterator[str]:
    """A namespace of the test's own, its default service account there (pods wait for it);
    on failure, what happened in it is printed."""
    base = request.node.name.split("[")[0].removeprefix("test_").replace("_", "-")[:40]
    name = f"e2e-{base}-{secrets.token_hex(2)}".lower()
    e2e.kube.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                           "metadata": {"name": name}})
    eventually(f"serviceaccount {name}/default", lambda: e2e.kube.maybe(
        f"/api/v1/namespaces/{name}/serviceaccounts/default"), bool, TIMEOUT)
    yield name
    report = getattr(request.node, "e2e_report_call", None)
    if report is not None and report.failed:
        _dump(e2e, name)
    e2e.kube.delete(f"/api/v1/namespaces/{name}")


def _dump(e2e: E2E, ns: str) -> None:
    out = [f"--- namespace {ns} after the failure"]
    for ev in e2e.kube.events(ns)[-40:]:
        obj = ev.get("involvedObject", {})
        out.append(f"event {ev.get('type')} {obj.get('kind')}/{obj.get('name')} "
                   f"{ev.get('reason')}: {ev.get('message')}")
    out.append(e2e.log("shim"))
    out.append(e2e.log("decider", 15))
    print("\n".join(out), file=sys.stderr)
