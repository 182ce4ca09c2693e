"""The house's rules, read from the code's own imports (docs/architecture.md draws them).

Every `import` counts, at the top of a module or inside a function, under TYPE_CHECKING or not:
a cycle through a lazy import is still two modules that each need the other.
- No module imports, directly or through others, a module that imports it back.
- Inside `decider`, layers run one way: cli -> webhook -> service -> telemetry -> contract ->
  core. A module may import its own layer and the layers below it, never one above.
- The core imports nothing of the project outside itself.
- `decider_api` (what the client and the server share) imports only itself; the client imports
  only itself and `decider_api`; the shim imports only those two, `decider_telemetry` and itself.
  None of the first two reaches for the server's dependencies, so the client installs without
  them.
- `decider_telemetry` (the OpenTelemetry SDK's set-up, shared by the server and the shim)
  imports only itself and `decider_api`; no server module but the CLI imports the client.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {
    "decider": ROOT / "decider",
    "decider_api": ROOT / "clients" / "python" / "decider_api",
    "decider_client": ROOT / "clients" / "python" / "decider_client",
    "decider_telemetry": ROOT / "decider_telemetry",
    "shim": ROOT / "shim",
}
# decider's layers, lowest first. decider.v1 (the contract's first published name) and
# decider.version are leaves every layer may use.
LAYERS = ["core", "contract", "telemetry", "service", "webhook", "cli"]
LEAVES = {"decider", "decider.v1", "decider.v1.decider_pb2", "decider.v1.decider_pb2_grpc",
          "decider.version"}
# Who may import which of the project's top-level packages.
ALLOWED_PACKAGES = {
    "decider_api": {"decider_api"},
    "decider_client": {"decider_client", "decider_api"},
    "decider_telemetry": {"decider_telemetry", "decider_api"},
    "shim": {"shim", "decider_client", "decider_api", "decider_telemetry"},
}
# What a server needs and a client must not: `pip install ./clients/python` brings none of it.
SERVER_ONLY = {"uvloop", "aiohttp", "kubernetes", "cryptography", "orjson", "re2", "yaml_rust",
               "opentelemetry", "prometheus_client"}


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package, root in PACKAGES.items():
        for path in root.rglob("*.py"):
            if "_pb2" in path.name:
                continue
            parts = [package, *path.relative_to(root).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


MODULES = _modules()


def _imported_names(path: Path) -> Iterator[tuple[str, int]]:
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module, node.lineno
            for alias in node.names:
                yield f"{node.module}.{alias.name}", node.lineno


def _project_module(name: str) -> str | None:
    """The project's module that `name` (a module, or a name inside one) is, if any."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def _graph() -> dict[str, dict[str, int]]:
    graph: dict[str, dict[str, int]] = {}
    for module, path in MODULES.items():
        edges: dict[str, int] = {}
        for name, line in _imported_names(path):
            target = _project_module(name)
            # `from decider.contract import convert` names the package and the module: the
            # edge is to the module, not to the package's __init__ (which imports nothing).
            if target is not None and target != module and not module.startswith(target + "."):
                edges.setdefault(target, line)
        graph[module] = edges
    return graph


GRAPH = _graph()


def _cycles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in GRAPH.get(node, {}):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(GRAPH):
        if node not in index:
            visit(node)
    return found


def _layer(module: str) -> int | None:
    if module in LEAVES or not module.startswith("decider."):
        return None
    return LAYERS.index(module.split(".")[1])


def test_the_walk_sees_the_whole_house() -> None:
    # Guards the test itself: a walk that found nothing would pass every rule below.
    assert {"decider.core.decide", "decider.contract.convert", "decider.service.server",
            "decider.cli.main", "decider_api.summarize", "decider_client.client",
            "decider_telemetry.sdk", "shim.controller"} <= set(MODULES)
    assert "decider.contract.convert" in GRAPH["decider.service.dispatch"]


def test_no_import_cycle() -> None:
    assert _cycles() == []


def test_every_decider_module_is_in_a_layer() -> None:
    strays = [m for m in MODULES if m.startswith("decider.") and m not in LEAVES
              and m.split(".")[1] not in LAYERS]
    assert strays == []


@pytest.mark.parametrize("layer", LAYERS)
def test_imports_run_down_the_layers(layer: str) -> None:
    rank = LAYERS.index(layer)
    upward = [f"{m}:{line} imports {t} ({LAYERS[_layer(t)]})"
              for m, edges in GRAPH.items() if _layer(m) == rank
              for t, line in edges.items()
              if _layer(t) is not None and _layer(t) > rank]
    assert upward == []


def test_the_core_imports_nothing_of_the_project_outside_itself() -> None:
    outside = [f"{m}:{line} imports {t}" for m, edges in GRAPH.items()
               if m.startswith("decider.core") for t, line in edges.items()
               if not t.startswith("decider.core") and t != "decider"]
    assert outside == []


def test_the_server_never_imports_its_client() -> None:
    """The CLI is a client (it reads files and prints plans with it); nothing else of the
    server is: what both need lives in decider_api."""
    found = {(m, t) for m, edges in GRAPH.items()
             if m.startswith("decider.") and not m.startswith("decider.cli")
             for t in edges if t.split(".")[0] == "decider_client"}
    assert found == set()


@pytest.mark.parametrize("package", sorted(ALLOWED_PACKAGES))
def test_shared_code_client_and_shim_import_only_what_they_may(package: str) -> None:
    allowed = ALLOWED_PACKAGES[package]
    bad = [f"{m}:{line} imports {t}" for m, edges in GRAPH.items()
           if m.split(".")[0] == package for t, line in edges.items()
           if t.split(".")[0] not in allowed]
    assert bad == []


@pytest.mark.parametrize("package", ["decider_api", "decider_client"])
def test_the_client_side_needs_none_of_the_servers_dependencies(package: str) -> None:
    bad = {(m, name.split(".")[0]) for m, path in MODULES.items()
           if m.split(".")[0] == package
           for name, _ in _imported_names(path)
           if name.split(".")[0] in SERVER_ONLY}
    assert bad == set()
