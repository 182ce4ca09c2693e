"""What every `decider` subcommand shares: exit codes, the one-line error, reading input,
feature gates and --now."""

from __future__ import annotations

import contextlib
import sys
from datetime import UTC, datetime
from typing import NoReturn

EXIT_INVALID = 2
EXIT_UNAVAILABLE = 1

# Listed for --help only: the decider checks the values, so a newer server's targets work too.
GANG_API_VERSIONS = "scheduling.k8s.io/v1alpha1|v1alpha2|v1beta1 (default: the newest)"
GANG_TARGETS = "kubernetes (default), scheduler-plugins, volcano"


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


def read_input(path: str) -> str:
    try:
        if path == "-":
            if sys.stdin is None:  # started with standard input closed (<&-)
                raise UsageError("-: there is no standard input to read (it is closed)")
            return sys.stdin.read()
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not UTF-8 text") from None


def parse_now(text: str | None) -> datetime:
    """--now, read as the decider reads the times of its input (RFC 3339, as Go's time.Parse):
    a shell variable left empty is refused rather than taken for the wall clock."""
    from decider.core.times import parse_rfc3339

    if text is None:
        return datetime.now(UTC)
    t = parse_rfc3339(text)
    if t is None:
        if parse_rfc3339(text + "Z") is not None:
            raise UsageError(f"--now: {text!r} has no time zone (add Z or an offset)")
        raise UsageError(f"--now: {text!r} is not an RFC 3339 time "
                         "(e.g. 2026-01-01T00:00:00Z)")
    try:
        return t.astimezone(UTC)
    except OverflowError:
        raise UsageError(f"--now: {text!r} is outside years 0001-9999 in UTC") from None
