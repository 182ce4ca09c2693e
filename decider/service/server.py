"""The gRPC adapter: health, reflection, TLS, graceful drain, and decisions on worker processes.

The event loop only moves bytes: each Decider RPC's request goes, still serialized, to a decision
worker (decider/service/pool.py), and the worker's serialized answer (or its status and message)
comes back. So no request can hold up another or the health service, every core decides, and a
request's time is bounded by the caller's deadline and by --max-decision-seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import grpc
from grpc_health.v1 import _async as health_async
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import _async as reflection_async
from grpc_reflection.v1alpha import reflection, reflection_pb2_grpc

import decider_telemetry as otel
from decider.contract.limits import Limits
from decider.service import decoded_services, ended_calls
from decider.service.dispatch import DEADLINE_EXCEEDED, METHODS, OK, RESOURCE_EXHAUSTED, Reply
from decider.service.memory import Trimmer
from decider.service.pool import DEFAULT_KILL_GRACE_SECONDS, Busy, Overrun, WorkerLost, WorkerPool
from decider.service.rpc_telemetry import RpcTelemetry
from decider.service.tls_files import TLSFiles
from decider.telemetry.decision_log import DecisionLog
from decider_api.v1 import decider_pb2 as pb

log = logging.getLogger("decider.server")

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["Decider"].full_name
HEALTH_SERVICE_NAME = health_pb2.DESCRIPTOR.services_by_name["Health"].full_name
DEFAULT_MAX_MESSAGE_BYTES = Limits().max_message_bytes
DEFAULT_GRACE_SECONDS = 10.0
DEFAULT_DRAIN_DELAY_SECONDS = 5.0
DEFAULT_MAX_DECISION_SECONDS = 10.0
DEFAULT_MAX_PENDING = 1024
# Request bytes the server holds at once, received and waiting for a worker or with one
# (docs/serving.md, "Limits"): four of the largest requests (--max-message-bytes' 64 MiB),
# thousands of real ones (the shim's Decide for a JobSet of 1,000 running Jobs is 0.25 MiB), and
# well inside a pod's memory limit.
DEFAULT_MAX_INFLIGHT_BYTES = 256 * 1024 * 1024
DEFAULT_MAX_CONNECTION_AGE_SECONDS = 300.0
_STATUS = {code.value[0]: code for code in grpc.StatusCode}


def new_event_loop() -> asyncio.AbstractEventLoop:
    """uvloop's event loop: gRPC's per-RPC work on the loop costs ~20% less CPU than on
    asyncio's (bench: the empty RPC), and this loop does nothing else."""
    import uvloop

    return uvloop.new_event_loop()


