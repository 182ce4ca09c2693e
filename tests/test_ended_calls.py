"""RPCs gRPC ended under the server are treated as cancelled, not logged as server errors."""

from __future__ import annotations

import asyncio
import logging

import grpc
import pytest

from decider.service import ended_calls


class ExecuteBatchError(Exception):
    """Named as grpc's private error is: what the filter recognizes."""


def _record(exc: BaseException | None) -> logging.LogRecord:
    exc_info = (type(exc), exc, None) if exc is not None else None
    return logging.LogRecord("grpc._cython.cygrpc", logging.ERROR, "server.pyx.pxi", 710,
                             "%s raised in core by servicer method [%s]",
                             ("ExecuteBatchError", "/decider.v1.Decider/Decide"), exc_info)


def test_grpcs_report_of_an_ended_call_moves_to_debug(caplog) -> None:
    ended_calls.quiet_ended_calls()
    ended_calls.quiet_ended_calls()  # idempotent
    grpc_log = logging.getLogger("grpc._cython.cygrpc")
    assert grpc_log.filters.count(ended_calls._FILTER) == 1
    caplog.set_level(logging.DEBUG)
    grpc_log.handle(_record(ExecuteBatchError('Failed "execute_batch"')))
    assert [(r.name, r.levelno) for r in caplog.records] == [("decider.server", logging.DEBUG)]
    assert "could not answer a call that had ended" in caplog.records[0].getMessage()


@pytest.mark.parametrize("exc", [ValueError("a servicer bug"), None],
                         ids=["other-error", "no-error"])
def test_every_other_grpc_error_is_still_logged(caplog, exc) -> None:
    ended_calls.quiet_ended_calls()
    logging.getLogger("grpc._cython.cygrpc").handle(_record(exc))
    assert [(r.name, r.levelno) for r in caplog.records] == [("grpc._cython.cygrpc",
                                                             logging.ERROR)]


class _Context:
    def __init__(self, raises: BaseException) -> None:
        self.raises = raises
        self.sent: list[tuple[grpc.StatusCode, str]] = []

    async def abort(self, code: grpc.StatusCode, message: str) -> None:
        self.sent.append((code, message))
        raise self.raises


def test_an_abort_that_cannot_be_sent_ends_the_rpc_as_cancelled() -> None:
    ctx = _Context(ExecuteBatchError("call already ended"))
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(ended_calls.abort(ctx, grpc.StatusCode.DEADLINE_EXCEEDED, "late"))
    assert ctx.sent == [(grpc.StatusCode.DEADLINE_EXCEEDED, "late")]


def test_a_sent_abort_ends_the_rpc_as_grpc_expects() -> None:
    with pytest.raises(grpc.aio.AbortError):
        asyncio.run(ended_calls.abort(_Context(grpc.aio.AbortError()),
                                      grpc.StatusCode.INVALID_ARGUMENT, "spec: bad"))


