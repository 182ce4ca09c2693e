"""The decision workers behind one server port: one request per worker at a time.

`run` hands a serialized request to an idle worker and awaits the serialized answer without
blocking the event loop, so health and every other RPC keep being answered while decisions run
on every core. A request is bounded in time: what is left of it when a worker frees up is what
the worker gets, and the caller is answered when it runs out. A worker that has run a request for
the server's whole limit (`max_seconds`) is killed at once (nothing else can stop a computation)
and a spare takes its place. One whose request ended sooner (the client's deadline passed, or the
caller went away) may finish for `kill_grace` seconds more, its answer dropped, before it is
killed: starting a worker costs ~0.4 s of CPU, so killing one for every short-deadline or
cancelled call of a few milliseconds let one careless client take the machine (a client sending
3 ms deadlines cut everyone else's Decides 10x).

Each worker (decider/service/worker_process.py) is reached through an asyncio Protocol and requests
wait for a worker on plain futures: no task, stream or queue per request, because this path is
most of what the server spends per RPC beside gRPC itself.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import math
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from decider.contract.limits import Limits
from decider.service.dispatch import METHOD_IDS, Reply
from decider.service.worker_process import WorkerProcess, start_worker

log = logging.getLogger("decider.pool")

# About what a new worker costs to start (imports, ~0.4 s of CPU here): letting an unwanted
# decision run this long more costs at most about twice the cheaper of killing it at once or
# letting it finish, whichever its length turns out to favour (the ski-rental rule).
DEFAULT_KILL_GRACE_SECONDS = 0.5
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


# A worker frees up in milliseconds.
QUEUE_PUSHBACK_MS = 100
# A request's bytes are refused at the budget for longer than a full queue: a large request
# holds its worker for as long as the worker takes to read it (~0.2 s for 60 MiB here), and
# those ahead of it are likely large too.
BYTES_PUSHBACK_MS = 500


class Busy(Exception):
    """More requests are already waiting for a worker than the pool queues, or their bytes
    would pass the pool's budget. pushback_ms: when sending it again is worth it."""

    def __init__(self, message: str, pushback_ms: int = QUEUE_PUSHBACK_MS) -> None:
        super().__init__(message)
        self.pushback_ms = pushback_ms



@dataclass(eq=False)
class _Job:
    """One request: waiting for a worker (`worker` None) or being decided."""

    method_id: int
    want: int
    payload: bytes
    future: asyncio.Future[Reply]
    started: float
    timer: asyncio.TimerHandle | None = None
    worker: WorkerProcess | None = None


