"""What every `decider` subcommand shares: exit codes, the one-line error, reading input,
feature gates and --now."""

from __future__ import annotations

import codecs
import contextlib
import sys
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import BinaryIO, NoReturn

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


# No input a user hands -f comes near this (the API server takes 3 MiB per object; 100,000 Jobs
# as `kubectl get -o yaml` prints them are ~300 MB): reading stops here, so a device or an endless
# pipe (-f /dev/zero, `yes | decider ... -f -`) is refused instead of filling memory.
MAX_INPUT_BYTES = 512 * 1024 * 1024
_CHUNK = 1024 * 1024


def read_input(path: str, max_bytes: int = MAX_INPUT_BYTES) -> str:
    try:
        if path == "-":
            if sys.stdin is None:  # started with standard input closed (<&-)
                raise UsageError("-: there is no standard input to read (it is closed)")
            stream = getattr(sys.stdin, "buffer", None)
            if stream is None:  # a text stream put in its place (tests, embedding)
                return _bounded(iter(lambda: sys.stdin.read(_CHUNK), ""), path, max_bytes)
            return _read_text(stream, path, max_bytes)
        with open(path, "rb") as fh:
            return _read_text(fh, path, max_bytes)
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not UTF-8 text") from None


def _read_text(stream: BinaryIO, path: str, max_bytes: int) -> str:
    """The stream as UTF-8 text, read a chunk at a time: refused at the first NUL byte (YAML
    and JSON hold none; /dev/zero is nothing else) and past max_bytes."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    out: list[str] = []
    seen = 0
    for chunk in iter(lambda: stream.read(_CHUNK), b""):
        nul = chunk.find(b"\0")
        if nul >= 0:
            raise UsageError(f"{path}: not YAML or JSON text (a NUL byte at byte "
                             f"{seen + nul:,})")
        seen += len(chunk)
        _check_size(seen, path, max_bytes)
        out.append(decoder.decode(chunk))
    out.append(decoder.decode(b"", final=True))
    return "".join(out)


def _bounded(parts: Iterable[str], path: str, max_bytes: int) -> str:
    out: list[str] = []
    seen = 0
    for part in parts:
        seen += len(part)
        _check_size(seen, path, max_bytes)
        out.append(part)
    return "".join(out)


def _check_size(seen: int, path: str, max_bytes: int) -> None:
    if seen > max_bytes:
        raise UsageError(f"{path}: more than {max_bytes:,} bytes, not read further (an "
                         "endless stream or a device?)")


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
