"""The decider CLI run in the test's own process, its output captured by pytest."""

from __future__ import annotations

import pytest

from decider.cli import main as cli


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """(exit code, standard output, standard error) of `decider ARGS`: argparse, observe,
    convert (or gRPC), render, as a user's command would run them."""
    try:
        code = cli.main(list(args))
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err
