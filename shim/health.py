"""`--healthz-port`: the shim's liveness and readiness over plain HTTP, for the kubelet.

- `/healthz` (liveness): the process answers and every informer's reflector still runs. A
  reflector retries whatever the API server does, so one that ended means the shim is broken
  and a restart is the cure.
- `/readyz` (readiness): every cache has synced and, on the leader, the decider answers its
  gRPC health check: a leader that cannot reach a decider acts on nothing. A standby is ready
  once its caches are warm, so a rollout waits for that before it stops the old leader.

The decider's answer is kept for a few seconds: probes from the kubelet (and anyone else) do not
turn into a stream of health RPCs.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from decider_api.listen import bind_every_address

log = logging.getLogger(__name__)

DECIDER_CHECK_CACHE_SECONDS = 5.0


class Health:
    def __init__(self, shim: Any, decider_check: Callable[[], str],
                 cache_seconds: float = DECIDER_CHECK_CACHE_SECONDS) -> None:
        self.shim = shim
        self.decider_check = decider_check
        self.cache_seconds = cache_seconds
        self._last: tuple[float, str] | None = None
        self._lock = threading.Lock()

    def liveness(self) -> str:
        """"" when alive, else why not."""
        dead = [i.resource.plural for i in self.shim.informers if not i.alive]
        return f"informers stopped: {', '.join(dead)}" if dead else ""

    def readiness(self) -> str:
        """"" when ready, else why not."""
        if self.shim.stopping:
            return "shutting down"
        unsynced = [i.resource.plural for i in self.shim.informers if not i.synced]
        if unsynced:
            return f"caches not synced: {', '.join(unsynced)}"
        if self.shim.is_leader():
            return self._decider()
        return ""

    def _decider(self) -> str:
        now = time.monotonic()
        with self._lock:
            if self._last is not None and now - self._last[0] < self.cache_seconds:
                return self._last[1]
        why = self.decider_check()
        with self._lock:
            self._last = (time.monotonic(), why)
        return why


class _Server(ThreadingHTTPServer):
    """Listens on an IPv6 address when given one (and on IPv4 too for "::")."""

    def __init__(self, address: tuple[str, int], handler: Any) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, handler)

    def server_bind(self) -> None:
        if self.address_family == socket.AF_INET6:
            # Dual-stack whatever the node's net.ipv6.bindv6only says.
            self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        super().server_bind()


class HealthServer:
    """The two endpoints on a port of their own, in a daemon thread."""

    def __init__(self, health: Health, port: int, host: str = "0.0.0.0") -> None:
        checks = {"/healthz": health.liveness, "/livez": health.liveness,
                  "/readyz": health.readiness}

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - stdlib naming
                check = checks.get(self.path.split("?", 1)[0])
                if check is None:
                    self._answer(404, "not found: /healthz, /readyz")
                    return
                why = check()
                self._answer(503 if why else 200, why or "ok")

            def _answer(self, code: int, text: str) -> None:
                body = (text + "\n").encode()
                self.send_response(code)
                self.send_header("Content-Type", "text/plain; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        self._httpd = bind_every_address(lambda addr: _Server((addr, port), Handler), host)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="shim-health",
                                        daemon=True)

    def start(self) -> HealthServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
