"""What the docs say of the CLI and the Python client holds: the client example of docs/clients.md
runs as written against a real server, and docs/cli.md's synopsis names every flag."""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

import pytest

from decider.service.server import BackgroundServer

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.waits
def test_the_python_client_example_prints_the_plans_actions() -> None:
    page = (ROOT / "docs" / "clients.md").read_text()
    section = page[page.index("## Python"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert "DeciderClient" in code and "observe.build_decide_request" in code
    out = io.StringIO()
    with BackgroundServer() as server:
        cwd = os.getcwd()
        os.chdir(ROOT)
        try:
            with contextlib.redirect_stdout(out):
                exec(compile(code.replace("localhost:50051", server.target), "clients.md", "exec"),
                     {})
        finally:
            os.chdir(cwd)
    lines = out.getvalue().splitlines()
    assert "CreateService trainer" in lines
    assert "CreateJob trainer-workers-2" in lines


def test_the_cli_synopsis_names_every_flag_of_every_subcommand() -> None:
    import argparse

    from decider.cli.main import build_parser

    page = (ROOT / "docs" / "cli.md").read_text()
    usage = page[page.index("decider serve [--host"):page.index("decider --version")]
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    missing = []
    for name, parser in sub.choices.items():
        assert f"decider {name} " in usage, name
        for action in parser._actions:
            flags = [f for f in action.option_strings if f not in ("-h", "--help")]
            # One spelling is enough: `-f FILE` for --file, --no-reflection for --reflection.
            if flags and not any(f"{f}{end}" in usage for end in (" ", "]", "=", "\n")
                                 for f in flags):
                missing.append(f"{name} {flags[-1]}")
    assert missing == []
    assert "PatchWorkload" in page and "PatchPodGroup" in page
