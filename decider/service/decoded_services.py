"""Health and reflection answer a request they cannot decode with INVALID_ARGUMENT.

grpcio's stock servicers are registered with protobuf deserializers, so a malformed request (bad
UTF-8 in a string, a corrupt message) raised inside gRPC's own code: the client got UNKNOWN and
the server logged an ERROR with a traceback, a client's mistake paging someone. The Decider's
own methods take bytes and decode on a worker; these are wrapped instead: the deserializer
hands back what it could not decode, and the method aborts with it.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc
from google.protobuf.message import DecodeError


class _Undecodable:
    __slots__ = ("why",)

    def __init__(self, why: str) -> None:
        self.why = why


def _decoder(decode: Callable[[bytes], Any], method: str) -> Callable[[bytes], Any]:
    def safe(data: bytes) -> Any:
        try:
            return decode(data)
        except (DecodeError, ValueError, UnicodeDecodeError) as exc:
            return _Undecodable(f"{method}: the request is not a valid message: {exc}")
    return safe


async def _refuse(request: Any, context: grpc.aio.ServicerContext) -> None:
    if isinstance(request, _Undecodable):
        await context.abort(grpc.StatusCode.INVALID_ARGUMENT, request.why)


def _checked(requests: AsyncIterator[Any], context: grpc.aio.ServicerContext
             ) -> AsyncIterator[Any]:
    async def each() -> AsyncIterator[Any]:
        async for request in requests:
            await _refuse(request, context)
            yield request
    return each()


def _streaming(inner: Callable[..., Any], first: Callable[[Any, Any], Any]) -> Callable[..., Any]:
    """A streaming behaviour as gRPC tells them apart: an async generator, or a coroutine that
    writes its answers (context.write)."""
    if inspect.isasyncgenfunction(inner):
        async def generate(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
            async for response in inner(await first(request, context), context):
                yield response
        return generate

    async def write(request: Any, context: grpc.aio.ServicerContext) -> Any:
        return await inner(await first(request, context), context)
    return write


def guard(handler: grpc.RpcMethodHandler | None, method: str) -> grpc.RpcMethodHandler | None:
    if handler is None or handler.request_deserializer is None:
        return handler
    decode = _decoder(handler.request_deserializer, method)
    out = handler.response_serializer

    async def one(request: Any, context: grpc.aio.ServicerContext) -> Any:
        await _refuse(request, context)
        return request

    async def many(requests: Any, context: grpc.aio.ServicerContext) -> Any:
        return _checked(requests, context)

    if handler.unary_unary is not None:
        inner = handler.unary_unary

        async def unary(request: Any, context: grpc.aio.ServicerContext) -> Any:
            return await inner(await one(request, context), context)
        return grpc.unary_unary_rpc_method_handler(unary, decode, out)
    if handler.unary_stream is not None:
        return grpc.unary_stream_rpc_method_handler(_streaming(handler.unary_stream, one),
                                                    decode, out)
    if handler.stream_unary is not None:
        inner_su = handler.stream_unary

        async def gathered(requests: Any, context: grpc.aio.ServicerContext) -> Any:
            return await inner_su(await many(requests, context), context)
        return grpc.stream_unary_rpc_method_handler(gathered, decode, out)
    return grpc.stream_stream_rpc_method_handler(_streaming(handler.stream_stream, many),
                                                 decode, out)


class _Guarded(grpc.GenericRpcHandler):
    def __init__(self, inner: grpc.GenericRpcHandler) -> None:
        self.inner = inner

    def service(self, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        return guard(self.inner.service(details), details.method)


class Registrar:
    """What a generated `add_*Servicer_to_server` is given in place of the server: it registers
    the servicer's methods, guarded, on the real one."""

    def __init__(self, server: grpc.aio.Server) -> None:
        self.server = server

    def add_generic_rpc_handlers(self, handlers: Any) -> None:
        self.server.add_generic_rpc_handlers(tuple(_Guarded(h) for h in handlers))

    def add_registered_method_handlers(self, service: str, handlers: dict[str, Any]) -> None:
        self.server.add_registered_method_handlers(
            service, {name: guard(h, f"/{service}/{name}") for name, h in handlers.items()})
