"""The decision workers behind one server port: one request per worker at a time.

`run` hands a serialized request to an idle worker and awaits the serialized answer without
blocking the event loop, so health and every other RPC keep being answered while decisions run
on every core. A request is bounded in time: what is left of it when a worker frees up is what
the worker gets; a worker still busy at the end is killed (nothing else can stop a computation)
and replaced. A request whose caller goes away mid-decision ends the same way.
"""

from __future__ import annotations

import asyncio
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


class _Worker:
    def __init__(self, proc: asyncio.subprocess.Process, reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter) -> None:
        self.proc = proc
        self.reader = reader
        self.writer = writer

    @property
    def pid(self) -> int:
        return self.proc.pid

    async def call(self, method_id: int, want: int, payload: bytes) -> Reply:
        self.writer.write(worker_main.REQUEST_HEADER.pack(method_id, want, len(payload)))
        self.writer.write(payload)
        await self.writer.drain()
        header = await self.reader.readexactly(worker_main.REPLY_HEADER.size)
        code, length, extra = worker_main.REPLY_HEADER.unpack(header)
        body = await self.reader.readexactly(length)
        return Reply(code, body, await self.reader.readexactly(extra) if extra else b"")

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()
        self.writer.close()

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
        self._idle: asyncio.Queue[_Worker] = asyncio.Queue()
        self._all: set[_Worker] = set()
        self._busy: set[_Worker] = set()
        self._waiting = 0
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
            self._idle.put_nowait(w)
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
        reader, writer = await asyncio.open_unix_connection(sock=parent_sock)
        w = _Worker(proc, reader, writer)
        try:
            ready = await asyncio.wait_for(reader.readexactly(1), self.start_timeout)
        except (TimeoutError, asyncio.IncompleteReadError, ConnectionError):
            why = await w.exit_description()
            w.kill()
            raise RuntimeError(f"worker {proc.pid} {why} before it was ready") from None
        if ready != worker_main.READY:
            w.kill()
            raise RuntimeError(f"worker {proc.pid} sent {ready!r} instead of ready")
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
            self._idle.put_nowait(spare)
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
                self._idle.put_nowait(w)
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
            w.writer.close()
        deadline = time.monotonic() + timeout
        for w in list(self._all):
            try:
                await asyncio.wait_for(w.proc.wait(), max(0.0, deadline - time.monotonic()))
            except TimeoutError:
                w.kill()
                await w.proc.wait()
        self._all.clear()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    # ---- requests -------------------------------------------------------------------------

    @property
    def busy(self) -> int:
        return len(self._busy)

    @property
    def worker_pids(self) -> set[int]:
        return {w.pid for w in self._all}

    @property
    def busy_pids(self) -> set[int]:
        return {w.pid for w in self._busy}

    async def run(self, method: str, payload: bytes, timeout: float, want: int = 0) -> Reply:
        """The worker's reply; Overrun, WorkerLost or Busy when there is none."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        if self._waiting >= self.max_pending and self._idle.empty():
            raise Busy(f"{self._waiting} requests are already waiting for a decision worker")
        self._waiting += 1
        try:
            w = await asyncio.wait_for(self._idle.get(), timeout)
        except TimeoutError:
            raise Overrun(loop.time() - started, ran=False) from None
        finally:
            self._waiting -= 1
        left = timeout - (loop.time() - started)
        if left <= 0:
            self._idle.put_nowait(w)
            raise Overrun(loop.time() - started, ran=False)
        self._busy.add(w)
        try:
            reply = await asyncio.wait_for(
                w.call(METHOD_IDS.get(method, 255), want, payload), left)
        except TimeoutError:
            self._retire(w)
            raise Overrun(loop.time() - started, ran=True) from None
        except (asyncio.IncompleteReadError, ConnectionError) as exc:
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
        self._idle.put_nowait(w)
        return reply
