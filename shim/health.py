"""`--healthz-port`: the shim's liveness and readiness over plain HTTP, for the kubelet.

- `/healthz` (liveness): the process answers and every informer's reflector still runs. A
  reflector retries whatever the API server does, so one that ended means the shim is broken
  and a restart is the cure.
- `/readyz` (readiness): every cache has synced and, on the leader, the decider answers its
  gRPC health check: a leader that cannot reach a decider acts on nothing. A standby is ready
  once its caches are warm, so a rollout waits for that before it stops the old leader.

The decider's answer is kept for a few seconds: probes from the kubelet (and anyone else) do not
turn into a stream of health RPCs.

The port is served from an event loop (aiohttp, in a thread of its own), not a thread per
connection: 1,000 connections left open cost 1,000 threads before. A connection idle for
`idle_timeout` seconds (no request yet, or none since the last answer) is closed, so idle
ones cannot pile up; the checks run on two threads of their own. It listens on `--host`
only (every address, IPv6 as well as IPv4, by default).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from aiohttp import web

from decider_api.listen import listening_socket

log = logging.getLogger(__name__)

DECIDER_CHECK_CACHE_SECONDS = 5.0
# A probe opens a connection, asks, and reads the answer within a second; one quiet this long is
# nobody's probe.
IDLE_TIMEOUT = 10.0
# Threads the checks run on: a readiness check may wait on the decider (the kubelet's probe
# times out after 1 s by default; the answer is cached), and a liveness check never waits.
CHECK_THREADS = 2


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


class HealthServer:
    """The two endpoints on a port of their own, served by an event loop in a daemon thread."""

    def __init__(self, health: Health, port: int, host: str = "0.0.0.0",
                 idle_timeout: float = IDLE_TIMEOUT) -> None:
        self._checks = {"/healthz": health.liveness, "/livez": health.liveness,
                        "/readyz": health.readiness}
        self._sock = listening_socket(host, port)
        self._sock.listen(128)
        self._sock.setblocking(False)
        self.port = self._sock.getsockname()[1]
        self._pool = ThreadPoolExecutor(CHECK_THREADS, thread_name_prefix="shim-health-check")
        self._loop = asyncio.new_event_loop()
        app = web.Application()
        app.router.add_get("/{path:.*}", self._answer)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False,
                                     keepalive_timeout=idle_timeout)
        self._thread = threading.Thread(target=self._loop.run_forever, name="shim-health",
                                        daemon=True)

    async def _answer(self, request: web.Request) -> web.Response:
        check = self._checks.get(request.path)
        if check is None:
            return web.Response(status=404, text="not found: /healthz, /readyz\n")
        why = await asyncio.get_running_loop().run_in_executor(self._pool, check)
        return web.Response(status=503 if why else 200, text=(why or "ok") + "\n")

    async def _start(self) -> None:
        await self._runner.setup()
        await web.SockSite(self._runner, self._sock).start()

    def start(self) -> HealthServer:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def stop(self) -> None:
        if self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
        self._loop.close()
        self._sock.close()
        self._pool.shutdown(wait=False)
