"""A Ctrl-C while a command still imports exits 130, not with a traceback."""

from __future__ import annotations

import importlib.abc
import sys
from collections.abc import Iterator

import pytest

from decider.cli import entry as decider_entry
from shim import entry as shim_entry


class _InterruptImport(importlib.abc.MetaPathFinder):
    """The user's Ctrl-C, arriving while `name` is imported."""

    def __init__(self, name: str) -> None:
        self.name = name

    def find_spec(self, fullname: str, path: object, target: object = None) -> None:
        if fullname == self.name:
            raise KeyboardInterrupt


@pytest.fixture
def interrupting(monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    def arm(name: str) -> None:
        # The module and everything under it: `from decider.cli.main import main` finds
        # decider.cli.main in sys.modules, without importing decider.cli, once an earlier test
        # of the same process (one running the CLI in-process) has imported it.
        for loaded in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            monkeypatch.delitem(sys.modules, loaded)
        monkeypatch.setattr(sys, "meta_path", [_InterruptImport(name), *sys.meta_path])
    yield arm


@pytest.mark.parametrize(("entry", "module", "command"), [
    # The module entry imports: with the whole suite collected, tests/support/cli_run has
    # imported it already, and a parent package left in sys.modules is not imported again.
    (decider_entry, "decider.cli.main", "decider"),
    (shim_entry, "shim.main", "decider-shim"),
], ids=["decider", "decider-shim"])
def test_ctrl_c_during_imports_exits_130(interrupting, capsys, entry, module, command) -> None:
    interrupting(module)
    assert entry.main() == 130
    assert capsys.readouterr().err == f"{command}: interrupted\n"