def available_cpus() -> int:
    """The cores this process may use: its CPU affinity, capped by a cgroup v2 CPU quota (a
    container's `resources.limits.cpu`), which os.cpu_count() does not see."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    try:
        with open("/sys/fs/cgroup/cpu.max") as f:
            quota, period = f.read().split()[:2]
        if quota != "max":
            cpus = min(cpus, max(1, math.ceil(int(quota) / int(period))))
    except (OSError, ValueError):
        pass
    return max(1, cpus)


class FrontEnd(Protocol):
    """Another way into the same workers, started and stopped with the gRPC server."""

    port: int

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


class FrontEndConfig(Protocol):
    def front_end(self, pool: WorkerPool, max_decision_seconds: float) -> FrontEnd: ...


@dataclass(frozen=True)
class ServerConfig:
    address: str = "127.0.0.1:50051"
    limits: Limits = field(default_factory=Limits)
    workers: int = 0  # 0: one per available core
    max_decision_seconds: float = DEFAULT_MAX_DECISION_SECONDS
    # A request whose caller no longer waits may finish this long before its worker is killed.
    kill_grace: float = DEFAULT_KILL_GRACE_SECONDS
    max_pending: int = DEFAULT_MAX_PENDING
    max_inflight_bytes: int = DEFAULT_MAX_INFLIGHT_BYTES
    max_worker_memory_mb: int = 0
    tls: TLSFiles | None = None
    reflection: bool = True
    drain_delay: float = DEFAULT_DRAIN_DELAY_SECONDS
    grace: float = DEFAULT_GRACE_SECONDS
    # A file (or "-", standard output) for one JSON line per decision; empty: no log.
    decision_log: str = ""
    # Set: also serve the admission webhook from this process's workers: a config whose
    # front_end(pool, max_decision_seconds) makes it (decider/webhook/server.py's WebhookConfig;
    # given rather than imported, so serving gRPC does not depend on the webhook's HTTP stack).
    webhook: FrontEndConfig | None = None
    # Clients are sent away (GOAWAY, calls in flight finish) after this long, so a client
    # balancing over a headless Service resolves it again and finds new replicas. 0: never.
    max_connection_age: float = DEFAULT_MAX_CONNECTION_AGE_SECONDS

    @property
    def worker_count(self) -> int:
        return self.workers or available_cpus()


def server_options(max_message_bytes: int, max_connection_age: float = 0.0,
                   max_decision_seconds: float = DEFAULT_MAX_DECISION_SECONDS
                   ) -> list[tuple[str, Any]]:
    # Port sharing is on by default in grpcio: a second server would silently bind the same port.
    options: list[tuple[str, Any]] = [("grpc.so_reuseport", 0),
                                      ("grpc.max_receive_message_length", max_message_bytes),
                                      ("grpc.max_send_message_length", max_message_bytes)]
    if max_connection_age > 0:
        options.append(("grpc.max_connection_age_ms", int(max_connection_age * 1000)))
        # Then the connection is closed once no call on it can still be running. It also ends
        # the calls grpc.aio never answers: a unary call whose client half-closes without
        # sending its message is never handed to a method, and hung until the connection went.
        options.append(("grpc.max_connection_age_grace_ms",
                        int(min((max_decision_seconds + 1) * 1000, 2**31 - 1))))
    return options


# RESOURCE_EXHAUSTED is both "the input is too large" (the worker's answer) and "the server is
# shedding load" (here). The second carries gRPC's retry pushback (the retry design's trailer,
# honoured by a client's retry policy), so a client can tell a request worth sending again
# later from one that never fits: a worker frees up in milliseconds (pool.Busy says how long for
# a full queue and for the bytes budget); a lost one's place is taken by a spare whose own
# replacement takes ~0.4 s.
PUSHBACK = "grpc-retry-pushback-ms"
LOST_PUSHBACK_MS = 500
# A flood of requests past --max-pending logged a warning each (hundreds a second).
BUSY_REPORT_SECONDS = 10.0


class _Occasional:
    """A warning that repeats is logged once, then at most once per interval with how many
    times it happened meanwhile."""

    def __init__(self, interval: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.interval = interval
        self._clock = clock
        self._last = -math.inf
        self._since = 0

    def report(self, message: str) -> None:
        now = self._clock()
        if now - self._last < self.interval:
            self._since += 1
            return
        more = f" ({self._since:,} more like it in the last {now - self._last:.0f}s)" \
            if self._since else ""
        log.warning("%s%s", message, more)
        self._last, self._since = now, 0


class DeciderService:
    """The Decider RPCs, each a pass-through of serialized bytes to a worker."""

    def __init__(self, pool: WorkerPool, config: ServerConfig, observe: RpcTelemetry,
                 trimmer: Trimmer | None = None) -> None:
        self.pool = pool
        self.config = config
        self.observe = observe
        self.trimmer = trimmer
        self._busy = _Occasional(BUSY_REPORT_SECONDS)

    def handler(self) -> grpc.GenericRpcHandler:
        # No (de)serializers: bytes in, bytes out. The worker parses, so a request that is not
        # valid protobuf is INVALID_ARGUMENT there rather than UNKNOWN here.
        return grpc.method_handlers_generic_handler(SERVICE_NAME, {
            name: grpc.unary_unary_rpc_method_handler(self._bind(name)) for name in METHODS})

    def _bind(self, method: str) -> Callable[[bytes, grpc.aio.ServicerContext], Any]:
        async def rpc(payload: bytes, context: grpc.aio.ServicerContext) -> bytes:
            # Handed over in a box that answer() empties, so that no frame of this call keeps
            # the request once it is answered (see answer()).
            held = [payload]
            del payload
            return await self.answer(method, held, context)
        return rpc

    async def answer(self, method: str, held: list[bytes],
                     context: grpc.aio.ServicerContext) -> bytes:
        """held: the request's bytes, taken out of the list."""
        payload = held.pop()
        size = len(payload)
        call = self.observe.start(method, context)
        try:
            code, message, reply = await self._decide(method, payload, context, call.want)
        finally:
            if self.trimmer is not None:
                self.trimmer.released(size)
        self.observe.finish(call, code, message, reply, payload)
        if code != OK:
            # context.abort raises, and gRPC keeps the exception on the call's state, which
            # this frame's context refers to: a cycle, freed only by a full garbage collection,
            # which a process making few objects runs rarely. The request and the worker's
            # record (a copy of the request as JSON) must not be in it: sixteen refused 60 MiB
            # requests kept 1 GB for as long (F14).
            del payload, reply
            await ended_calls.abort(context, _STATUS.get(code, grpc.StatusCode.INTERNAL), message)
        assert reply is not None
        return reply.body

    async def _decide(self, method: str, payload: bytes, context: grpc.aio.ServicerContext,
                      want: int) -> tuple[int, str, Reply | None]:
        """(status code, message, the worker's reply if there was one). want: what to ask
        the worker for beside the answer (dispatch.WANT_*)."""
        cap = self.config.max_decision_seconds
        remaining = context.time_remaining()
        client_bound = remaining is not None and remaining < cap
        budget = remaining if client_bound else cap
        try:
            job = self.pool.submit(method, payload, max(budget, 0.0), want)
        except Busy as exc:
            self._busy.report(f"{method}: {exc}")
            context.set_trailing_metadata(((PUSHBACK, str(exc.pushback_ms)),))
            return RESOURCE_EXHAUSTED, f"{method}: {exc}", None
        del payload  # the pool's now; see WorkerPool.wait
        try:
            reply = await self.pool.wait(job)
        except Overrun as exc:
            return DEADLINE_EXCEEDED, self._overrun_message(method, exc, client_bound), None
        except WorkerLost as exc:
            log.warning("%s: %s", method, exc)
            context.set_trailing_metadata(((PUSHBACK, str(LOST_PUSHBACK_MS)),))
            return RESOURCE_EXHAUSTED, f"{method}: {exc}", None
        finally:
            # The job's future holds the exception, whose traceback holds this frame.
            del job
        return reply.code, reply.message if reply.code != OK else "", reply

    def _overrun_message(self, method: str, exc: Overrun, client_bound: bool) -> str:
        if client_bound:
            return (f"{method}: the client's deadline passed after {exc.seconds:.3f}s"
                    + ("; the decision's answer is dropped" if exc.ran
                       else ", before a worker was free"))
        if not exc.ran:
            return (f"{method}: no decision worker became free within --max-decision-seconds="
                    f"{self.config.max_decision_seconds:g} ({self.pool.busy} busy)")
        log.warning("%s: stopped after %.3fs (--max-decision-seconds=%g)", method, exc.seconds,
                    self.config.max_decision_seconds)
        return (f"{method}: the decision did not finish within --max-decision-seconds="
                f"{self.config.max_decision_seconds:g}, the server's limit on work per request; "
                "it was stopped")


