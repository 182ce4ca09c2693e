"""The decision workers behind one server port: one request per worker at a time.

`run` hands a serialized request to an idle worker and awaits the serialized answer without
blocking the event loop, so health and every other RPC keep being answered while decisions run
on every core. A request is bounded in time: what is left of it when a worker frees up is what
the worker gets; a worker still busy at the end is killed (nothing else can stop a computation)
and a spare takes its place at once. A request whose caller goes away mid-decision ends the same
way.

Each worker is reached through an asyncio Protocol and requests wait for a worker on plain
futures: no task, stream or queue per request, because this path is most of what the server
spends per RPC beside gRPC itself.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from typing import Any

from decider import worker as worker_main
from decider.dispatch import METHOD_IDS, Reply
from decider.limits import Limits

log = logging.getLogger("decider.pool")

_REPLY = worker_main.REPLY_HEADER
_REQUEST = worker_main.REQUEST_HEADER
# A worker that cannot start at all (a broken install) must not be respawned in a hot loop.
_RESPAWN_BACKOFF = (0.5, 30.0)


class Overrun(Exception):
    """The request's time ran out: waiting for a worker, or in one (then `ran` is True)."""

    def __init__(self, seconds: float, ran: bool) -> None:
        self.seconds = seconds
        self.ran = ran
        super().__init__(f"ran out of time after {seconds:.3f}s")


class WorkerLost(Exception):
    """The worker deciding the request exited before answering."""


class Busy(Exception):
    """More requests are already waiting for a worker than the pool queues."""


