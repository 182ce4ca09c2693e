"""The fake API server's watch responses: a chunked stream of events and bookmarks, or one of
the ways a real watch breaks (faults.WatchFault)."""

from __future__ import annotations

import contextlib
import socket
import struct
import time
from typing import Any

from .faults import WatchFault
from .resources import ResourceType
from .storage import event_line


class WatchStreaming:
    """Mixed into the request handler: `kube`, `wfile` and `connection` are the handler's."""

    kube: Any
    wfile: Any
    connection: socket.socket
    close_connection: bool

    # send_response, send_header and end_headers are BaseHTTPRequestHandler's (declaring
    # them here would shadow them: this class comes first in the handler's bases).

    def _stream_watch(
        self, rt: ResourceType, namespace: str | None, query: dict[str, str], path: str
    ) -> None:
        store = self.kube.store
        watcher = store.watch(
            rt,
            namespace,
            query.get("resourceVersion", ""),
            query.get("labelSelector", ""),
            query.get("fieldSelector", ""),
        )
        bookmarks = query.get("allowWatchBookmarks") in ("true", "1")
        timeout = float(query.get("timeoutSeconds") or 1800)
        deadline = time.monotonic() + timeout
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        next_bookmark = time.monotonic() + self.kube.bookmark_interval
        fault = self.kube._watch_fault_for(path)
        if fault is not None:
            try:
                self._break_watch(fault, watcher, timeout)
            finally:
                store.unwatch(watcher)
                self.close_connection = True
            return
        try:
            while not self.kube._stopping.is_set():
                now = time.monotonic()
                if now >= deadline:
                    break
                wait = min(deadline, next_bookmark) - now
                try:
                    line = watcher.events.get(timeout=max(wait, 0.0))
                except Exception:  # queue.Empty
                    line = b""
                if line is None:
                    break
                if not line:
                    if bookmarks and time.monotonic() >= next_bookmark:
                        self._chunk(store.bookmark_line(rt))
                        next_bookmark = time.monotonic() + self.kube.bookmark_interval
                    continue
                self._chunk(line)
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError, OSError):
            pass
        finally:
            store.unwatch(watcher)
            self.close_connection = True

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _break_watch(self, fault: WatchFault, watcher: Any, timeout: float) -> None:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError, OSError):
            if fault.mode == "close":
                self.wfile.write(b"0\r\n\r\n")
            elif fault.mode == "error":
                self._chunk(event_line("ERROR", fault.error_status()))
                self.wfile.write(b"0\r\n\r\n")
            elif fault.mode == "silent":
                # A half-dead connection: open, and nothing ever comes, not even its end.
                self.kube._stopping.wait(timeout + 3600)
            else:
                if fault.mode == "cut":
                    # Half of the next event: the chunk says its whole length, then the
                    # connection dies.
                    try:
                        line = watcher.events.get(timeout=timeout) or b""
                    except Exception:  # queue.Empty  # noqa: BLE001
                        line = b""
                    half = line[: max(len(line) // 2, 1)]
                    self.wfile.write(f"{len(line):x}\r\n".encode() + half)
                    self.wfile.flush()
                self._reset()

    def _reset(self) -> None:
        # SO_LINGER 0: close() sends RST, as a connection dropped by a proxy or a dead peer.
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()
