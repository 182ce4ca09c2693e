"""The events of one watch request, read line by line as the API server streams them.

Apart from the client (kube.py) because the stream outlives the request that opened it: an
informer's thread reads it while another thread may close it to end the watch.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator
from typing import Any

from kubernetes.watch.watch import iter_resp_lines

from shim import kube_json


class WatchStream:
    """The events of one watch request; `close()` from another thread unblocks the reader."""

    def __init__(self, response: Any) -> None:
        self._resp = response
        self._closed = False

    def __iter__(self) -> Iterator[dict[str, Any]]:
        try:
            for line in iter_resp_lines(self._resp):
                if not line:
                    continue
                yield kube_json.loads(line)
        except Exception:
            if self._closed:
                return
            raise
        finally:
            self._release()

    def _release(self) -> None:
        try:
            self._resp.close()
            self._resp.release_conn()
        except Exception:  # noqa: BLE001 - nothing left to do with a dead connection
            pass

    def close(self) -> None:
        self._closed = True
        conn = getattr(self._resp, "connection", None)
        sock = getattr(conn, "sock", None) if conn is not None else None
        if sock is not None:
            # Shutting the socket down wakes a reader blocked in recv; close() alone may not.
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
