"""One decision worker: the process, and the server's end of its socket.

The worker (decider/service/worker.py) reads framed requests from a socketpair and writes framed
replies; `WorkerChannel` frames the replies from the event loop's read callback and hands each
to the pool as soon as it is whole. The pool (decider/service/pool.py) decides which request
a worker gets, and when it is killed.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Callable
from typing import Any

from decider.contract.limits import Limits
from decider.service import worker as worker_main
from decider.service.dispatch import Reply

_REPLY = worker_main.REPLY_HEADER
_REQUEST = worker_main.REQUEST_HEADER


class WorkerChannel(asyncio.Protocol):
    """The server's end of one worker's socket: frames the replies and hands each to the pool
    as soon as it is whole, from the event loop's read callback."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.closed = False
        # Set by the pool once the worker is ready: (reply) and (connection lost) callbacks.
        self.on_reply: Callable[[Reply], None] | None = None
        self.on_lost: Callable[[], None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if not self.ready.done():
            if self.buffer[:1] != worker_main.READY:
                self.ready.set_exception(RuntimeError(f"sent {bytes(self.buffer[:1])!r} "
                                                      "instead of ready"))
                return
            del self.buffer[:1]
            self.ready.set_result(None)
        while len(self.buffer) >= _REPLY.size:
            code, n_body, n_facts, n_record = _REPLY.unpack_from(self.buffer)
            end = _REPLY.size + n_body + n_facts + n_record
            if len(self.buffer) < end:
                return
            view = memoryview(self.buffer)
            at = _REPLY.size
            parts = []
            for n in (n_body, n_facts, n_record):
                parts.append(bytes(view[at:at + n]))
                at += n
            reply = Reply(code, *parts)
            view.release()
            del self.buffer[:end]
            if self.on_reply is not None:
                self.on_reply(reply)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if not self.ready.done():
            self.ready.set_exception(ConnectionError(
                f"worker connection closed: {exc or 'end of file'}"))
        if self.on_lost is not None:
            self.on_lost()

    def send(self, method_id: int, want: int, payload: bytes) -> None:
        assert self.transport is not None
        self.transport.writelines((_REQUEST.pack(method_id, want, len(payload)), payload))



class WorkerProcess:
    """A decision worker process and the server's end of its socket; `job` is the request it
    is deciding (set and cleared by the pool)."""


    def __init__(self, proc: subprocess.Popen[bytes], channel: WorkerChannel) -> None:
        self.proc = proc
        self.channel = channel
        self.job: Any = None

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()
        self.close()

    def close(self) -> None:
        if self.channel.transport is not None:
            self.channel.transport.close()

    async def wait(self, timeout: float | None = None) -> int | None:
        """The exit status once the worker has exited (and is reaped), None after `timeout`.
        Polled: workers are spawned with subprocess (vfork), not the loop's child watcher."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        delay = 0.002
        while (code := self.proc.poll()) is None:
            if deadline is not None and loop.time() >= deadline:
                return None
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.1)
        return code

    async def exit_description(self) -> str:
        code = await self.wait(1.0)
        if code is None:
            return "stopped answering"
        if code < 0:
            name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ \
                else str(-code)
            hint = " (out of memory?)" if -code == signal.SIGKILL else ""
            return f"was killed by {name}{hint}"
        return f"exited with status {code}"


async def start_worker(limits: Limits, max_memory_mb: int, start_timeout: float
                       ) -> WorkerProcess:
    """A new worker, once it has said it is ready; RuntimeError naming why it is not."""
    parent_sock, child_sock = socket.socketpair()
    try:
        # subprocess spawns with vfork: a fork of this gRPC process (as uvloop's spawn
        # does) runs gRPC's fork handlers, which warn on every spawn.
        proc = subprocess.Popen(
            [sys.executable, "-m", "decider.service.worker", "--fd", str(child_sock.fileno()),
             "--parent-pid", str(os.getpid()), "--max-memory-mb", str(max_memory_mb),
             "--limits", worker_main.limits_argument(limits)],
            pass_fds=(child_sock.fileno(),), stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL)
    except BaseException:
        parent_sock.close()
        raise
    finally:
        child_sock.close()
    loop = asyncio.get_running_loop()
    _, channel = await loop.create_unix_connection(WorkerChannel, sock=parent_sock)
    w = WorkerProcess(proc, channel)
    try:
        await asyncio.wait_for(channel.ready, start_timeout)
    except (TimeoutError, ConnectionError, RuntimeError) as exc:
        why = await w.exit_description() if not isinstance(exc, RuntimeError) else str(exc)
        w.kill()
        raise RuntimeError(f"worker {proc.pid} {why} before it was ready") from None
    return w
