"""The shim is a client of the contract like any other: it never imports the decider itself."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN = ("decider.core", "decider.service", "decider.cli", "decider.contract")


@pytest.mark.waits
def test_importing_the_shim_loads_no_decider_internals():
    code = (
        "import sys, shim, shim.main, shim.controller, shim.apply, shim.informer, shim.leader\n"
        f"bad = sorted(m for m in sys.modules if m.startswith({FORBIDDEN!r}))\n"
        "print(','.join(bad))\n"
        "assert 'decider_api.v1.decider_pb2' in sys.modules and 'decider_client' in sys.modules\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ""


def test_shim_sources_import_only_the_contract():
    offenders = []
    for path in sorted((ROOT / "shim").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            for name in names:
                if name == "decider" or name.startswith("decider."):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} {name}")
    assert offenders == []
