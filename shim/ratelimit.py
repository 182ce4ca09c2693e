"""How the shim spaces its API requests: a client-side token bucket, and the server's Retry-After.

The token bucket is client-go's (flowcontrol.NewTokenBucketRateLimiter): `qps` tokens a second,
at most `burst` saved up, one per request; a request that finds none waits for the next, in the
order they asked. The default is upstream JobSet's manager (api/config/v1alpha1/defaults.go:
clientConnection QPS 500, burst 500), not client-go's library default (5, burst 10): the shim
does the same work as that controller, and at 5 QPS 200 JobSets of 5 Jobs took 281 s to get
their Jobs where upstream took 60 s. The server's own defence is API Priority and Fairness,
which answers a client past its share with 429 and a Retry-After, waited out before the same
request is sent again. An operator who wants the shim to hold back lowers the flags.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

DEFAULT_QPS = 500.0
DEFAULT_BURST = 500
# client-go retries a throttled request up to 10 times; each wait is what the server asked,
# bounded so that a bad header cannot park a worker for an hour.
DEFAULT_MAX_RETRIES = 5
DEFAULT_MAX_RETRY_WAIT = 60.0


class TokenBucket:
    def __init__(
        self,
        qps: float,
        burst: int,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError(f"token bucket needs qps > 0 and burst >= 1 (got {qps}, {burst})")
        self.qps = qps
        self.burst = burst
        self._clock = clock
        self._sleep = sleep
        self._tokens = float(burst)
        self._last = clock()
        self._lock = threading.Lock()

    def reserve(self) -> float:
        """Take a token; returns how long to wait before using it (0: now).

        Tokens may go negative: each caller reserves the next one to come, so waiters are
        served in the order they asked and the rate holds however many wait.
        """
        with self._lock:
            now = self._clock()
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
            self._last = now
            self._tokens -= 1.0
            return -self._tokens / self.qps if self._tokens < 0 else 0.0

    def acquire(self) -> float:
        """Block until a request may go; returns the time waited."""
        wait = self.reserve()
        if wait > 0:
            self._sleep(wait)
        return wait


def retry_after(
    status: int,
    headers: Mapping[str, str] | None,
    limit: float = DEFAULT_MAX_RETRY_WAIT,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> float | None:
    """Seconds to wait before sending the request again, None when it should not be resent.

    As client-go: a 429, or any 5xx, that carries Retry-After (delta seconds or an HTTP date).
    Without the header the answer is final for this request (the caller's backoff takes over).
    """
    if status != 429 and not 500 <= status <= 599:
        return None
    value = (headers or {}).get("Retry-After")
    if value is None:
        return None
    value = value.strip()
    try:
        seconds = float(int(value))
    except ValueError:
        try:
            seconds = (parsedate_to_datetime(value) - now()).total_seconds()
        except (TypeError, ValueError):
            # Unreadable: still a request to wait; the shortest sensible wait.
            seconds = 1.0
    return min(max(seconds, 0.0), limit)
