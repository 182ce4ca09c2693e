"""The admission webhook: HTTPS AdmissionReview beside the gRPC server, in the same process.

The API server posts a review to upstream JobSet's paths; the handler only moves bytes: the body
goes, unparsed, to a decision worker of the server's pool (decider.service.dispatch's AdmitMutate
and AdmitValidate, which decide through the Validate method), and the worker's answer comes back as
it is. So a large review never stalls the event loop that also answers gRPC and health.

Bounded like an RPC: a body over --webhook-max-body-bytes is 413, a body that does not arrive
within the time allowed is 408, and the decision gets the API server's own `?timeout=` (the
webhook configuration's timeoutSeconds), at most --max-decision-seconds. A body that is not an
AdmissionReview is 400 with a metav1.Status naming the problem, never a traceback.

Certificates are read from files and read again when they change (cert-manager renews the
Secret the files are mounted from): new connections get the new certificate.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from aiohttp import http_exceptions, web

from decider.contract import admission_review as ar
from decider.service.dispatch import INVALID_ARGUMENT, OK, RESOURCE_EXHAUSTED
from decider.service.pool import Busy, Overrun, WorkerLost, WorkerPool
from decider_api.listen import is_wildcard, listening_socket

log = logging.getLogger("decider.webhook")

# An update's review holds the object twice (kube-apiserver takes at most 3 MiB of body per
# object), plus the review's own fields.
DEFAULT_MAX_BODY_BYTES = 7 * 1024 * 1024
# The API server's default timeoutSeconds for a webhook is 10, its maximum 30.
DEFAULT_TIMEOUT_SECONDS = 10.0
CERT_CHECK_SECONDS = 30.0
_GO_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m)")


class _MalformedHttpFilter(logging.Filter):
    """aiohttp logs a request it cannot parse (a bad Content-Length, a header line over its
    limit) at ERROR with a traceback, after answering it 400: anyone who can reach the port
    could fill the log with pages. It is the client's fault, so it becomes one INFO line, as
    a refused RPC is."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if not isinstance(exc, http_exceptions.HttpProcessingError):
            return True
        peer = record.args[0] if isinstance(record.args, tuple) and record.args else "?"
        reason = " ".join(str(exc.message).split())[:200]
        log.info("malformed HTTP from %s refused (%s): %s", peer, exc.code, reason)
        return False


_MALFORMED = _MalformedHttpFilter()


@dataclass(frozen=True)
class WebhookConfig:
    port: int
    cert_file: str
    key_file: str
    host: str = "0.0.0.0"
    # Gates admission decides with (a JobSet using RestartJob actions is refused without it).
    feature_gates: Mapping[str, bool] = field(default_factory=dict)
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS

    def front_end(self, pool: WorkerPool, max_decision_seconds: float) -> Webhook:
        """The webhook the gRPC server starts beside itself (server.FrontEnd), on its pool."""
        return Webhook(pool, self, max_decision_seconds)


def tls_context(cert_file: str, key_file: str) -> ssl.SSLContext:
    """The server's TLS; ssl.SSLError or OSError names a file that cannot be used."""
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(cert_file, key_file)
    return ctx


def request_timeout(query: str, cap: float) -> float:
    """The API server's `?timeout=10s` (a Go duration), at most `cap`."""
    match = _GO_DURATION.fullmatch(query or "")
    if not match:
        return cap
    value, unit = float(match.group(1)), match.group(2)
    seconds = value / 1000 if unit == "ms" else value * 60 if unit == "m" else value
    return min(seconds, cap) if seconds > 0 else cap


def _status(code: int, reason: str, message: str) -> web.Response:
    return web.json_response(ar.status_body(code, reason, message), status=code)


@web.middleware
async def _errors_as_status(request: web.Request, handler: Any) -> web.StreamResponse:
    # aiohttp's own answers (404, 405) in the same metav1.Status shape as ours.
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return _status(exc.status, exc.reason.replace(" ", ""),
                       f"{request.method} {request.path}: {exc.reason}; this webhook serves "
                       f"POST {ar.MUTATE_PATH} and POST {ar.VALIDATE_PATH}")


