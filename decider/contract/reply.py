"""An answer as every front end carries it: a gRPC status code and the bytes of the answer or
of the status message. The gRPC server, the webhook and the CLI all read decisions in this shape,
so the status codes and the bounds on a message live here, below all of them."""

from __future__ import annotations

from dataclasses import dataclass

# grpc.StatusCode values (the numbers are part of the gRPC protocol).
OK = 0
INVALID_ARGUMENT = 3
DEADLINE_EXCEEDED = 4
RESOURCE_EXHAUSTED = 8
INTERNAL = 13
UNAVAILABLE = 14
STATUS_NAMES = {OK: "OK", INVALID_ARGUMENT: "INVALID_ARGUMENT",
                DEADLINE_EXCEEDED: "DEADLINE_EXCEEDED", RESOURCE_EXHAUSTED: "RESOURCE_EXHAUSTED",
                INTERNAL: "INTERNAL", UNAVAILABLE: "UNAVAILABLE"}


@dataclass(frozen=True, slots=True)
class Reply:
    code: int
    # The serialized answer when code is OK, else the status message (UTF-8).
    body: bytes
    # When asked for (WANT_FACTS): a JSON object of span and metric attributes; for
    # WANT_METRICS alone, what the decision adds to the counters.
    facts: bytes = b""
    # When asked for (WANT_RECORD): a JSON object {"request", "response" or "status"}.
    record: bytes = b""

    @property
    def message(self) -> str:
        return self.body.decode("utf-8", "replace")


def safe_text(text: str) -> str:
    """`text` as valid UTF-8: a message may quote input, and a lone surrogate in a status
    message would make the RPC fail to answer at all."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


# A status message travels in the grpc-message trailer, and clients cap trailers: gRPC's C core
# refuses some past 8 KiB and all past 16 KiB (the call then fails with RESOURCE_EXHAUSTED,
# "Stream removed", naming nothing), Node's about 64 KiB (the call hung to its deadline). A
# message quoting a huge value of the input is cut well inside that; its start names the field.
MAX_STATUS_MESSAGE_BYTES = 2048


def bounded_message(text: str) -> str:
    data = text.encode("utf-8")
    if len(data) <= MAX_STATUS_MESSAGE_BYTES:
        return text
    head = data[:MAX_STATUS_MESSAGE_BYTES - 64].decode("utf-8", "ignore")
    return f"{head}... ({len(data) - len(head.encode('utf-8')):,} more bytes cut)"


def failure(code: int, message: str, extra: tuple[bytes, bytes] = (b"", b"")) -> Reply:
    return Reply(code, bounded_message(safe_text(message)).encode("utf-8"), *extra)
