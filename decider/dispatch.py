"""One request's bytes in, one answer's bytes (or a status and a message) out.

This is the whole of what a decision worker does, and what the CLI does in-process, so both
answer every input alike. It parses the request itself (an undecodable request is the caller's
mistake, INVALID_ARGUMENT, not the transport's UNKNOWN), applies the limits, decides through
`convert`, and serializes. Status codes are gRPC's numbers: a worker has no use for grpc itself.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from google.protobuf.message import DecodeError, Message

from decider import convert
from decider.core.errors import InvalidInput, TooLarge
from decider.limits import Limits
from decider.v1 import decider_pb2 as pb

log = logging.getLogger("decider.dispatch")

# grpc.StatusCode values (the numbers are part of the gRPC protocol).
OK = 0
INVALID_ARGUMENT = 3
DEADLINE_EXCEEDED = 4
RESOURCE_EXHAUSTED = 8
INTERNAL = 13
UNAVAILABLE = 14


@dataclass(frozen=True, slots=True)
class Method:
    name: str
    request: type[Message]
    answer: Callable[[Any, Limits], Message]


METHODS: dict[str, Method] = {m.name: m for m in (
    Method("Decide", pb.DecideRequest, convert.decide_response),
    Method("Validate", pb.ValidateRequest, convert.validate_response),
    Method("PlanGang", pb.PlanGangRequest, convert.plan_gang_response),
    Method("PodSets", pb.PodSetsRequest, convert.pod_sets_response),
    Method("Simulate", pb.SimulateRequest, convert.simulate_response),
)}
# A method's number on the wire between the server and its workers.
METHOD_IDS: dict[str, int] = {name: i for i, name in enumerate(METHODS)}
METHOD_NAMES: dict[int, str] = {i: name for name, i in METHOD_IDS.items()}


@dataclass(frozen=True, slots=True)
class Reply:
    code: int
    # The serialized answer when code is OK, else the status message (UTF-8).
    body: bytes

    @property
    def message(self) -> str:
        return self.body.decode("utf-8", "replace")


def safe_text(text: str) -> str:
    """`text` as valid UTF-8: a message may quote input, and a lone surrogate in a status
    message would make the RPC fail to answer at all."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def failure(code: int, message: str) -> Reply:
    return Reply(code, safe_text(message).encode("utf-8"))


def answer_message(method: str, request: Any, limits: Limits) -> Message:
    """The answer to a parsed request; raises InvalidInput or TooLarge."""
    try:
        return METHODS[method].answer(request, limits)
    except RecursionError:
        # json_input bounds nesting, so this would be a recursive step the bound does not
        # cover; still the input's fault, not the server's.
        raise InvalidInput.at("request", "objects are nested too deeply") from None


def answer(method: str, payload: bytes, limits: Limits) -> Reply:
    """Decode, decide, encode; every outcome is a Reply, never an exception."""
    spec = METHODS.get(method)
    if spec is None:
        return failure(INVALID_ARGUMENT, f"unknown method {method!r}")
    request = spec.request()
    try:
        request.ParseFromString(payload)
    except (DecodeError, ValueError) as exc:
        return failure(INVALID_ARGUMENT, f"request: not a valid {spec.request.DESCRIPTOR.full_name}"
                                         f" (malformed protobuf or a string that is not UTF-8):"
                                         f" {exc}")
    try:
        body = answer_message(method, request, limits).SerializeToString()
    except InvalidInput as exc:
        return failure(INVALID_ARGUMENT, str(exc))
    except TooLarge as exc:
        return failure(RESOURCE_EXHAUSTED, str(exc))
    except MemoryError:
        return failure(RESOURCE_EXHAUSTED, f"{method}: the decision needs more memory than a "
                                           "decision worker may use")
    except Exception as exc:  # noqa: BLE001 - a bug: answered, logged with its traceback
        log.error("%s: unexpected %s\n%s", method, type(exc).__name__, traceback.format_exc())
        return failure(INTERNAL, f"{method}: the decider failed on this input "
                                 f"({type(exc).__name__}: {exc}); this is a bug, please report it")
    if len(body) > limits.max_message_bytes:
        return failure(RESOURCE_EXHAUSTED, f"{method}: the answer is {len(body):,} bytes, over "
                                           f"the limit of {limits.max_message_bytes:,} bytes "
                                           "per message")
    return Reply(OK, body)
