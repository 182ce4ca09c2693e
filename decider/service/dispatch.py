"""One request's bytes in, one answer's bytes (or a status and a message) out.

This is the whole of what a decision worker does, and what the CLI does in-process, so both
answer every input alike. It parses the request itself (an undecodable request is the caller's
mistake, INVALID_ARGUMENT, not the transport's UNKNOWN), applies the limits, decides through
the contract (decider/contract/), and serializes. Status codes are gRPC's numbers: a worker
has no use for grpc itself.
"""

from __future__ import annotations

import json
import logging
import traceback
from collections.abc import Callable
from typing import Any

import orjson
from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message

from decider.contract import convert
from decider.contract.limits import Limits
from decider.contract.methods import METHODS, answer_message
from decider.contract.reply import (
    DEADLINE_EXCEEDED,
    INTERNAL,
    INVALID_ARGUMENT,
    OK,
    RESOURCE_EXHAUSTED,
    STATUS_NAMES,
    UNAVAILABLE,
    Reply,
    failure,
    safe_text,
)
from decider.core.errors import InvalidInput, TooLarge
from decider_api.v1 import decider_pb2 as pb

log = logging.getLogger("decider.dispatch")

# What the server's other modules and the CLI read from here, defined below this layer.
__all__ = ["DEADLINE_EXCEEDED", "INTERNAL", "INVALID_ARGUMENT", "METHODS", "OK",
           "RESOURCE_EXHAUSTED", "STATUS_NAMES", "UNAVAILABLE", "Reply", "answer",
           "answer_message", "answer_with_facts", "failure", "safe_text"]


def _admit(mutate: bool) -> Callable[[bytes, Limits], Reply]:
    def run(payload: bytes, limits: Limits) -> Reply:
        from decider.contract import admission_review

        return admission_review.answer(mutate, payload, limits)
    return run


# Asked by the server's own front ends, not served over gRPC: the admission webhook's
# AdmissionReviews (decider/webhook/server.py). Their bytes are parsed on a worker too, so a large
# review never stalls the event loop; the decision inside is the Validate method's.
RAW_METHODS: dict[str, Callable[[bytes, Limits], Reply]] = {
    "AdmitMutate": _admit(True),
    "AdmitValidate": _admit(False),
}
# A method's number on the wire between the server and its workers.
METHOD_IDS: dict[str, int] = {name: i for i, name in enumerate([*METHODS, *RAW_METHODS])}
METHOD_NAMES: dict[int, str] = {i: name for name, i in METHOD_IDS.items()}


WANT_FACTS = 1  # span and metric attributes (decider/telemetry/facts.py)
DECISION_ID = "decider.decision_id"  # facts.DECISION_ID, without importing telemetry's module
WANT_RECORD = 2  # the request and the answer as JSON, for the decision log
# Only what the decision adds to the server's counters (decider/telemetry/counters.py), as JSON
# with sorted keys: it repeats from decision to decision, so the server caches it by its bytes.
WANT_METRICS = 8


def _decide(request: pb.DecideRequest, limits: Limits, facts: bool,
            received: bytes | None) -> tuple[Message, dict[str, Any]]:
    decision = convert.decide_request(request, limits, received=received)
    decision_id = decision.response.decision_id
    if not facts:
        return decision.response, {DECISION_ID: decision_id}
    from decider.telemetry.facts import decision_facts

    return decision.response, decision_facts(decision, decision_id)


def answer_with_facts(method: str, request: Any, limits: Limits, *, facts: bool = True,
                      received: bytes | None = None) -> tuple[Message, dict[str, Any]]:
    """The answer to a parsed request and what it was about (only its decision id unless
    `facts`); raises InvalidInput or TooLarge. received: the bytes `request` was parsed
    from, when it was (limits.check_decide_request)."""
    if method != "Decide":
        return answer_message(method, request, limits), {}
    try:
        return _decide(request, limits, facts, received)
    except RecursionError:
        # As answer_message: a recursive step json_input's bound on nesting does not cover.
        raise InvalidInput.at("request", "objects are nested too deeply") from None


def _dumps(value: Any, sort_keys: bool = False) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False,
                      sort_keys=sort_keys).encode()


def _facts_json(facts: dict[str, Any], sort: bool = False) -> bytes:
    try:
        # Strings and integers: ten times json's speed.
        return orjson.dumps(facts, option=orjson.OPT_SORT_KEYS if sort else None)
    except orjson.JSONEncodeError:  # an integer past 64 bits, say
        return _dumps(facts, sort_keys=sort)


