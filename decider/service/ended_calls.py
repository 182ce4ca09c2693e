"""RPCs that gRPC ends under the server: the client's deadline passed, or the client left.

Sending anything to such a call fails inside gRPC with its private `ExecuteBatchError`, which
grpc.aio logs at ERROR with a traceback, once per call. Under a client that sets tight deadlines
that is hundreds of tracebacks a second for something that is neither a server fault nor
actionable, and it would page whoever watches the log. The call is cancelled, so it is treated
as one: no answer is sent, and the failure is logged at DEBUG.
"""

from __future__ import annotations

import asyncio
import logging

import grpc

log = logging.getLogger("decider.server")

_GRPC_LOGGER = "grpc._cython.cygrpc"
_ENDED = "ExecuteBatchError"


async def abort(context: grpc.aio.ServicerContext, code: grpc.StatusCode, message: str) -> None:
    """End the RPC with `code`, or, if gRPC has ended it already, as cancelled."""
    try:
        await context.abort(code, message)
    except grpc.aio.AbortError:
        raise
    except Exception as exc:  # noqa: BLE001 (the error gRPC raises is private)
        log.debug("could not send %s (%s) to a call that had ended: %s", code.name, message, exc)
        raise asyncio.CancelledError from None


class _EndedCallFilter(logging.Filter):
    """gRPC's own report of an answer it could not send (the handler had returned when the call
    ended), moved down to DEBUG on the decider's logger."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc_type = record.exc_info[0] if record.exc_info else None
        if exc_type is None or exc_type.__name__ != _ENDED:
            return True
        log.debug("could not answer a call that had ended: %s", record.getMessage())
        return False


_FILTER = _EndedCallFilter()


def quiet_ended_calls() -> None:
    """Install the filter (once; idempotent)."""
    logger = logging.getLogger(_GRPC_LOGGER)
    if _FILTER not in logger.filters:
        logger.addFilter(_FILTER)
