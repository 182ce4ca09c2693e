"""A batch span processor for spans already written (span_wire.WireSpan).

The SDK's batch processor asks the kernel for the process id on every span, to notice a fork:
under load that system call was 3% of the decider's event-loop samples (py-spy), a tenth of
what the rest of a written span costs. This one queues a span with a deque append and keeps
the SDK's settings and behaviour otherwise: OTEL_BSP_SCHEDULE_DELAY, OTEL_BSP_MAX_QUEUE_SIZE (a
full queue drops the newest span), OTEL_BSP_MAX_EXPORT_BATCH_SIZE, OTEL_BSP_EXPORT_TIMEOUT; an
export as soon as a batch is full; force_flush and shutdown. The decider never forks once
serving (its workers are spawned, and export nothing).
"""

from __future__ import annotations

import collections
import logging
import os
import threading
import time
from collections.abc import Mapping
from typing import Any

from opentelemetry.sdk.trace import SpanProcessor

log = logging.getLogger("opentelemetry.sdk.trace.export")

_DEFAULTS = {"OTEL_BSP_SCHEDULE_DELAY": 5000, "OTEL_BSP_MAX_QUEUE_SIZE": 2048,
             "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": 512, "OTEL_BSP_EXPORT_TIMEOUT": 30000}


def _setting(env: Mapping[str, str], name: str) -> int:
    """An OTEL_BSP_* value; the SDK's default, with a warning, when it is not a positive
    integer."""
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return _DEFAULTS[name]
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value <= 0:
        log.warning("%s: %r is not a positive integer; using %d", name, raw, _DEFAULTS[name])
        return _DEFAULTS[name]
    return value


class WireBatchProcessor(SpanProcessor):
    def __init__(self, exporter: Any, env: Mapping[str, str] | None = None) -> None:
        env = os.environ if env is None else env
        self.exporter = exporter
        self.delay = _setting(env, "OTEL_BSP_SCHEDULE_DELAY") / 1000
        self.max_queue = _setting(env, "OTEL_BSP_MAX_QUEUE_SIZE")
        self.max_batch = min(_setting(env, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE"), self.max_queue)
        self.timeout = _setting(env, "OTEL_BSP_EXPORT_TIMEOUT") / 1000
        self.dropped = 0
        self._queue: collections.deque[Any] = collections.deque()
        self._wake = threading.Event()
        self._export_lock = threading.Lock()  # one export at a time: the thread's or a flush
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="WireBatchSpanProcessor",
                                        daemon=True)
        self._thread.start()

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        pass

    def on_end(self, span: Any) -> None:
        if self._stopping:
            return
        queue = self._queue
        if len(queue) >= self.max_queue:
            self.dropped += 1
            if self.dropped == 1 or self.dropped % 10_000 == 0:
                log.warning("Queue full, dropping Span (%d so far).", self.dropped)
            return
        queue.append(span)
        if len(queue) >= self.max_batch and not self._wake.is_set():
            self._wake.set()

    def _run(self) -> None:
        while not self._stopping:
            woken = self._wake.wait(self.delay)
            self._wake.clear()
            # Woken by a full batch: whole batches only, so that spans arriving meanwhile fill
            # the next one rather than leave in a stream of small exports. On the timer: all.
            self._export(full_only=woken)

    def _export(self, deadline: float | None = None, full_only: bool = False) -> bool:
        """Export what is queued (only whole batches if `full_only`), a batch at a time;
        False when the deadline passed first."""
        queue = self._queue
        with self._export_lock:
            while len(queue) >= (self.max_batch if full_only else 1):
                if deadline is not None and time.monotonic() >= deadline:
                    return False
                batch = [queue.popleft() for _ in range(min(len(queue), self.max_batch))]
                try:
                    self.exporter.export(batch)
                except Exception:  # noqa: BLE001 - as the SDK's: logged, never raised
                    log.exception("Exception while exporting Span batch.")
        return True

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._export(time.monotonic() + timeout_millis / 1000)

    def shutdown(self) -> None:
        self._stopping = True
        self._wake.set()
        self._thread.join(self.timeout)
        self._export(time.monotonic() + self.timeout)
        self.exporter.shutdown()
