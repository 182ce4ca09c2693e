"""A decision worker: a child process of `decider serve` that answers one request at a time.

Decisions are CPU-bound Python. Run on the server's event loop, one large request would stall
every other RPC, health included, and nothing could stop it. In a worker process each decision
uses a core of its own, and a decision that overruns its deadline is ended by killing the
worker (the pool starts another).

Protocol on the inherited socket, all integers big-endian:
- once, worker -> server: READY (one byte) when it can take requests;
- server -> worker: method id (1 byte), what else to send back (1 byte: dispatch.WANT_*),
  length (4 bytes), the serialized request;
- worker -> server: gRPC status code (1 byte), three lengths (4 bytes each), then the
  serialized answer (code 0) or the status message in UTF-8, the facts for telemetry (JSON)
  and the decision-log record (JSON), the last two empty unless asked for.
End of file on the socket means the server is gone or done: the worker exits.
"""

from __future__ import annotations

import argparse
import ctypes
import dataclasses
import json
import os
import resource
import signal
import socket
import struct
import sys
from collections.abc import Sequence

READY = b"R"
REQUEST_HEADER = struct.Struct("!BBI")
REPLY_HEADER = struct.Struct("!BIII")
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """Linux: be killed when the server dies, even by SIGKILL, rather than linger decide-ing."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def _recv_exactly(sock: socket.socket, n: int) -> bytes | None:
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = sock.recv_into(view[got:], n - got)
        if k == 0:
            return None
        got += k
    return bytes(buf)


def serve(sock: socket.socket, limits_json: str) -> None:
    # Imported here, after the process is set up: the import is most of a worker's start-up.
    from decider.contract.limits import Limits
    from decider.service import dispatch

    limits = Limits(**json.loads(limits_json))
    sock.sendall(READY)
    while True:
        header = _recv_exactly(sock, REQUEST_HEADER.size)
        if header is None:
            return
        method_id, want, length = REQUEST_HEADER.unpack(header)
        payload = _recv_exactly(sock, length)
        if payload is None:
            return
        method = dispatch.METHOD_NAMES.get(method_id, f"method #{method_id}")
        reply = dispatch.answer(method, payload, limits, want)
        sock.sendall(REPLY_HEADER.pack(reply.code, len(reply.body), len(reply.facts),
                                       len(reply.record))
                     + reply.body + reply.facts + reply.record)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="decider-worker", description=__doc__)
    parser.add_argument("--fd", type=int, required=True, help="the socket inherited from serve")
    parser.add_argument("--limits", default="{}",
                        help="decider.contract.limits.Limits fields as JSON")
    parser.add_argument("--parent-pid", type=int, default=0, help="the server's pid")
    parser.add_argument("--max-memory-mb", type=int, default=0,
                        help="address-space limit; a decision that needs more gets MemoryError")
    args = parser.parse_args(argv)
    # The server owns shutdown: Ctrl-C in a terminal signals the whole process group, and a
    # worker must finish the decision in flight while the server drains.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    _die_with_parent()
    if args.parent_pid and os.getppid() != args.parent_pid:
        return 0  # the server died before the death signal was armed
    if args.max_memory_mb > 0:
        cap = args.max_memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    sock = socket.socket(fileno=args.fd)
    try:
        serve(sock, args.limits)
    except (BrokenPipeError, ConnectionResetError):
        pass
    finally:
        sock.close()
    return 0


def limits_argument(limits: object) -> str:
    return json.dumps(dataclasses.asdict(limits))  # type: ignore[call-overload]


if __name__ == "__main__":
    sys.exit(main())
