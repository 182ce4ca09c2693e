"""Events on a JobSet: the bodies client-go's recorder writes, and warnings told once a while.

The shim's own warnings (a name held by someone else, a plan refused, a decision refused) come
back on every retry of the pass until something changes; each is recorded at most once per
interval per key, so the JobSet's events say it without being flooded.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Hashable
from datetime import UTC, datetime

from kubernetes.client.exceptions import ApiException

from shim.event_correlator import EventCorrelator, Write
from shim.event_sink import EventSink, write_event
from shim.kube import Kube, Obj

log = logging.getLogger(__name__)

JOBSET_API_VERSION = "jobset.x-k8s.io/v1alpha2"
# events.k8s.io caps a note at 1 kB; client-go's recorder truncates to it, and so do we.
MAX_MESSAGE = 1024
# Past this many JobSets remembered, entries older than their interval (which would be told
# again anyway) are dropped.
_MAX_JOBSETS = 4096


class EventRecorder:
    def __init__(
        self,
        kube: Kube,
        controller_name: str,
        identity: str,
        may_write: Callable[[], None] = lambda: None,
        sink: EventSink | None = None,
    ) -> None:
        """`may_write` raises when this replica must not write (it is not the leader). With a
        `sink`, events are handed to it and written in the background; without, at once."""
        self.kube = kube
        self.sink = sink
        self.controller_name = controller_name
        self.identity = identity
        self.may_write = may_write
        self.events = kube.resource("v1", "Event")
        # Counts repeats, combines similar events and drops a flood, as client-go's recorder.
        self.correlator = EventCorrelator()
        # JobSet UID -> key -> (monotonic time told, interval)
        self._told: dict[str, dict[Hashable, tuple[float, float]]] = {}
        # The size past which the next prune runs. A prune walks every JobSet remembered; run
        # on every warning past _MAX_JOBSETS, a cluster with that many warned JobSets (24 h
        # intervals: invalid ones) paid a walk of all of them per warning. Set to twice what a
        # prune kept, each walk is paid for by as many new JobSets: O(1) a warning.
        self._prune_at = _MAX_JOBSETS
        self._lock = threading.Lock()

    def record(self, jobset: Obj, event_type: str, reason: str, message: str) -> bool:
        """Best effort: an event that cannot be written is logged, never raised. True when it
        was written (as a new event or a count), or handed to the sink; False when it was
        dropped (shim/event_correlator.py) or failed."""
        meta = jobset["metadata"]
        try:
            self.may_write()
            write: Write | None = self.correlator.correlate(
                self.body(jobset, event_type, reason, message))
            if write is None:
                log.debug("event %s on %s dropped: the JobSet's event budget is spent", reason,
                          meta["name"])
                return False
            if self.sink is not None:
                return self.sink.send(meta["namespace"], write)
            write_event(self.kube, self.events, meta["namespace"], write)
            return True
        except ApiException as exc:
            log.warning("event %s on %s not recorded: %s", reason, meta["name"], exc)
            return False

    def warn_once(
        self, jobset: Obj, reason: str, message: str, key: Hashable, interval: float
    ) -> bool:
        """A Warning, unless `key` was told on this JobSet less than `interval` s ago.

        True when it was due (whether or not the API server took it); the caller logs.
        """
        uid = jobset["metadata"].get("uid", "")
        now = time.monotonic()
        with self._lock:
            told = self._told.setdefault(uid, {})
            last = told.get(key)
            if last is not None and now - last[0] < last[1]:
                return False
            told[key] = (now, interval)
            if len(self._told) > self._prune_at:
                self._prune(now)
                self._prune_at = max(_MAX_JOBSETS, 2 * len(self._told))
        self.record(jobset, "Warning", reason, message)
        return True

    def forget(self, jobset_uid: str) -> None:
        """The JobSet is fine again: its next warning is told at once."""
        with self._lock:
            self._told.pop(jobset_uid, None)

    def _prune(self, now: float) -> None:
        for uid in list(self._told):
            told = {k: v for k, v in self._told[uid].items() if now - v[0] < v[1]}
            if told:
                self._told[uid] = told
            else:
                del self._told[uid]

    def body(self, jobset: Obj, event_type: str, reason: str, message: str) -> Obj:
        meta = jobset["metadata"]
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        if len(message) > MAX_MESSAGE:
            message = message[: MAX_MESSAGE - 3] + "..."
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                # client-go's recorder names events <object>.<unix nanoseconds in hex>.
                "name": f"{meta['name']}.{time.time_ns():x}",
                "namespace": meta["namespace"],
            },
            "involvedObject": {
                "apiVersion": jobset.get("apiVersion", JOBSET_API_VERSION),
                "kind": "JobSet",
                "name": meta["name"],
                "namespace": meta["namespace"],
                "uid": meta.get("uid", ""),
                "resourceVersion": meta.get("resourceVersion", ""),
            },
            "type": event_type,
            "reason": reason,
            "message": message,
            "action": "Reconciling",
            "source": {"component": self.controller_name},
            "reportingComponent": self.controller_name,
            "reportingInstance": self.identity,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        }
