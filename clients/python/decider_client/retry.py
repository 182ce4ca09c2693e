"""The retry policy every client of the decider ships, and its rules (docs/clients.md, Retries).

The policy is written as gRPC's retry service config (gRFC A6), the same document as the Go
client's `retry_service_config.json` and the Node client's (tests/test_client_retry.py checks
they agree). The client applies it itself rather than handing it to grpcio's channel: gRPC's own
retries happen below every interceptor, so no application can count them, and the decider's
RESOURCE_EXHAUSTED without a pushback (an input over a limit) must not be retried, which a
service config cannot say.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass

import grpc

SERVICE_CONFIG = """{
  "methodConfig": [
    {
      "name": [{"service": "decider.v1.Decider"}],
      "retryPolicy": {
        "maxAttempts": 5,
        "initialBackoff": "0.1s",
        "maxBackoff": "1s",
        "backoffMultiplier": 2,
        "retryableStatusCodes": ["UNAVAILABLE", "RESOURCE_EXHAUSTED"]
      }
    }
  ]
}
"""

# The trailer a server sends to say when to try again: the decider sends 100 (ms) when it
# sheds load past --max-pending, 500 when a decision worker was lost.
PUSHBACK = "grpc-retry-pushback-ms"


def _seconds(text: object, field: str) -> float:
    if not isinstance(text, str) or not text.endswith("s"):
        raise ValueError(f"{field}: must be a duration such as \"0.1s\", got {text!r}")
    try:
        value = float(text[:-1])
    except ValueError:
        raise ValueError(f"{field}: must be a duration such as \"0.1s\", got {text!r}") from None
    if not value > 0:
        raise ValueError(f"{field}: must be positive, got {text!r}")
    return value


@dataclass(frozen=True)
class RetryPolicy:
    """Which failed calls are sent again, how often (max_attempts counts the first) and after
    how long (seconds)."""

    max_attempts: int
    initial_backoff: float = 0.1
    max_backoff: float = 1.0
    backoff_multiplier: float = 2.0
    retryable: frozenset[grpc.StatusCode] = frozenset()

    @classmethod
    def from_service_config(cls, text: str) -> RetryPolicy:
        """The retryPolicy of a gRPC service config's first methodConfig."""
        doc = json.loads(text)
        try:
            policy = doc["methodConfig"][0]["retryPolicy"]
        except (KeyError, IndexError, TypeError):
            raise ValueError("methodConfig[0].retryPolicy: missing") from None
        field = "methodConfig[0].retryPolicy"
        attempts = policy.get("maxAttempts")
        multiplier = policy.get("backoffMultiplier")
        if not isinstance(attempts, int) or attempts < 1:
            raise ValueError(f"{field}.maxAttempts: must be 1 or more, got {attempts!r}")
        if not isinstance(multiplier, int | float) or not multiplier > 0:
            raise ValueError(f"{field}.backoffMultiplier: must be positive, got {multiplier!r}")
        codes = []
        for name in policy.get("retryableStatusCodes", []):
            try:
                codes.append(grpc.StatusCode[name])
            except KeyError:
                raise ValueError(f"{field}.retryableStatusCodes: not a status code: "
                                 f"{name!r}") from None
        return cls(max_attempts=attempts,
                   initial_backoff=_seconds(policy.get("initialBackoff"),
                                            f"{field}.initialBackoff"),
                   max_backoff=_seconds(policy.get("maxBackoff"), f"{field}.maxBackoff"),
                   backoff_multiplier=float(multiplier), retryable=frozenset(codes))

    def delay(self, code: grpc.StatusCode | None,
              trailers: Sequence[tuple[str, str | bytes]] | None,
              backoffs: int) -> tuple[float, bool] | None:
        """(seconds to wait, whether a pushback said so) before sending a call again that
        ended with `code` and `trailers`; None when it is not to be sent again. `backoffs`:
        the retries since the last pushback. As gRFC A6: a pushback of 0 or more is the wait
        (and starts the backoff over), a negative or malformed one forbids a retry; one rule
        more, RESOURCE_EXHAUSTED without a pushback (an input over the decider's limits, a
        message over gRPC's) is never retried."""
        if code not in self.retryable:
            return None
        pushback = [v for k, v in trailers or () if k == PUSHBACK]
        if pushback:
            text = pushback[0].decode() if isinstance(pushback[0], bytes) else pushback[0]
            if len(pushback) > 1 or not text.isascii() or not text.isdigit():
                return None
            return int(text) / 1000, True
        if code == grpc.StatusCode.RESOURCE_EXHAUSTED:
            return None
        limit = min(self.initial_backoff * self.backoff_multiplier ** min(backoffs, 64),
                    self.max_backoff)
        return random.uniform(0, limit), False  # noqa: S311 (jitter, not a secret)


DEFAULT = RetryPolicy.from_service_config(SERVICE_CONFIG)
NO_RETRY = RetryPolicy(max_attempts=1)
