"""How a command asks a decider: the one at --server, or the contract in-process.

Both paths take the same request and give the same answer message, so a command prints the same
bytes either way; errors come back as UsageError naming the flag that set the field.
"""

from __future__ import annotations

import argparse
from typing import Any

from decider.cli.common import EXIT_UNAVAILABLE, UsageError, fail, warn


def _call_remote(target: str, method: str, request: Any, command: str | None = None) -> Any:
    import grpc

    from decider_client import DeciderClient

    with DeciderClient(target, timeout=30.0) as client:
        try:
            answer = getattr(client, method)(request)
        except grpc.RpcError as exc:
            code = exc.code()
            shed = any(key == "grpc-retry-pushback-ms" for key, _ in
                       (exc.trailing_metadata() or ()))  # type: ignore[attr-defined]
            # Too large is the input's fault, as in-process (exit 2); a server shedding load
            # says so with a retry pushback, and is "could not be served" (exit 1).
            if code == grpc.StatusCode.INVALID_ARGUMENT or (
                    code == grpc.StatusCode.RESOURCE_EXHAUSTED and not shed):
                raise UsageError(_flag_named(exc.details(), command)) from None
            fail(f"{target}: {code.name}: {exc.details()}", EXIT_UNAVAILABLE)
        # A decider older than this CLI answers in its older contract: what it does not know is
        # unset in its answer, which reads as "absent". Said, so the difference from the
        # in-process answer is not taken for a fact about the input.
        gaps = client.contract_gaps(_RPC_NAME[method], request, timeout=5.0)
        if gaps:
            warn(f"{target} serves an older contract than this client: {gaps}")
        return answer


_RPC_NAME = {"decide": "Decide", "validate": "Validate", "plan_gang": "PlanGang",
             "pod_sets": "PodSets", "simulate": "Simulate"}


def _call_local(method: str, request: Any, command: str | None = None) -> Any:
    from decider.contract.limits import DEFAULT
    from decider.core.errors import InvalidInput, TooLarge
    from decider.service import dispatch

    try:
        return dispatch.answer_message(_RPC_NAME[method], request, DEFAULT)
    except (InvalidInput, TooLarge) as exc:
        raise UsageError(_flag_named(dispatch.safe_text(str(exc)), command)) from None


# Request fields a flag sets, by subcommand: `gang` and `podsets` spell theirs shorter.
_FLAG_OF_FIELD = {
    "options.feature_gates": {None: "--feature-gates"},
    "options.gang_target": {"gang": "--target", None: "--gang-target"},
    "options.gang_api_version": {"gang": "--api-version", "podsets": "--api-version",
                                 "validate": "--api-version", None: "--gang-api-version"},
}


def _flag_named(message: str, command: str | None = None) -> str:
    """The decider names request fields; where a flag set the field, name the flag too."""
    for field, flags in _FLAG_OF_FIELD.items():
        if message.startswith(field):
            return f"{flags.get(command) or flags[None]}: {message}"
    return message


def server_target(text: str) -> str:
    """--server: a gRPC target; an empty one (an unset variable) would silently decide here, and
    gRPC wraps a port past 65535 into another one."""
    if not text.strip():
        raise argparse.ArgumentTypeError("empty: give HOST:PORT")
    host, sep, port = text.rpartition(":")
    if sep and port.isdigit() and not 0 < int(port) <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port (1..65535)")
    return text


def call(args: argparse.Namespace, method: str, request: Any) -> Any:
    """Ask the server named by --server, or decide in-process: one contract either way."""
    return _call_remote(args.server, method, request, args.command) if args.server \
        else _call_local(method, request, args.command)
