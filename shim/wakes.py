"""Which JobSet an informer event wakes, and when.

Every watched kind delivers here: a JobSet's own events queue it at once; an event of something
it owns (found by the controller reference, or for pods by the jobset-name label) queues its
owner, an update after a short batch period so that one pass reads a burst of them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

from shim.owned import OwnedIndex, controller_ref, is_jobset_ref
from shim.watches import JOBSET_NAME_LABEL
from shim.workqueue import WorkQueue

Obj = dict[str, Any]
Key = tuple[str, str]


class Wakes:
    def __init__(
        self,
        queue: WorkQueue,
        owned: OwnedIndex,
        ours: Callable[[Obj], bool],
        batch_period: float,
        awaiting: Callable[[Key], bool],
        forget: Callable[[Key], None],
        jobsets_naming: Callable[[str, str], Iterable[Obj]],
    ) -> None:
        """`awaiting`: whether a JobSet's pass waits for its own writes to show; `forget`
        drops those of a deleted JobSet; `jobsets_naming(ns, name)`: the JobSets whose gang
        objects would take that name."""
        self.queue = queue
        self.owned = owned
        self.ours = ours
        self.batch_period = batch_period
        self.awaiting = awaiting
        self.forget = forget
        self.jobsets_naming = jobsets_naming
        # Per JobSet, the delayed wakes a pass answers (dropped once one runs): a batched
        # update's, and a put-off pass's fallback.
        self._batched: dict[Key, float] = {}
        self._put_off: dict[Key, float] = {}
        self._lock = threading.Lock()

    def on_jobset(self, etype: str, obj: Obj, old: Obj | None) -> None:
        meta = obj["metadata"]
        if etype == "DELETED":
            self.forget((meta["namespace"], meta["name"]))
        elif self.ours(obj):
            self.queue.add((meta["namespace"], meta["name"]))

    def on_owned(self, etype: str, obj: Obj, old: Obj | None) -> None:
        self.owned.update(obj, old, etype == "DELETED")
        ref = controller_ref(obj) or controller_ref(old)
        if ref is not None and is_jobset_ref(ref):
            # An owner is in its object's namespace: a reference never wakes another one's.
            self.wake((obj["metadata"].get("namespace", ""), str(ref.get("name", ""))), etype)

    def on_gang(self, etype: str, obj: Obj, old: Obj | None) -> None:
        self.on_owned(etype, obj, old)
        if is_jobset_ref(controller_ref(obj) or controller_ref(old)):
            return
        # Not a JobSet's: it may hold a name a JobSet's gang object needs. Its owner is not
        # ours to wake, but such a JobSet is: when the object goes, the refused pass can run.
        meta = obj["metadata"]
        ns = meta.get("namespace", "")
        for js in self.jobsets_naming(ns, meta["name"]):
            self.queue.add((ns, js["metadata"]["name"]))

    def on_pod(self, etype: str, obj: Obj, old: Obj | None) -> None:
        meta = obj["metadata"]
        name = (meta.get("labels") or {}).get(JOBSET_NAME_LABEL)
        if name:
            self.wake((meta.get("namespace", ""), name), etype)

    def wake(self, key: Key, etype: str) -> None:
        """Queue a JobSet for an event of something it owns. An update waits the batch period,
        the first one's due time holding, so a burst gets one pass: as its pods end, a Job's
        status moves 3-4 times within a few seconds (the Job controller's own 1 s batches),
        and a pass for each spent 3x upstream's CPU on the cores the Job controller needed
        (docs/performance.md). A create or a delete, or any event while the JobSet awaits
        its own writes, wakes it at once: that is a pass's next step (new Jobs once the old
        ones are gone), and a delay would only add to it."""
        if etype != "MODIFIED" or self.batch_period <= 0 or self.awaiting(key):
            self.queue.add(key)
            return
        self._wake_after(self._batched, key, self.batch_period)

    def put_off(self, key: Key, wait: float) -> None:
        """A pass found its JobSet's own writes not yet in the caches: the event that brings
        them wakes it again; this wake, `wait` seconds on, covers one that never comes."""
        self._wake_after(self._put_off, key, wait)

    def _wake_after(self, records: dict[Key, float], key: Key, delay: float) -> None:
        due = self.queue.add_after(key, delay)
        if due is not None:
            with self._lock:
                records[key] = due

    def claim(self, key: Key) -> None:
        """A pass of `key` starts: it reads what a batched or put-off wake was for, so those
        are dropped (whatever the pass leaves to do, it schedules itself: its requeue, a
        retry, another put-off)."""
        with self._lock:
            dues = [d for d in (self._batched.pop(key, None), self._put_off.pop(key, None))
                    if d is not None]
        for due in dues:
            self.queue.cancel_after(key, due)

    def pending(self) -> bool:
        """Whether a batched wake is still to fire (a pass some event asked for, not yet
        queued)."""
        with self._lock:
            batched = list(self._batched.items())
        return any(self.queue.scheduled(key) == due for key, due in batched)