class _Channel(asyncio.Protocol):
    """The server's end of one worker's socket: frames the replies."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.waiter: asyncio.Future[Reply] | None = None
        self.closed = False

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
        self._deliver()

    def _deliver(self) -> None:
        if self.waiter is None or len(self.buffer) < _REPLY.size:
            return
        code, n_body, n_facts, n_record = _REPLY.unpack_from(self.buffer)
        end = _REPLY.size + n_body + n_facts + n_record
        if len(self.buffer) < end:
            return
        view = memoryview(self.buffer)
        start = _REPLY.size
        reply = Reply(code, bytes(view[start:start + n_body]),
                      bytes(view[start + n_body:start + n_body + n_facts]),
                      bytes(view[start + n_body + n_facts:end]))
        view.release()
        del self.buffer[:end]
        waiter, self.waiter = self.waiter, None
        if not waiter.done():
            waiter.set_result(reply)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        error = ConnectionError(f"worker connection closed: {exc or 'end of file'}")
        if not self.ready.done():
            self.ready.set_exception(error)
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(error)

    def send(self, method_id: int, want: int, payload: bytes) -> asyncio.Future[Reply]:
        assert self.transport is not None and self.waiter is None
        waiter: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        if self.closed:
            waiter.set_exception(ConnectionError("worker connection closed"))
            return waiter
        self.waiter = waiter
        self.transport.writelines((_REQUEST.pack(method_id, want, len(payload)), payload))
        return waiter


class _Worker:
    def __init__(self, proc: asyncio.subprocess.Process, channel: _Channel) -> None:
        self.proc = proc
        self.channel = channel

    @property
    def pid(self) -> int:
        return self.proc.pid

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()
        self.close()

    def close(self) -> None:
        if self.channel.transport is not None:
            self.channel.transport.close()

    async def exit_description(self) -> str:
        try:
            code = await asyncio.wait_for(self.proc.wait(), 1.0)
        except TimeoutError:
            return "stopped answering"
        if code < 0:
            name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ \
                else str(-code)
            hint = " (out of memory?)" if -code == signal.SIGKILL else ""
            return f"was killed by {name}{hint}"
        return f"exited with status {code}"


class WorkerPool:
    def __init__(self, size: int, limits: Limits, *, max_memory_mb: int = 0,
                 max_pending: int = 1024, start_timeout: float = 60.0) -> None:
        if size < 1:
            raise ValueError("a worker pool needs at least one worker")
        self.size = size
        self.limits = limits
        self.max_memory_mb = max_memory_mb
        self.max_pending = max_pending
        self.start_timeout = start_timeout
        self._idle: collections.deque[_Worker] = collections.deque()
        self._waiters: collections.deque[asyncio.Future[_Worker]] = collections.deque()
        self._all: set[_Worker] = set()
        self._busy: set[_Worker] = set()
        # A started worker kept aside: a killed worker's place is taken at once, rather than
        # after the half second a new process needs to import the decider.
        self._spare: _Worker | None = None
        self._closed = False
        self._tasks: set[asyncio.Task[Any]] = set()
        self.replaced = 0

    # ---- lifecycle ------------------------------------------------------------------------

    async def start(self) -> None:
        """Start every worker; raises RuntimeError naming the problem if one cannot start."""
        workers = await asyncio.gather(*(self._spawn() for _ in range(self.size + 1)),
                                       return_exceptions=True)
        failed = [w for w in workers if isinstance(w, BaseException)]
        started = [w for w in workers if isinstance(w, _Worker)]
        if started and not failed:
            self._spare = started.pop()
        for w in started:
            self._all.add(w)
            self._idle.append(w)
        if failed:
            await self.close()
            raise RuntimeError(f"decision workers did not start: {failed[0]}")

    async def _spawn(self) -> _Worker:
        parent_sock, child_sock = socket.socketpair()
        try:
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "decider.worker", "--fd", str(child_sock.fileno()),
                "--parent-pid", str(os.getpid()), "--max-memory-mb", str(self.max_memory_mb),
                "--limits", worker_main.limits_argument(self.limits),
                pass_fds=(child_sock.fileno(),), stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL)
        except BaseException:
            parent_sock.close()
            raise
        finally:
            child_sock.close()
        loop = asyncio.get_running_loop()
        _, channel = await loop.create_unix_connection(_Channel, sock=parent_sock)
        w = _Worker(proc, channel)
        try:
            await asyncio.wait_for(channel.ready, self.start_timeout)
        except (TimeoutError, ConnectionError, RuntimeError) as exc:
            why = await w.exit_description() if not isinstance(exc, RuntimeError) else str(exc)
            w.kill()
            raise RuntimeError(f"worker {proc.pid} {why} before it was ready") from None
        return w

    def _retire(self, w: _Worker) -> None:
        """Kill a worker that may be mid-decision; the spare takes its place, and a new spare
        is started (or, with none left, a replacement)."""
        w.kill()
        self._all.discard(w)
        self._reap(w)
        if self._closed:
            return
        self.replaced += 1
        spare, self._spare = self._spare, None
        if spare is not None and spare.proc.returncode is None:
            self._all.add(spare)
            self._release(spare)
        self._background(self._replace())

    def _background(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _reap(self, w: _Worker) -> None:
        self._background(w.proc.wait())

    async def _replace(self) -> None:
        """Start a worker: a pool member if the pool is short, else the new spare."""
        delay = _RESPAWN_BACKOFF[0]
        while not self._closed:
            try:
                w = await self._spawn()
            except (RuntimeError, OSError) as exc:
                log.error("cannot start a decision worker: %s; retrying in %.1fs", exc, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, _RESPAWN_BACKOFF[1])
                continue
            if self._closed:
                w.kill()
                self._reap(w)
                return
            # The pool first: a member may have died while there was no spare to stand in.
            if len(self._all) < self.size:
                self._all.add(w)
                self._release(w)
            elif self._spare is None:
                self._spare = w
            else:
                w.kill()
                self._reap(w)
            return

    async def close(self, timeout: float = 5.0) -> None:
        """Let idle workers exit (end of file on their socket); kill what remains."""
        self._closed = True
        if self._spare is not None:
            self._all.add(self._spare)
            self._spare = None
        for w in list(self._all):
            w.close()
        deadline = time.monotonic() + timeout
        for w in list(self._all):
            try:
                await asyncio.wait_for(w.proc.wait(), max(0.0, deadline - time.monotonic()))
            except TimeoutError:
                w.kill()
                await w.proc.wait()
        self._all.clear()
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_exception(ConnectionError("the decider is stopping"))
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    # ---- requests -------------------------------------------------------------------------

    @property
    def busy(self) -> int:
        return len(self._busy)

    @property
    def waiting(self) -> int:
        return sum(1 for w in self._waiters if not w.done())

    @property
    def worker_pids(self) -> set[int]:
        return {w.pid for w in self._all}

    @property
    def busy_pids(self) -> set[int]:
        return {w.pid for w in self._busy}

    def _release(self, w: _Worker) -> None:
        """A free worker goes to the longest-waiting request, else back to the idle list."""
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(w)
                return
        self._idle.append(w)

    async def _acquire(self, timeout: float) -> _Worker:
        if self._idle:
            return self._idle.popleft()
        if len(self._waiters) >= self.max_pending:
            # Waits that ended (timed out, caller gone) leave their futures behind until a
            # worker is released; drop them before counting.
            self._waiters = collections.deque(w for w in self._waiters if not w.done())
            if len(self._waiters) >= self.max_pending:
                raise Busy(f"{len(self._waiters)} requests are already waiting for a "
                           "decision worker")
        waiter: asyncio.Future[_Worker] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            return await asyncio.wait_for(waiter, timeout)
        except BaseException:
            # Given a worker just as the wait ended (time out, the caller gone): pass it on.
            if waiter.done() and not waiter.cancelled() and waiter.exception() is None:
                self._release(waiter.result())
            raise

    async def run(self, method: str, payload: bytes, timeout: float, want: int = 0) -> Reply:
        """The worker's reply; Overrun, WorkerLost or Busy when there is none."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        try:
            w = await self._acquire(timeout)
        except TimeoutError:
            raise Overrun(loop.time() - started, ran=False) from None
        left = timeout - (loop.time() - started)
        if left <= 0:
            self._release(w)
            raise Overrun(loop.time() - started, ran=False)
        self._busy.add(w)
        try:
            reply = await asyncio.wait_for(
                w.channel.send(METHOD_IDS.get(method, 255), want, payload), left)
        except TimeoutError:
            self._retire(w)
            raise Overrun(loop.time() - started, ran=True) from None
        except ConnectionError as exc:
            why = await w.exit_description()
            self._retire(w)
            raise WorkerLost(f"the decision worker {why}") from exc
        except BaseException:
            # Cancelled (the caller went away, or the server is stopping): the decision must
            # not go on using a core for nobody.
            self._retire(w)
            raise
        finally:
            self._busy.discard(w)
        self._release(w)
        return reply
