"""What every `decider` subcommand shares: exit codes, the one-line error, feature gates."""

from __future__ import annotations

import contextlib
import sys
from typing import NoReturn

EXIT_INVALID = 2
EXIT_UNAVAILABLE = 1


class UsageError(Exception):
    """Bad input: reported on one line, exit code 2."""


def fail(message: str, code: int = EXIT_INVALID) -> NoReturn:
    # The exit code is the answer a script reads: it must not change because standard error is
    # closed (print(file=None) would write the message into standard output, the plan's place)
    # or is a pipe whose reader left (BrokenPipeError made it exit 1).
    if sys.stderr is not None:
        with contextlib.suppress(OSError):
            print(f"decider: {message}", file=sys.stderr, flush=True)
    sys.exit(code)


def warn(message: str) -> None:
    """One line on standard error that changes neither the output nor the exit code."""
    if sys.stderr is not None:
        with contextlib.suppress(OSError):
            print(f"decider: warning: {message}", file=sys.stderr, flush=True)


def parse_gates(text: str | None) -> dict[str, bool]:
    """`RestartJob=true,ElasticJobSet=false` -> {"RestartJob": True, "ElasticJobSet": False}."""
    gates: dict[str, bool] = {}
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        name, sep, value = item.partition("=")
        if not sep or not name.strip() or value.strip().lower() not in ("true", "false"):
            raise UsageError(f"--feature-gates: {item!r} is not NAME=true|false")
        gates[name.strip()] = value.strip().lower() == "true"
    return gates
