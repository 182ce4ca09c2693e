"""A work queue keyed by JobSet, with client-go's guarantees.

- A key is queued at most once: events that arrive while it waits are coalesced.
- A key is processed by at most one worker at a time: an add during processing marks it dirty
  and it is queued again when that worker calls `done`.
- `add_after` schedules a key (requeueAfter), keeping the earliest due time; `cancel_after`
  drops a schedule that is no longer needed.
- `add_rate_limited` requeues a failed key with per-key exponential backoff; `forget` resets it.
  A caller may pass its own base and cap for failures that call for a slower retry; each
  schedule counts its own failures, so four quick retries of a decider restarting (5 ms base)
  do not make a key's first refusal (30 s base) wait 2^4 times its base.
- `requeue` is a pass asking to run again later (its plan's requeue_after). controller-runtime
  hands its reconciler's RequeueAfter to AddAfter as it is: the reconciler is the controller's
  own code. The shim's plans come from a service, which may be careless or hostile (1 ms, again
  and again, made 333 Decides a second of one idle JobSet), so a requeue below the floor is
  honoured once (a TTL's last few milliseconds), and asked again with no longer one between it
  goes through a rate limiter: the floor, doubling up to a cap, as client-go's per-item
  exponential limiter spaces a key's retries. A requeue of at least the floor, or a pass that
  asks for none, starts over.
"""

from __future__ import annotations

import collections
import heapq
import threading
import time
from collections.abc import Hashable


class WorkQueue:
    def __init__(self, base_delay: float = 0.005, max_delay: float = 300.0,
                 min_requeue: float = 1.0, max_requeue: float = 60.0) -> None:
        self._cond = threading.Condition()
        self._queue: collections.deque[Hashable] = collections.deque()
        self._dirty: set[Hashable] = set()
        self._processing: set[Hashable] = set()
        self._waiting: dict[Hashable, float] = {}
        self._heap: list[tuple[float, int, Hashable]] = []
        self._seq = 0
        # Failures so far, per key and per schedule (base, cap).
        self._failures: dict[Hashable, dict[tuple[float, float], int]] = {}
        self._base = base_delay
        self._max = max_delay
        self.min_requeue = min_requeue
        self.max_requeue = max(max_requeue, min_requeue)
        # Requeues below the floor asked in a row, per key.
        self._short: dict[Hashable, int] = {}
        self._shutdown = False

    def add(self, key: Hashable) -> None:
        with self._cond:
            self._add_locked(key)

    def _add_locked(self, key: Hashable) -> None:
        if self._shutdown or key in self._dirty:
            return
        self._dirty.add(key)
        if key not in self._processing:
            self._queue.append(key)
            self._cond.notify()

    def add_after(self, key: Hashable, delay: float) -> float | None:
        """Queue `key` in `delay` seconds; returns the due time it is now waiting for, if any."""
        if delay <= 0:
            self.add(key)
            return None
        due = time.monotonic() + delay
        with self._cond:
            if self._shutdown:
                return None
            current = self._waiting.get(key)
            if current is not None and current <= due:
                return current
            self._waiting[key] = due
            self._seq += 1
            heapq.heappush(self._heap, (due, self._seq, key))
            self._cond.notify()
            return due

    def cancel_after(self, key: Hashable, due: float) -> bool:
        """Drop the delayed add of `key` due at `due` (as add_after returned); False if it is
        no longer the one waiting."""
        with self._cond:
            if self._waiting.get(key) != due:
                return False
            del self._waiting[key]  # its heap entry is skipped as superseded
            return True

    def add_rate_limited(
        self, key: Hashable, base: float | None = None, cap: float | None = None
    ) -> float:
        """Requeue after base * 2^(failures so far on this schedule), at most cap; returns
        the delay."""
        base = self._base if base is None else base
        cap = self._max if cap is None else cap
        with self._cond:
            counts = self._failures.setdefault(key, {})
            failures = counts.get((base, cap), 0)
            counts[(base, cap)] = failures + 1
        delay = min(base * (2 ** min(failures, 64)), cap)
        self.add_after(key, delay)
        return delay

    def requeue(self, key: Hashable, delay: float) -> float | None:
        """A pass of `key` asked to run again in `delay` s (0 or less: not at all); returns
        the delay it is queued with, None when it is not."""
        with self._cond:
            if delay <= 0 or delay >= self.min_requeue:
                self._short.pop(key, None)
            else:
                short = self._short.get(key, 0)
                self._short[key] = short + 1
                if short:
                    delay = min(self.min_requeue * 2 ** min(short - 1, 64), self.max_requeue)
        if delay <= 0:
            return None
        self.add_after(key, delay)
        return delay

    def forget(self, key: Hashable) -> None:
        with self._cond:
            self._failures.pop(key, None)

    def failures(self, key: Hashable) -> int:
        """Failures since the key's last success, on every schedule."""
        with self._cond:
            return sum(self._failures.get(key, {}).values())

    def scheduled(self, key: Hashable) -> float | None:
        """The monotonic time a delayed key is due (as add_after returned it), if it waits."""
        with self._cond:
            return self._waiting.get(key)

    def due_in(self, key: Hashable) -> float | None:
        """Seconds until a delayed key is queued, None if it is not waiting."""
        with self._cond:
            due = self._waiting.get(key)
        return None if due is None else max(due - time.monotonic(), 0.0)

    def _promote_due_locked(self) -> float | None:
        """Move due delayed keys to the queue; returns seconds until the next one, if any."""
        now = time.monotonic()
        while self._heap:
            due, _, key = self._heap[0]
            if self._waiting.get(key) != due:
                heapq.heappop(self._heap)  # superseded by an earlier schedule
                continue
            if due > now:
                return due - now
            heapq.heappop(self._heap)
            del self._waiting[key]
            self._add_locked(key)
        return None

    def get(self, timeout: float | None = None) -> Hashable | None:
        """The next key to process, or None on shutdown or timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while True:
                next_due = self._promote_due_locked()
                if self._queue:
                    key = self._queue.popleft()
                    self._processing.add(key)
                    self._dirty.discard(key)
                    return key
                if self._shutdown:
                    return None
                wait = next_due
                if deadline is not None:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return None
                    wait = left if wait is None else min(wait, left)
                self._cond.wait(wait)

    def done(self, key: Hashable) -> None:
        with self._cond:
            self._processing.discard(key)
            if key in self._dirty:
                self._queue.append(key)
                self._cond.notify()

    def shutdown(self) -> None:
        with self._cond:
            self._shutdown = True
            self._cond.notify_all()

    def __len__(self) -> int:
        with self._cond:
            return len(self._queue)

    def idle(self) -> bool:
        """Nothing queued and nothing being processed (delayed keys do not count)."""
        with self._cond:
            return not self._queue and not self._processing
