"""`decider serve | decide | simulate | validate | gang | podsets | replay`: the project's
stable command-line surface. Each command is a module of this package; this one builds the
parser from them and runs the command asked for.

Exit codes: 0 success (validate: valid), 2 bad input or an invalid object (the message or the
JSON on stdout names the field), 1 a server that could not be reached.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

from decider.cli import decide, gang, replay, serve, simulate, validate
from decider.cli.common import UsageError, fail
from decider_api.version import version_line
from decider_client.errors import ObservationError


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        fail(message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="decider", description="A stateless decider for Kubernetes JobSets.")
    parser.add_argument("--version", action="version", version=version_line("decider"))
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    serve.add_parser(sub)
    decide.add_parser(sub)
    simulate.add_parser(sub)
    validate.add_parser(sub)
    gang.add_parsers(sub)
    replay.add_parser(sub)
    return parser


# Flags naming files: a path may be any bytes; every other value goes into the request.
_PATH_FLAGS = frozenset({"file", "old", "func"})


def _check_text(args: argparse.Namespace) -> None:
    """Values bound for the request are protobuf strings, which must be UTF-8: bytes that are
    not (Python keeps them as lone surrogates) are refused naming their flag, not a traceback
    when the request is built."""
    for dest, value in vars(args).items():
        if dest in _PATH_FLAGS or args.command == "serve":
            continue
        for item in value if isinstance(value, list) else [value]:
            # Simulation events are (kind, value, at, flag) tuples.
            flag, text = (item[3], item[1]) if isinstance(item, tuple) else \
                (f"--{dest.replace('_', '-')}", item)
            if isinstance(text, str):
                try:
                    text.encode("utf-8")
                except UnicodeEncodeError:
                    raise UsageError(f"{flag}: {text!r} is not valid UTF-8") from None


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        _check_text(args)
        return args.func(args)
    except (UsageError, ObservationError) as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        return 130
