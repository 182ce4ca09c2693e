"""Events written from a thread of their own, as client-go's event broadcaster writes them.

A pass hands its events over and goes on: it never waits for them. Their requests go through a
client of their own (the same connections, a token bucket of the same rate and burst; client-go's
recorder also has a client of its own), so a restart's events never take the tokens its deletes
and creates need: at client-go's 5 QPS, two events ahead of a create cost that create 0.4 s.

Events stay best effort. What reaches the sink has passed the correlator (shim/event_correlator.py:
a repeat is a count on the first event, a flood of one JobSet's events is cut to its budget); at
most `max_queued` wait (client-go's broadcaster keeps 1,000 and drops the rest); one that cannot
be written is logged. One thread writes them all, in the order they
were handed over, so a JobSet's events keep their order, and the events a pass hands over after
its status write (upstream records them only once the status is written) still follow it.
"""

from __future__ import annotations

import collections
import contextvars
import logging
import threading
import time
from collections.abc import Callable

from kubernetes.client.exceptions import ApiException

from shim.event_correlator import Write
from shim.kube import Kube
from shim.kube_resource import Resource

log = logging.getLogger(__name__)

MAX_QUEUED = 1000


def write_event(kube: Kube, events: Resource, namespace: str, write: Write) -> None:
    """Create the event, or count it on the one already written; an event counted after it
    expired is created again, as client-go's recorder does."""
    if write.patch is not None:
        try:
            kube.merge_patch(events, namespace, write.body["metadata"]["name"], write.patch)
            return
        except ApiException as exc:
            if exc.status != 404:
                raise
    kube.create(events, namespace, write.body)


class EventSink:
    def __init__(
        self,
        kube: Kube,
        may_write: Callable[[], None] = lambda: None,
        max_queued: int = MAX_QUEUED,
    ) -> None:
        """`may_write` raises when this replica must not write (it is no longer the leader)."""
        self.kube = kube
        self.may_write = may_write
        self.max_queued = max_queued
        self.events = kube.resource("v1", "Event")
        self.dropped = 0
        # (the sender's context, so the write is traced under its pass; namespace; the write)
        self._pending: collections.deque[tuple[contextvars.Context, str, Write]] = (
            collections.deque())
        self._busy = 0  # handed over and not yet written (queued or being written)
        self._cond = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="event-sink", daemon=True)
        self._thread.start()

    def send(self, namespace: str, write: Write) -> bool:
        """Queue an event; False when it was dropped (the queue is full, or closed)."""
        body = write.body
        with self._cond:
            if self._closed or len(self._pending) >= self.max_queued:
                self.dropped += 1
                full = not self._closed
            else:
                self._pending.append((contextvars.copy_context(), namespace, write))
                self._busy += 1
                self._cond.notify_all()
                return True
        if full:
            log.warning("event %s on %s dropped: %d events already wait", body.get("reason"),
                        (body.get("involvedObject") or {}).get("name"), self.max_queued)
        return False

    def flush(self, timeout: float) -> bool:
        """Wait until every event handed over was written (or given up); False on timeout."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._busy:
                left = deadline - time.monotonic()
                if left <= 0 or not self._thread.is_alive():
                    return False
                self._cond.wait(left)
            return True

    def close(self, timeout: float = 2.0) -> None:
        """Write what waits (for at most `timeout`), then stop taking events."""
        self.flush(timeout)
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join(timeout)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._closed:
                    self._cond.wait()
                if not self._pending:
                    return
                context, namespace, write = self._pending.popleft()
            try:
                context.run(self._write, namespace, write)
            finally:
                with self._cond:
                    self._busy -= 1
                    self._cond.notify_all()

    def _write(self, namespace: str, write: Write) -> None:
        body = write.body
        what = f"{body.get('reason')} on {(body.get('involvedObject') or {}).get('name')}"
        try:
            self.may_write()
            write_event(self.kube, self.events, namespace, write)
        except Exception as exc:  # noqa: BLE001 - best effort: the writer outlives any failure
            log.warning("event %s not recorded: %s", what, exc)
