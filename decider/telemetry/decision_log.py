"""The decision log: one JSON line per decision, as OPA's decision logs are, for audit and replay.

A line holds when and how fast it was decided, its ids (decision, trace), the method, the
JobSet, a digest of the request, the full request and answer (protobuf's JSON mapping) and the
decider's version; `decider replay` decides every line again. Writing never blocks or fails a
decision: lines go through a bounded queue to a writer thread, and a full queue or a failed write
(a full disk) drops the line, counted in `decider.decision_log.dropped`. A failing destination is
reported at once, then at most once a minute with what was lost since, and when it works again.
A file that is moved or deleted under the log (logrotate's default: rename, then a new file) is
noticed within a second and the path opened again, as Python's WatchedFileHandler does: kept
open, every later line would go to the rotated file, or to no file at all once it is deleted.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import queue
import sys
import threading
import time
from collections.abc import Callable
from typing import IO, Any

log = logging.getLogger("decider.decision_log")

DEFAULT_QUEUE = 4096
# A full disk fails every line: one ERROR per line would flood the log it shares a disk with.
REPORT_SECONDS = 60.0
# How often a file log checks that its path is still the file it writes (a stat call).
REOPEN_CHECK_SECONDS = 1.0
_STOP = object()


class DecisionLog:
    def __init__(self, target: str, *, max_queue: int = DEFAULT_QUEUE,
                 on_drop: Callable[[], None] | None = None, stream: IO[str] | None = None
                 ) -> None:
        """`target` is a file path (appended to) or "-" for standard output; `stream`, if
        given, is written instead."""
        self.target = target
        if stream is not None:
            self._out = stream
        elif target == "-":
            self._out = sys.stdout
        else:
            self._out = open(target, "a", encoding="utf-8")  # noqa: SIM115 - kept open
        self._queue: queue.Queue[Any] = queue.Queue(max_queue)
        self._on_drop = on_drop
        self.dropped = 0
        self.written = 0
        # Write failures: lines lost since the last report, and when that report was.
        self._failed = 0
        self._reported_at: float | None = None
        # Only a path this log opened can be rotated under it.
        self._watch_path = stream is None and target != "-"
        self._checked_at = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="decision-log", daemon=True)
        self._thread.start()

    def submit(self, line: str) -> None:
        try:
            self._queue.put_nowait(line)
        except queue.Full:
            self._drop()

    def _drop(self) -> None:
        self.dropped += 1
        if self._on_drop is not None:
            self._on_drop()

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            try:
                if self._watch_path:
                    self._reopen_if_moved()
                self._out.write(item)
                self._out.write("\n")
                if self._queue.empty():
                    self._out.flush()
                self.written += 1
            except (OSError, ValueError) as exc:
                # A full disk must not stop decisions.
                self._drop()
                self._write_failed(exc)
                continue
            if self._reported_at is not None:
                log.warning("decision log %s: writing again; %d line(s) dropped since the last "
                            "report", self.target, self._failed)
                self._failed, self._reported_at = 0, None

    def _reopen_if_moved(self) -> None:
        """Open the path again when it no longer names the open file (rotated or deleted);
        checked at most every REOPEN_CHECK_SECONDS. OSError when it cannot be opened."""
        now = time.monotonic()
        if now - self._checked_at < REOPEN_CHECK_SECONDS:
            return
        self._checked_at = now
        try:
            on_disk = os.stat(self.target)
            current = os.fstat(self._out.fileno())
            if (on_disk.st_dev, on_disk.st_ino) == (current.st_dev, current.st_ino):
                return
        except FileNotFoundError:
            pass
        except ValueError:  # closed after a failure: open it again
            pass
        old, self._out = self._out, open(self.target, "a", encoding="utf-8")  # noqa: SIM115
        # A close that fails loses only the old file's last buffered lines.
        with contextlib.suppress(OSError, ValueError):
            old.close()
        log.info("decision log %s: the file was moved or deleted; writing to a new one",
                 self.target)

    def _write_failed(self, exc: Exception) -> None:
        self._failed += 1
        now = time.monotonic()
        if self._reported_at is None or now - self._reported_at >= REPORT_SECONDS:
            log.error("decision log %s: %s; %d line(s) dropped (reported again at most every "
                      "%gs while it lasts)", self.target, exc, self._failed, REPORT_SECONDS)
            self._failed, self._reported_at = 0, now

    def close(self, timeout: float = 5.0) -> None:
        """Write what is queued (within `timeout`), then close the file."""
        try:
            self._queue.put(_STOP, timeout=timeout)
        except queue.Full:
            return
        self._thread.join(timeout)
        try:
            self._out.flush()
            if self._out is not sys.stdout and self.target != "-":
                self._out.close()
        except (OSError, ValueError):
            pass


def record_line(envelope: dict[str, Any], record: bytes) -> str:
    """The envelope's fields followed by the worker's record ({"request", "response" or
    "status"}) spliced in as text: the server never parses or re-encodes a large request."""
    head = json.dumps(envelope, separators=(",", ":"), ensure_ascii=False)
    body = record.decode("utf-8") if record else "{}"
    if body == "{}":
        return head
    return head[:-1] + "," + body[1:]
