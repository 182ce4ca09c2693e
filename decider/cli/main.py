"""`decider serve | decide | simulate | validate | gang | podsets | replay`: the project's
stable command-line surface. Each command is a module of this package; this one builds the
parser from them and runs the command asked for.

Exit codes: 0 success (validate: valid), 2 bad input or an invalid object (the message or the
JSON on stdout names the field), 1 a server that could not be reached.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from decider.cli.common import UsageError, fail

# Each command: the module that runs it, the function there that adds its flags, and its help.
# Only the command asked for is imported, so `decider decide` loads no server, webhook or
# telemetry code and `decider --version` none of the commands (tests/test_cli_imports.py).
COMMANDS: dict[str, tuple[str, str, str]] = {
    "serve": ("decider.cli.serve", "add_arguments",
              "run the gRPC server (and the admission webhook)"),
    "decide": ("decider.cli.decide", "add_arguments", "one reconcile pass: print the plan"),
    "simulate": ("decider.cli.simulate", "add_arguments",
                 "what if? Decide passes rolled forward under hypothetical events, to an outcome"),
    "validate": ("decider.cli.validate", "add_arguments",
                 "admission: default and validate a JobSet, or check a Job update against the "
                 "gang rules"),
    "gang": ("decider.cli.gang", "add_gang_arguments",
             "gang scheduling: the Workload/PodGroups a Job or JobSet needs, and its "
             "pod-template references"),
    "podsets": ("decider.cli.gang", "add_podsets_arguments",
                "Kueue's pod sets of a Job or JobSet beside the gang minCount of each"),
    "replay": ("decider.cli.replay", "add_arguments",
               "decide every decision-log line again; print those whose answer differs "
               "(exit 1 if any)"),
}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        fail(message)


class _Version(argparse.Action):
    """--version, its text read only when asked for (the package metadata takes ~50 ms)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS,
                 default: Any = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings=option_strings, dest=dest, default=default, nargs=0,
                         help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        from decider_api.version import version_line

        sys.stdout.write(version_line("decider") + "\n")
        parser.exit()


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser with every command's flags, or (`command` named) with that command's flags
    alone, the others listed for --help."""
    parser = _Parser(prog="decider", description="A stateless decider for Kubernetes JobSets.")
    parser.add_argument("--version", action=_Version, help="show program's version number and "
                                                           "exit")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name, (module, adder, text) in COMMANDS.items():
        command_parser = sub.add_parser(name, help=text)
        if command is None or command == name:
            getattr(importlib.import_module(module), adder)(command_parser)
    return parser


def _command(argv: Sequence[str]) -> str:
    """The command argv names (its first word that is not an option), or "" for none known:
    the parser then needs no command's flags (--version, --help, or an error)."""
    word = next((a for a in argv if not a.startswith("-")), "")
    return word if word in COMMANDS else ""


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
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(_command(argv)).parse_args(argv)
    from decider_client.errors import ObservationError

    try:
        _check_text(args)
        return args.func(args)
    except (UsageError, ObservationError) as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        return 130
