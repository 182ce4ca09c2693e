"""What the client's tests share. They run in an environment where only the client is installed
(`pip install ./clients/python pytest`), against a real `decider serve` started from the
server's environment.

DECIDER_PYTHON names the server's interpreter (default: the repository's .venv, which the
README's first command makes). CI sets DECIDER_CLIENT_ONLY=1, which turns "this environment also
holds the server" from a skip into a failure.
"""

from __future__ import annotations

import os
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"
SERVER_PYTHON = Path(os.environ.get("DECIDER_PYTHON") or ROOT / ".venv" / "bin" / "python")


def client_only() -> None:
    """Skip (or, in CI, fail) a test that only means something without the server installed."""
    installed = _installed("jobset-decider-client")
    server = _installed("jobset-decider")
    if installed and not server:
        return
    why = ("the jobset-decider-client distribution is not installed" if not installed
           else "the server's distribution (jobset-decider) is installed here too")
    if os.environ.get("DECIDER_CLIENT_ONLY"):
        pytest.fail(why)
    pytest.skip(why)


def _installed(name: str) -> bool:
    try:
        metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return False
    return True
