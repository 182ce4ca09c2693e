"""The metrics port: `GET /metrics` for Prometheus, from an OpenTelemetry Prometheus reader.

prometheus_client's own server (start_http_server) listens where it is told, but serves each
connection on a thread of its own for as long as the client keeps it open: 1,000 idle
connections held 1,000 threads, forever. Here one thread runs an event loop (aiohttp's server,
which the webhook uses too), so connections cost no thread, and a connection idle for
IDLE_SECONDS (one that never sends a request included) is closed. The port listens on the
address it is given: a specific one alone, or for a wildcard every address, IPv6 as well as
IPv4 (decider_api.listen).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

from decider_api.listen import listening_socket

log = logging.getLogger("decider.telemetry.scrape")

# Longer than Prometheus' default scrape interval (1 min), so a scraper keeps its connection.
IDLE_SECONDS = 75.0
PATHS = ("/metrics", "/")


class MetricsEndpoint:
    """A registry's metrics over HTTP on one daemon thread. Bound when made (a taken port is
    an OSError then), served once started."""

    def __init__(self, registry: Any, port: int, host: str = "",
                 idle_seconds: float = IDLE_SECONDS) -> None:
        self.registry = registry
        self.idle_seconds = idle_seconds
        self._sock = listening_socket(host, port)
        self.port: int = self._sock.getsockname()[1]
        self._loop = asyncio.new_event_loop()
        self._runner: Any = None
        self._thread = threading.Thread(target=self._loop.run_forever, name="metrics-port",
                                        daemon=True)

    def start(self) -> MetricsEndpoint:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._serve(), self._loop).result()
        return self

    async def _serve(self) -> None:
        from aiohttp import web

        app = web.Application()
        for path in PATHS:
            app.router.add_get(path, self._metrics)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False,
                                     keepalive_timeout=self.idle_seconds)
        await self._runner.setup()
        await web.SockSite(self._runner, self._sock).start()

    async def _metrics(self, request: Any) -> Any:
        from aiohttp import web
        from prometheus_client.exposition import choose_encoder

        encode, content_type = choose_encoder(request.headers.get("Accept", ""))
        response = web.Response(body=encode(self.registry),
                                headers={"Content-Type": content_type})
        if "gzip" in request.headers.get("Accept-Encoding", ""):
            response.enable_compression()
        return response

    def stop(self, timeout: float = 5.0) -> None:
        if self._thread.is_alive():
            if self._runner is not None:
                done = asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop)
                try:
                    done.result(timeout)
                except Exception as exc:  # noqa: BLE001 - stopping; nothing else to do
                    log.debug("metrics port: %s", exc)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout)
        if not self._thread.is_alive() and not self._loop.is_closed():
            self._loop.close()
        self._sock.close()
