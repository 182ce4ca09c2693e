"""The decision log: one JSON line per decision, as OPA's decision logs are, for audit and replay.

A line holds when and how fast it was decided, its ids (decision, trace), the method, the
JobSet, a digest of the request, the full request and answer (protobuf's JSON mapping) and the
decider's version; `decider replay` decides every line again. The line's format is
decider/telemetry/log_format.py's.

Writing never blocks or fails a decision: lines go through a bounded queue (in lines and in
bytes) to a writer thread, and a full queue or a failed write (a full disk) drops the line,
counted in `decider.decision_log.dropped`. A failing destination is reported at once, then at
most once a minute with what was lost since; that it works again is reported at most once a
minute too, so a disk with room for some lines and not others does not log a pair per line.

A file is written with os.write on a descriptor opened to append, so what is on disk is known
line by line: a line cut short (a full disk; a kill -9 leaves one too) is ended before the next
one is written, and on open when the file does not end in a newline. A file that is moved or
deleted under the log (logrotate's default: rename, then a new file) is noticed within a second
and the path opened again, as Python's WatchedFileHandler does: kept open, every later line
would go to the rotated file, or to no file at all once it is deleted.
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

from decider.telemetry.log_format import line_safe

log = logging.getLogger("decider.decision_log")

DEFAULT_QUEUE = 4096
# What the queue may hold in all: a record carries its request, and requests reach 64 MiB.
# A line is always taken when the queue is empty.
DEFAULT_QUEUE_BYTES = 256 * 1024 * 1024
# Lines written to a file in one os.write, at most about this many bytes.
BATCH_BYTES = 1024 * 1024
# A full disk fails every line: one ERROR per line would flood the log it shares a disk with.
REPORT_SECONDS = 60.0
# How often a file log checks that its path is still the file it writes (a stat call).
REOPEN_CHECK_SECONDS = 1.0
_STOP = object()


def _open_append(path: str) -> tuple[int, bool]:
    """A descriptor appending to `path` (created if missing) and whether the file ends in the
    middle of a line. Raises OSError naming the path."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o666)
    except PermissionError:
        # Writable, not readable: its last byte cannot be checked.
        return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o666), False
    try:
        size = os.fstat(fd).st_size
        torn = size > 0 and os.pread(fd, 1, size - 1) != b"\n"
    except OSError:
        torn = False
    return fd, torn


