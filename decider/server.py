"""The gRPC adapter: proto <-> core, error mapping, health, reflection, graceful drain.

Anything the core rejects becomes INVALID_ARGUMENT with the field in the message; an unexpected
exception is still answered (INTERNAL would tell a caller nothing it can act on), but it is a bug
and is logged with its traceback.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
from collections.abc import Callable
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from decider import convert
from decider.core.errors import InvalidInput
from decider.v1 import decider_pb2 as pb
from decider.v1 import decider_pb2_grpc as pb_grpc

log = logging.getLogger("decider.server")

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["Decider"].full_name
DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024
DEFAULT_GRACE_SECONDS = 10.0


class DeciderServicer(pb_grpc.DeciderServicer):
    async def Decide(self, request: pb.DecideRequest,  # noqa: N802 (gRPC method name)
                     context: grpc.aio.ServicerContext) -> pb.DecideResponse:
        return await _answer(context, convert.decide_response, request)

    async def Validate(self, request: pb.ValidateRequest,  # noqa: N802
                       context: grpc.aio.ServicerContext) -> pb.ValidateResponse:
        return await _answer(context, convert.validate_response, request)

    async def PlanGang(self, request: pb.PlanGangRequest,  # noqa: N802
                       context: grpc.aio.ServicerContext) -> pb.PlanGangResponse:
        return await _answer(context, convert.plan_gang_response, request)

    async def PodSets(self, request: pb.PodSetsRequest,  # noqa: N802
                      context: grpc.aio.ServicerContext) -> pb.PodSetsResponse:
        return await _answer(context, convert.pod_sets_response, request)


async def _answer(context: grpc.aio.ServicerContext, fn: Callable[[Any], Any],
                  request: Any) -> Any:
    try:
        return fn(request)
    except InvalidInput as exc:
        await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
    except RecursionError:
        await context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                            "request: objects are nested too deeply")
    raise AssertionError("unreachable")  # context.abort always raises


def server_options(max_message_bytes: int) -> list[tuple[str, Any]]:
    # Port sharing is on by default in grpcio: a second server would silently bind the same port.
    return [("grpc.so_reuseport", 0),
            ("grpc.max_receive_message_length", max_message_bytes),
            ("grpc.max_send_message_length", max_message_bytes)]


async def start(address: str = "127.0.0.1:50051", *,
                max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
                interceptors: list[Any] | None = None
                ) -> tuple[grpc.aio.Server, int, health.HealthServicer]:
    """Build and start a server; returns it, the port it bound, and its health servicer."""
    server = grpc.aio.server(options=server_options(max_message_bytes),
                             interceptors=interceptors or ())
    pb_grpc.add_DeciderServicer_to_server(DeciderServicer(), server)
    health_servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection(
        (SERVICE_NAME, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name,
         reflection.SERVICE_NAME), server)
    port = server.add_insecure_port(address)
    if port == 0:
        raise OSError(f"cannot bind {address}")
    await server.start()
    for name in ("", SERVICE_NAME):
        health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    return server, port, health_servicer


async def serve(address: str, *, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
                grace: float = DEFAULT_GRACE_SECONDS,
                on_ready: Callable[[int], None] | None = None) -> None:
    """Serve until SIGTERM/SIGINT, then drain: report NOT_SERVING, finish RPCs in flight."""
    from decider import telemetry

    server, port, health_servicer = await start(
        address, max_message_bytes=max_message_bytes,
        interceptors=telemetry.server_interceptors())
    if on_ready:
        on_ready(port)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    # Load balancers see NOT_SERVING first, then in-flight RPCs get `grace` seconds to finish.
    health_servicer.enter_graceful_shutdown()
    await server.stop(grace)
    telemetry.shutdown()


class BackgroundServer:
    """A real decider server on its own event loop in a thread, for tests and benchmarks."""

    def __init__(self, address: str = "127.0.0.1:0", *,
                 max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
                 interceptors: list[Any] | None = None) -> None:
        self._address = address
        self._max = max_message_bytes
        self._interceptors = interceptors
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True,
                                        name="decider-server")
        self._server: grpc.aio.Server | None = None
        self.port = 0

    @property
    def target(self) -> str:
        host = self._address.rsplit(":", 1)[0]
        return f"{host}:{self.port}"

    def start(self) -> BackgroundServer:
        self._thread.start()
        fut = asyncio.run_coroutine_threadsafe(
            start(self._address, max_message_bytes=self._max, interceptors=self._interceptors),
            self._loop)
        self._server, self.port, _ = fut.result(timeout=30)
        return self

    def stop(self, grace: float | None = None) -> None:
        if self._server is not None:
            asyncio.run_coroutine_threadsafe(self._server.stop(grace), self._loop).result(30)
            self._server = None
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)

    def __enter__(self) -> BackgroundServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
