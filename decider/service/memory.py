"""Giving the memory of large requests back to the system once they are answered.

gRPC's C core receives a message into many small buffers and frees them once Python has its
bytes. glibc keeps freed memory in its arenas (one per thread that allocated it) and returns an
arena's pages to the system only from the top of its heap, so after a burst of large requests
the front process stayed hundreds of megabytes above its idle size, memory no request used (16
refused 60 MiB requests: 61 MiB idle, 463 MiB an hour later; `malloc_trim` brought it back to 64
MiB). The Trimmer calls `malloc_trim(0)` a moment after large requests have been let go of, on
a thread of its own (it walks every arena), at most once per TRIM_DELAY_SECONDS while they keep
coming. Small requests reuse the memory the last ones freed and do not ask for a trim.

Only glibc has malloc_trim; with another C library (musl) the Trimmer does nothing.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import logging
import time
from collections.abc import Callable

log = logging.getLogger("decider.memory")

# A request at least this large is worth a trim once it is gone: gRPC's buffers for smaller
# ones are reused by the requests that follow.
LARGE_REQUEST_BYTES = 1 << 20
# Requests let go of within this long of one another share one trim.
TRIM_DELAY_SECONDS = 1.0


def _glibc_trim() -> Callable[[], int] | None:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else ctypes.CDLL(None)
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int

    def timed() -> int:
        started = time.perf_counter()
        released = int(trim(0))
        log.debug("malloc_trim: %.1f ms", (time.perf_counter() - started) * 1000)
        return released
    return timed


class Trimmer:
    """Asks glibc to return free memory after large requests; `released(size)` from the event
    loop as each request is let go of."""

    def __init__(self, delay: float = TRIM_DELAY_SECONDS,
                 large: int = LARGE_REQUEST_BYTES) -> None:
        self.delay = delay
        self.large = large
        self.trims = 0
        self._trim = _glibc_trim()
        self._pending: asyncio.TimerHandle | None = None
        self._running: asyncio.Future[int] | None = None

    @property
    def available(self) -> bool:
        return self._trim is not None

    def released(self, size: int) -> None:
        if size < self.large or self._trim is None or self._pending is not None:
            return
        loop = asyncio.get_running_loop()
        self._pending = loop.call_later(self.delay, self._start, loop)

    def _start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._pending = None
        if self._running is not None and not self._running.done():
            # One trim at a time: this one waits for the next turn.
            self._pending = loop.call_later(self.delay, self._start, loop)
            return
        assert self._trim is not None
        self._running = loop.run_in_executor(None, self._trim)
        self._running.add_done_callback(self._done)

    def _done(self, future: asyncio.Future[int]) -> None:
        if future.cancelled():
            return
        exc = future.exception()
        if exc is not None:
            log.warning("malloc_trim failed: %s", exc)
            return
        self.trims += 1

    def close(self) -> None:
        if self._pending is not None:
            self._pending.cancel()
            self._pending = None