class DecisionLog:
    def __init__(self, target: str, *, max_queue: int = DEFAULT_QUEUE,
                 max_queue_bytes: int = DEFAULT_QUEUE_BYTES,
                 on_drop: Callable[[], None] | None = None, stream: IO[str] | None = None
                 ) -> None:
        """`target` is a file path (appended to) or "-" for standard output; `stream`, if
        given, is written instead."""
        self.target = target
        self._stream: IO[str] | None = stream if stream is not None else (
            sys.stdout if target == "-" else None)
        self._fd = -1
        # The file's last line was cut short: the next write starts a fresh one.
        self._torn = False
        if self._stream is None:
            self._fd, self._torn = _open_append(target)
        self._queue: queue.Queue[Any] = queue.Queue(max_queue)
        self.max_queue_bytes = max_queue_bytes
        self._queued_bytes = 0
        self._bytes_lock = threading.Lock()
        self._on_drop = on_drop
        self.dropped = 0
        self.written = 0
        # Lines lost since the last report; when the last ERROR and the last "writing again"
        # were logged; whether the last write failed.
        self._lost = 0
        self._error_at: float | None = None
        self._recovered_at: float | None = None
        self._failing = False
        # Only a path this log opened can be rotated under it.
        self._watch_path = self._fd >= 0
        self._checked_at = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="decision-log", daemon=True)
        self._thread.start()

    def submit(self, line: str) -> None:
        size = len(line)
        with self._bytes_lock:
            if self._queued_bytes and self._queued_bytes + size > self.max_queue_bytes:
                full = True
            else:
                full = False
                self._queued_bytes += size
        if full:
            self._drop()
            return
        try:
            self._queue.put_nowait(line)
        except queue.Full:
            self._taken(size)
            self._drop()

    def _taken(self, size: int) -> None:
        with self._bytes_lock:
            self._queued_bytes -= size

    def _drop(self, n: int = 1) -> None:
        self.dropped += n
        if self._on_drop is not None:
            for _ in range(n):
                self._on_drop()

    # ---- the writer thread ---------------------------------------------------------------

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            batch = [item]
            size = len(item)
            stop = False
            # A file takes what else is queued in the same write.
            while self._fd >= 0 and size < BATCH_BYTES:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is _STOP:
                    stop = True
                    break
                batch.append(more)
                size += len(more)
            self._taken(size)
            if self._fd >= 0:
                self._write_file(batch)
            else:
                self._write_stream(batch[0])
            del batch
            if stop:
                return

    def _write_stream(self, line: str) -> None:
        assert self._stream is not None
        try:
            self._stream.write(line)
            self._stream.write("\n")
            if self._queue.empty():
                self._stream.flush()
        except (OSError, ValueError) as exc:
            # A full disk must not stop decisions.
            self._failed(1, exc)
            return
        self.written += 1
        self._succeeded()

    def _write_file(self, lines: list[str]) -> None:
        try:
            if self._watch_path:
                self._reopen_if_moved()
        except OSError as exc:
            self._failed(len(lines), exc)
            return
        prefix = b"\n" if self._torn else b""
        parts = [line.encode("utf-8", "backslashreplace") + b"\n" for line in lines]
        data = prefix + b"".join(parts)
        sent, error = self._write_all(data)
        del data
        if sent < len(prefix):
            self._failed(len(lines), error)
            return
        self._torn = False
        sent -= len(prefix)
        whole = 0
        for part in parts:
            if sent >= len(part):
                sent -= len(part)
                whole += 1
            else:
                # Part of this line reached the file: the next write ends it first.
                self._torn = sent > 0
                break
        self.written += whole
        if error is not None:
            self._failed(len(lines) - whole, error)
        else:
            self._succeeded()

    def _write_all(self, data: bytes) -> tuple[int, OSError | None]:
        """(bytes written, the error that stopped it, if one did)."""
        view = memoryview(data)
        sent = 0
        try:
            while sent < len(data):
                sent += os.write(self._fd, view[sent:])
        except OSError as exc:
            return sent, exc
        finally:
            view.release()
        return sent, None

    def _reopen_if_moved(self) -> None:
        """Open the path again when it no longer names the open file (rotated or deleted);
        checked at most every REOPEN_CHECK_SECONDS. OSError when it cannot be opened."""
        now = time.monotonic()
        if now - self._checked_at < REOPEN_CHECK_SECONDS:
            return
        self._checked_at = now
        try:
            on_disk = os.stat(self.target)
            current = os.fstat(self._fd)
            if (on_disk.st_dev, on_disk.st_ino) == (current.st_dev, current.st_ino):
                return
        except FileNotFoundError:
            pass
        fd, torn = _open_append(self.target)
        old, self._fd, self._torn = self._fd, fd, torn
        with contextlib.suppress(OSError):
            os.close(old)
        log.info("decision log %s: the file was moved or deleted; writing to a new one",
                 self.target)

    # ---- reports ---------------------------------------------------------------------------

    def _failed(self, lines: int, exc: BaseException | None) -> None:
        self._drop(lines)
        self._lost += lines
        self._failing = True
        now = time.monotonic()
        if self._error_at is None or now - self._error_at >= REPORT_SECONDS:
            log.error("decision log %s: %s; %d line(s) dropped (reported again at most every "
                      "%gs while it lasts)", self.target, exc, self._lost, REPORT_SECONDS)
            self._lost, self._error_at = 0, now

    def _succeeded(self) -> None:
        if not self._failing:
            return
        self._failing = False
        now = time.monotonic()
        if self._recovered_at is None or now - self._recovered_at >= REPORT_SECONDS:
            log.warning("decision log %s: writing again; %d line(s) dropped since the last "
                        "report", self.target, self._lost)
            self._lost, self._recovered_at = 0, now

    def close(self, timeout: float = 5.0) -> None:
        """Write what is queued (within `timeout`), then close the file."""
        try:
            self._queue.put(_STOP, timeout=timeout)
        except queue.Full:
            return
        self._thread.join(timeout)
        if self._lost:
            log.warning("decision log %s: %d line(s) dropped since the last report",
                        self.target, self._lost)
            self._lost = 0
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = -1
        elif self._stream is not None:
            with contextlib.suppress(OSError, ValueError):
                self._stream.flush()


def record_line(envelope: dict[str, Any], record: bytes) -> str:
    """The envelope's fields followed by the worker's record ({"request", "response" or
    "status"}, already line-safe) spliced in as text: the server never parses or re-encodes a
    large request."""
    head = line_safe(json.dumps(envelope, separators=(",", ":"), ensure_ascii=False))
    body = record.decode("utf-8") if record else "{}"
    if body == "{}":
        return head
    return head[:-1] + "," + body[1:]