def _extra(want: int, method: str, facts: dict[str, Any], request: Message | None,
           response: Message | None, status: tuple[int, str] | None
           ) -> tuple[bytes, bytes]:
    """What telemetry and the decision log asked for beside the answer; never an exception:
    a bug here must cost the span or the log line, not the decision."""
    if not want:
        return b"", b""
    try:
        return _written_extra(want, method, facts, request, response, status)
    except Exception as exc:  # noqa: BLE001 - logged with its traceback, the answer stands
        log.error("%s: telemetry facts failed (%s: %s); answered without them\n%s", method,
                  type(exc).__name__, exc, traceback.format_exc())
        return b"", b""


def _written_extra(want: int, method: str, facts: dict[str, Any], request: Message | None,
                   response: Message | None, status: tuple[int, str] | None
                   ) -> tuple[bytes, bytes]:
    if request is not None and DECISION_ID not in facts:
        facts = {**facts, DECISION_ID: convert.decision_id(method, request)}
    record: dict[str, Any] = {}
    if want & WANT_RECORD:
        from decider.telemetry.log_format import request_json

        # An out-of-range `now` too (refused INVALID_ARGUMENT): replay reads it back.
        record["request"] = request_json(request) if request is not None else None
        if response is not None:
            record["response"] = json_format.MessageToDict(response)
        if status is not None:
            record["status"] = {"code": STATUS_NAMES.get(status[0], str(status[0])),
                                "message": safe_text(status[1])}
    if want & WANT_FACTS:
        facts_json = _facts_json(facts)
    elif want & WANT_METRICS:
        from decider.telemetry.counters import increments

        facts_json = _facts_json(increments(facts), sort=True)
    else:
        facts_json = b""
    return facts_json, _record_json(record) if want & WANT_RECORD else b""


def _record_json(record: dict[str, Any]) -> bytes:
    """The record as one line's worth of JSON, written here, on a worker, rather than by the
    server, which splices it into the log line unread."""
    from decider.telemetry.log_format import line_safe_utf8

    return line_safe_utf8(_dumps(record))


def answer(method: str, payload: bytes, limits: Limits, want: int = 0) -> Reply:
    """Decode, decide, encode; every outcome is a Reply, never an exception."""
    raw = RAW_METHODS.get(method)
    if raw is not None:
        try:
            return raw(payload, limits)
        except Exception as exc:  # noqa: BLE001 - a bug: answered, logged with its traceback
            log.error("%s: unexpected %s\n%s", method, type(exc).__name__,
                      traceback.format_exc())
            return failure(INTERNAL, f"{method}: the decider failed on this input "
                                     f"({type(exc).__name__}: {exc}); this is a bug")
    spec = METHODS.get(method)
    if spec is None:
        return failure(INVALID_ARGUMENT, f"unknown method {method!r}")
    request = spec.request()
    try:
        request.ParseFromString(payload)
    except (DecodeError, ValueError) as exc:
        message = (f"request: not a valid {spec.request.DESCRIPTOR.full_name} (malformed "
                   f"protobuf or a string that is not UTF-8): {exc}")
        return failure(INVALID_ARGUMENT, message,
                       _extra(want, method, {}, None, None, (INVALID_ARGUMENT, message)))
    try:
        response, facts = answer_with_facts(method, request, limits,
                                            facts=bool(want & (WANT_FACTS | WANT_METRICS)),
                                            received=payload)
        body = response.SerializeToString()
    except (InvalidInput, TooLarge, MemoryError) as exc:
        code = INVALID_ARGUMENT if isinstance(exc, InvalidInput) else RESOURCE_EXHAUSTED
        message = str(exc) if not isinstance(exc, MemoryError) else (
            f"{method}: the decision needs more memory than a decision worker may use")
        return failure(code, message, _extra(want, method, {}, request, None, (code, message)))
    except Exception as exc:  # noqa: BLE001 - a bug: answered, logged with its traceback
        log.error("%s: unexpected %s\n%s", method, type(exc).__name__, traceback.format_exc())
        message = (f"{method}: the decider failed on this input ({type(exc).__name__}: {exc});"
                   " this is a bug, please report it")
        return failure(INTERNAL, message,
                       _extra(want, method, {}, request, None, (INTERNAL, message)))
    if len(body) > limits.max_message_bytes:
        message = (f"{method}: the answer is {len(body):,} bytes, over the limit of "
                   f"{limits.max_message_bytes:,} bytes per message")
        return failure(RESOURCE_EXHAUSTED, message,
                       _extra(want, method, facts, request, None,
                              (RESOURCE_EXHAUSTED, message)))
    return Reply(OK, body, *_extra(want, method, facts, request, response, None))