@dataclass
class Running:
    server: grpc.aio.Server
    port: int
    health: health_async.HealthServicer
    pool: WorkerPool
    telemetry: otel.Telemetry
    decision_log: DecisionLog | None = None
    webhook: FrontEnd | None = None
    trimmer: Trimmer | None = None

    async def stop(self, grace: float | None) -> None:
        await self.server.stop(grace)
        if self.webhook is not None:
            await self.webhook.stop()
        await self.pool.close()
        self.close_outputs()

    def close_outputs(self) -> None:
        if self.trimmer is not None:
            self.trimmer.close()
        if self.decision_log is not None:
            self.decision_log.close()
            self.decision_log = None
        self.telemetry.shutdown()


async def start(config: ServerConfig, telemetry: otel.Telemetry | None = None) -> Running:
    """Bind, start the workers, then serve; returns once both take requests."""
    telemetry = telemetry or otel.disabled()
    ended_calls.quiet_ended_calls()
    pool = WorkerPool(config.worker_count, config.limits, max_memory_mb=config.max_worker_memory_mb,
                      max_pending=config.max_pending, max_seconds=config.max_decision_seconds,
                      kill_grace=config.kill_grace, max_bytes=config.max_inflight_bytes)
    trimmer = Trimmer()
    decision_log = DecisionLog(config.decision_log) if config.decision_log else None
    server = grpc.aio.server(options=server_options(config.limits.max_message_bytes,
                                                    config.max_connection_age,
                                                    config.max_decision_seconds))
    observe = RpcTelemetry(telemetry, pool, decision_log)
    server.add_generic_rpc_handlers((DeciderService(pool, config, observe, trimmer).handler(),))
    # The asynchronous health servicer: the synchronous one fails every Check in an aio server
    # under an interceptor (pitfalls.md). Health and reflection get no spans: probes every few
    # seconds would bury the decisions.
    # Both registered through decoded_services: a request they cannot decode is the client's
    # INVALID_ARGUMENT, not UNKNOWN with an ERROR traceback in this server's log.
    guarded = decoded_services.Registrar(server)
    health_servicer = health_async.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, guarded)
    if config.reflection:
        # What reflection.enable_server_reflection does for an aio server, on the guard.
        reflection_pb2_grpc.add_ServerReflectionServicer_to_server(
            reflection_async.ReflectionServicer(
                (SERVICE_NAME, HEALTH_SERVICE_NAME, reflection.SERVICE_NAME)), guarded)
    # Bound before the workers start, so a taken port fails at once.
    if config.tls is not None:
        port = server.add_secure_port(config.address, config.tls.credentials())
    else:
        port = server.add_insecure_port(config.address)
    if port == 0:
        raise OSError(f"cannot bind {config.address}")
    await pool.start()
    running = Running(server, port, health_servicer, pool, telemetry, decision_log,
                      trimmer=trimmer)
    try:
        if config.webhook is not None:
            running.webhook = config.webhook.front_end(pool, config.max_decision_seconds)
            await running.webhook.start()
        await server.start()
        for name in ("", SERVICE_NAME):
            await health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    except BaseException:
        await running.stop(None)
        raise
    return running


