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
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.framework import Kube
from tests.e2e.planes import fresh_namespace, own_plane
from tools.controlplane import cluster as cp
from tools.controlplane import product
from tools.controlplane.processes import tail

HERE = Path(__file__).resolve().parent
NODES = int(os.environ.get("E2E_NODES", "3"))


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
    # Down at the end with planes.own_plane's checks: processes, ports and this run's
    # directory (every process's TMPDIR and HOME are in it), and deploy/'s RBAC: the shim runs
    # as its ServiceAccount, so a request refused is a hole in deploy/, whatever test caused it.
    version = os.environ.get("E2E_KUBERNETES_VERSION", "v1.37.2")
    with own_plane("session", version, NODES) as plane:
        yield E2E(plane.cluster, plane.kube, product.install(plane.cluster))


def failed(request: pytest.FixtureRequest) -> bool:
    """Whether the test a fixture serves failed (read in the fixture's teardown)."""
    report = getattr(request.node, "e2e_report_call", None)
    return report is not None and report.failed


@pytest.fixture
def ns(e2e: E2E, request: pytest.FixtureRequest) -> Iterator[str]:
    """A namespace of the test's own (planes.fresh_namespace)."""
    base = request.node.name.split("[")[0].removeprefix("test_").replace("_", "-")
    with fresh_namespace(e2e.kube, base, lambda: [e2e.log("shim"), e2e.log("decider", 15)],
                        lambda: failed(request)) as name:
        yield name