class Webhook:
    def __init__(self, pool: WorkerPool, config: WebhookConfig,
                 max_decision_seconds: float) -> None:
        self.pool = pool
        self.config = config
        self.max_decision_seconds = max_decision_seconds
        self.tls = tls_context(config.cert_file, config.key_file)
        self._cert_stamp = self._stamp()
        self._runner: web.AppRunner | None = None
        self._watch: asyncio.Task[None] | None = None
        self.port = 0

    def app(self) -> web.Application:
        app = web.Application(client_max_size=self.config.max_body_bytes,
                              middlewares=[_errors_as_status])
        app.router.add_post(ar.MUTATE_PATH, self._mutate)
        app.router.add_post(ar.VALIDATE_PATH, self._validate)
        return app

    async def start(self) -> int:
        aiohttp_log = logging.getLogger("aiohttp.server")
        if _MALFORMED not in aiohttp_log.filters:
            aiohttp_log.addFilter(_MALFORMED)
        self._runner = web.AppRunner(self.app(), access_log=None, handle_signals=False)
        await self._runner.setup()
        try:
            if is_wildcard(self.config.host):
                # One socket for every address, IPv6 and IPv4 (as the gRPC port listens): the
                # API server may call from either, and port 0 must be one port, not one each.
                sock = listening_socket(self.config.host, self.config.port)
                site: web.BaseSite = web.SockSite(self._runner, sock, ssl_context=self.tls)
                self.port = sock.getsockname()[1]
            else:
                site = web.TCPSite(self._runner, self.config.host, self.config.port,
                                   ssl_context=self.tls, reuse_port=False)
            await site.start()
        except OSError as exc:
            await self._runner.cleanup()
            raise OSError(f"--webhook-port: cannot bind {self.config.host}:"
                          f"{self.config.port}: {exc.strerror or exc}") from None
        if not is_wildcard(self.config.host):
            self.port = site.port  # type: ignore[attr-defined]
        self._watch = asyncio.ensure_future(self._watch_certificates())
        return self.port

    async def stop(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watch
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    # ---- certificates ---------------------------------------------------------------------

    def _stamp(self) -> tuple[float, ...]:
        try:
            return tuple(os.stat(p).st_mtime for p in (self.config.cert_file,
                                                       self.config.key_file))
        except OSError:
            return ()

    async def _watch_certificates(self) -> None:
        while True:
            await asyncio.sleep(CERT_CHECK_SECONDS)
            self.reload_if_changed()

    def reload_if_changed(self) -> bool:
        stamp = self._stamp()
        if not stamp or stamp == self._cert_stamp:
            return False
        try:
            self.tls.load_cert_chain(self.config.cert_file, self.config.key_file)
        except (OSError, ssl.SSLError) as exc:
            # A half-written pair (certificate renewed, key not yet): try again next time.
            log.warning("webhook certificate changed but cannot be loaded yet: %s", exc)
            return False
        self._cert_stamp = stamp
        log.info("webhook certificate reloaded from %s", self.config.cert_file)
        return True

    # ---- requests -------------------------------------------------------------------------

    async def _mutate(self, request: web.Request) -> web.StreamResponse:
        return await self._admit(request, "AdmitMutate")

    async def _validate(self, request: web.Request) -> web.StreamResponse:
        return await self._admit(request, "AdmitValidate")

    async def _admit(self, request: web.Request, method: str) -> web.StreamResponse:
        if request.content_type != "application/json":
            return _status(415, "UnsupportedMediaType",
                           f"Content-Type must be application/json, got {request.content_type!r}")
        budget = request_timeout(request.query.get("timeout", ""),
                                 min(self.config.timeout_seconds, self.max_decision_seconds))
        loop = asyncio.get_running_loop()
        started = loop.time()
        try:
            body = await asyncio.wait_for(request.read(), budget)
        except web.HTTPRequestEntityTooLarge:
            return _status(413, "RequestEntityTooLarge",
                           f"the body is over --webhook-max-body-bytes="
                           f"{self.config.max_body_bytes}")
        except TimeoutError:
            return _status(408, "Timeout", f"the body did not arrive within {budget:g}s")
        except ConnectionError as exc:
            # The client left mid-body (aiohttp: "Connection lost"). Its fault, and nobody is
            # there to read an answer: one INFO line, as a refused RPC, not aiohttp's ERROR and
            # traceback per disconnect, which any client could use to fill the log.
            log.info("%s from %s: the client left before its body arrived (%s)", method,
                     request.remote, exc)
            return _status(400, "BadRequest", "the connection was lost before the body arrived")
        left = budget - (loop.time() - started)
        payload = ar.payload(dict(self.config.feature_gates), body)
        try:
            reply = await self.pool.run(method, payload, max(left, 0.0))
        except Overrun as exc:
            return _status(504, "Timeout", f"admission did not finish within {budget:g}s "
                                           f"({'stopped' if exc.ran else 'no worker was free'})")
        except (WorkerLost, Busy) as exc:
            log.warning("%s: %s", method, exc)
            return _status(503, "ServiceUnavailable", f"admission could not run: {exc}")
        if reply.code == OK:
            return web.Response(body=reply.body, content_type="application/json")
        if reply.code == INVALID_ARGUMENT:
            return _status(400, "BadRequest", reply.message)
        if reply.code == RESOURCE_EXHAUSTED:
            return _status(413, "RequestEntityTooLarge", reply.message)
        return _status(500, "InternalError", reply.message)