async def drain(running: Running, config: ServerConfig, force: asyncio.Event) -> None:
    """Health NOT_SERVING at once; keep serving for drain_delay so load balancers notice; then
    stop accepting and give in-flight RPCs `grace` to finish. `force` cuts both short."""
    await running.health.enter_graceful_shutdown()
    log.info("draining: NOT_SERVING; accepting for %gs more, then %gs for RPCs in flight "
             "(signal again to stop now)", config.drain_delay, config.grace)
    if config.drain_delay > 0:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(force.wait(), config.drain_delay)
    stopping = asyncio.ensure_future(running.server.stop(0 if force.is_set() else config.grace))
    forced = asyncio.ensure_future(force.wait())
    await asyncio.wait((stopping, forced), return_when=asyncio.FIRST_COMPLETED)
    if not stopping.done():
        await running.server.stop(0)
        await stopping
    forced.cancel()
    if running.webhook is not None:
        await running.webhook.stop()
    await running.pool.close()
    running.close_outputs()


async def serve(config: ServerConfig, on_ready: Callable[[int], None] | None = None, *,
                telemetry: otel.Telemetry | None = None) -> None:
    """Serve until SIGTERM/SIGINT, then drain (a second signal stops at once)."""
    running = await start(config, telemetry)
    if on_ready:
        on_ready(running.port)
    stop, force = asyncio.Event(), asyncio.Event()

    def on_signal() -> None:
        (force if stop.is_set() else stop).set()

    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, on_signal)
    await stop.wait()
    await drain(running, config, force)


class BackgroundServer:
    """A real decider server on its own event loop in a thread, for tests and benchmarks."""

    def __init__(self, address: str = "127.0.0.1:0", *,
                 max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
                 telemetry: otel.Telemetry | None = None, workers: int = 1,
                 **config: Any) -> None:
        limits = config.pop("limits", Limits(max_message_bytes=max_message_bytes))
        self.config = ServerConfig(address=address, limits=limits, workers=workers, **config)
        self._telemetry = telemetry
        self._loop = new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True,
                                        name="decider-server")
        self._running: Running | None = None
        self.port = 0

    @property
    def target(self) -> str:
        host = self.config.address.rsplit(":", 1)[0]
        return f"{host}:{self.port}"

    @property
    def webhook_port(self) -> int:
        assert self._running is not None and self._running.webhook is not None
        return int(self._running.webhook.port)

    @property
    def pool(self) -> WorkerPool:
        assert self._running is not None
        return self._running.pool

    def start(self) -> BackgroundServer:
        self._thread.start()
        fut = asyncio.run_coroutine_threadsafe(start(self.config, self._telemetry), self._loop)
        self._running = fut.result(timeout=60)
        self.port = self._running.port
        return self

    def call(self, coro: Any, timeout: float = 60) -> Any:
        """Run a coroutine on the server's loop (e.g. a drain) and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def stop(self, grace: float | None = None) -> None:
        if self._running is not None:
            self.call(self._running.stop(grace))
            self._running = None
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)

    def __enter__(self) -> BackgroundServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