class WorkerPool:
    def __init__(self, size: int, limits: Limits, *, max_memory_mb: int = 0,
                 max_pending: int = 1024, start_timeout: float = 60.0,
                 max_seconds: float = math.inf,
                 kill_grace: float = DEFAULT_KILL_GRACE_SECONDS,
                 max_bytes: float = math.inf) -> None:
        if size < 1:
            raise ValueError("a worker pool needs at least one worker")
        self.size = size
        self.limits = limits
        self.max_memory_mb = max_memory_mb
        self.max_pending = max_pending
        self.start_timeout = start_timeout
        self.max_seconds = max_seconds
        self.kill_grace = kill_grace
        # The request bytes this process may hold at once: waiting for a worker, or handed to
        # one and not yet answered. One request is always taken when none is held.
        self.max_bytes = max_bytes
        self.held_bytes = 0
        # Called with a request's size as the pool lets go of it (memory.Trimmer).
        self.on_released: Callable[[int], None] | None = None
        self._idle: collections.deque[WorkerProcess] = collections.deque()
        self._pending: collections.deque[_Job] = collections.deque()
        self._all: set[WorkerProcess] = set()
        # A started worker kept aside: a killed worker's place is taken at once, rather than
        # after the half second a new process needs to import the decider.
        self._spare: WorkerProcess | None = None
        self._closed = False
        self._tasks: set[asyncio.Task[Any]] = set()
        self.replaced = 0

    # ---- lifecycle ------------------------------------------------------------------------

    async def start(self) -> None:
        """Start every worker; raises RuntimeError naming the problem if one cannot start."""
        workers = await asyncio.gather(*(self._spawn() for _ in range(self.size + 1)),
                                       return_exceptions=True)
        failed = [w for w in workers if isinstance(w, BaseException)]
        started = [w for w in workers if isinstance(w, WorkerProcess)]
        if started and not failed:
            self._spare = started.pop()
        for w in started:
            self._all.add(w)
            self._idle.append(w)
        if failed:
            await self.close()
            raise RuntimeError(f"decision workers did not start: {failed[0]}")

    async def _spawn(self) -> WorkerProcess:
        w = await start_worker(self.limits, self.max_memory_mb, self.start_timeout)
        w.channel.on_reply = lambda reply: self._on_reply(w, reply)
        w.channel.on_lost = lambda: self._on_lost(w)
        return w

    def _retire(self, w: WorkerProcess) -> None:
        """Kill a worker that may be mid-decision; the spare takes its place, and a new spare
        is started (or, with none left, a replacement)."""
        w.kill()
        self._all.discard(w)
        self._reap(w)
        if self._closed:
            return
        self.replaced += 1
        spare, self._spare = self._spare, None
        if spare is not None and spare.alive and not spare.channel.closed:
            self._all.add(spare)
            self._next(spare)
        self._background(self._replace())

    def _background(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _reap(self, w: WorkerProcess) -> None:
        self._background(w.wait())

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
                self._next(w)
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
            if await w.wait(max(0.0, deadline - time.monotonic())) is None:
                w.kill()
                await w.wait()
        self._all.clear()
        for job in self._pending:
            if not job.future.done():
                job.future.set_exception(WorkerLost("the decider is stopping"))
            self._release(job)
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    # ---- requests -------------------------------------------------------------------------

    @property
    def busy(self) -> int:
        return sum(1 for w in self._all if w.job is not None)

    @property
    def waiting(self) -> int:
        return sum(1 for job in self._pending if not job.future.done())

    @property
    def worker_pids(self) -> set[int]:
        return {w.pid for w in self._all}

    @property
    def busy_pids(self) -> set[int]:
        return {w.pid for w in self._all if w.job is not None}

    # Requests are driven by callbacks, not coroutines: a worker's reply is read, its request
    # answered and the next waiting request written to it in one read callback, so a worker
    # is never left idle while the event loop gets round to a waiting coroutine.

    def _begin(self, job: _Job, w: WorkerProcess) -> None:
        job.worker, w.job = w, job
        w.channel.send(job.method_id, job.want, job.payload)

    def _next(self, w: WorkerProcess) -> None:
        """A free worker takes the longest-waiting request, or goes back to the idle list."""
        while self._pending:
            job = self._pending.popleft()
            if not job.future.done():
                self._begin(job, w)
                return
        self._idle.append(w)

    def _finish(self, job: _Job) -> None:
        if job.timer is not None:
            job.timer.cancel()
        w, job.worker = job.worker, None
        if w is not None:
            w.job = None
        self._release(job)

    def _release(self, job: _Job) -> None:
        """The pool lets go of the request's bytes: answered, given up on while waiting, or
        its worker gone (a worker has read the whole request before it answers)."""
        size = len(job.payload)
        if not size:
            return
        job.payload = b""
        self.held_bytes -= size
        if self.on_released is not None:
            self.on_released(size)

    def _on_reply(self, w: WorkerProcess, reply: Reply) -> None:
        job = w.job
        if job is None:
            return  # a reply to a request given up on: the worker is being retired
        self._finish(job)
        if not job.future.done():
            job.future.set_result(reply)
        # else: its caller was answered already (deadline) or left; the reply is dropped.
        self._next(w)

    def _on_lost(self, w: WorkerProcess) -> None:
        job = w.job
        if w in self._idle:
            self._idle.remove(w)
        if w is self._spare and not self._closed:
            self._spare = None
            self._background(self._replace())
            return
        if w not in self._all:
            return  # retired on purpose
        if job is not None:
            self._finish(job)
            self._background(self._report_lost(w, job))
        self._retire(w)

    async def _report_lost(self, w: WorkerProcess, job: _Job) -> None:
        why = await w.exit_description()
        if not job.future.done():
            job.future.set_exception(WorkerLost(f"the decision worker {why}"))

    def _expire(self, job: _Job) -> None:
        job.timer = None
        if job.future.done():
            return
        elapsed = asyncio.get_running_loop().time() - job.started
        job.future.set_exception(Overrun(elapsed, ran=job.worker is not None))
        if job.worker is not None:
            self._wind_down(job)
        else:
            # Left in the queue until a worker frees up, but no longer holding its bytes.
            self._release(job)

    def _abandon(self, job: _Job) -> None:
        """The caller went away: its decision winds down like one whose deadline passed."""
        if not job.future.done():
            job.future.cancel()
        if job.worker is None:
            self._finish(job)
        else:
            self._wind_down(job)

    def _wind_down(self, job: _Job) -> None:
        """A request nobody waits for any more: its worker goes on to the next request if it
        finishes within the grace, and is retired if not, or at once once the request has had
        the server's whole limit."""
        if job.timer is not None:
            job.timer.cancel()
            job.timer = None
        loop = asyncio.get_running_loop()
        kill_at = min(job.started + self.max_seconds, loop.time() + self.kill_grace)
        if kill_at <= loop.time():
            self._kill_late(job)
        else:
            job.timer = loop.call_at(kill_at, self._kill_late, job)

    def _kill_late(self, job: _Job) -> None:
        w = job.worker
        self._finish(job)
        if w is not None:
            self._retire(w)

    def submit(self, method: str, payload: bytes, timeout: float, want: int = 0) -> _Job:
        """Start a request at once if a worker is idle, else queue it; Busy if the queue is
        full. The job's future gets the reply, or Overrun or WorkerLost."""
        loop = asyncio.get_running_loop()
        if self.held_bytes and self.held_bytes + len(payload) > self.max_bytes:
            raise Busy(f"{self.held_bytes:,} bytes of requests are already waiting for or with "
                       f"a decision worker; this one's {len(payload):,} would pass the "
                       f"budget of {self.max_bytes:,} (--max-inflight-bytes)",
                       BYTES_PUSHBACK_MS)
        job = _Job(METHOD_IDS.get(method, 255), want, payload, loop.create_future(),
                   loop.time())
        if self._idle:
            self._begin(job, self._idle.popleft())
        else:
            if len(self._pending) >= self.max_pending:
                # Requests that ended while waiting leave their jobs behind until a worker
                # frees up; drop them before counting.
                self._pending = collections.deque(j for j in self._pending
                                                  if not j.future.done())
                if len(self._pending) >= self.max_pending:
                    raise Busy(f"{len(self._pending)} requests are already waiting for a "
                               "decision worker")
            self._pending.append(job)
        self.held_bytes += len(payload)
        job.timer = loop.call_later(max(timeout, 0.0), self._expire, job)
        return job

    def run(self, method: str, payload: bytes, timeout: float, want: int = 0
            ) -> Coroutine[Any, Any, Reply]:
        """Submits now (Busy at once), and returns what awaits the worker's reply (Overrun,
        WorkerLost when there is none). A plain function, so no frame of it waits holding the
        request (see wait())."""
        return self.wait(self.submit(method, payload, timeout, want))

    async def wait(self, job: _Job) -> Reply:
        """The reply to a submitted request; Overrun or WorkerLost when there is none.

        The request's bytes must not be in reach of a frame that can end in an exception's
        traceback: the job's future keeps its exception, the exception its traceback, the
        traceback this frame (and the caller's), and this frame the job, a cycle only a full
        garbage collection frees, rarely run in this process (F14: sixteen 60 MiB requests held
        for good). This frame lets go of the job as the exception passes, and the caller of
        submit() keeps no bytes of its own while it awaits."""
        try:
            return await job.future
        except asyncio.CancelledError:
            self._abandon(job)
            raise
        except BaseException:
            del job
            raise
