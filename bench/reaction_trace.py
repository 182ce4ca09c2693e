"""Timestamps of one restart (or creation) along its way through the fake API server and the shim.

Three vantage points, one clock (time.monotonic):
- the API server: the fake store's listener (an object written, marked for deletion, gone) and
  its audit log (when a request arrived);
- the shim's Job informer: when a watch event reached its handler;
- the shim's pass: a key queued and taken by a worker, the Decide call, the Job creates, the
  limiter's waits.

The shim is observed through wrappers on its instance (queue, reconcile, decider client, Kube
client, informer handler); nothing in shim/ knows about the bench. `Trace.restart_stages` turns
one restart's records into its stages.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

ATTEMPT = "jobset.sigs.k8s.io/restart-attempt"
JOBS = "batch/v1/jobs"
JOBSETS = "jobset.x-k8s.io/v1alpha2/jobsets"


@dataclass(frozen=True)
class Rec:
    t: float
    what: str
    name: str  # a Job's name, or a JobSet's (the work queue's key)
    attempt: str = ""
    value: Any = None


@dataclass
class Trace:
    recs: list[Rec] = field(default_factory=list)
    # Seconds each request waited for a token of the client-side limiter.
    limiter_waits: list[float] = field(default_factory=list)
    _local: threading.local = field(default_factory=threading.local)

    def add(self, what: str, name: str, attempt: str = "", value: Any = None) -> None:
        # list.append is atomic: records from every thread, no lock on the hot paths.
        self.recs.append(Rec(time.monotonic(), what, name, attempt, value))

    # ---- where the records come from ------------------------------------------------------

    def on_store(self, resource: str, etype: str, obj: dict) -> None:
        """The fake store's listener (called under its lock: only cheap reads here)."""
        meta = obj["metadata"]
        if resource == JOBS:
            attempt = (meta.get("labels") or {}).get(ATTEMPT, "")
            if etype == "ADDED":
                self.add("job-added", meta["name"], attempt)
            elif etype == "DELETED":
                self.add("job-gone", meta["name"], attempt)
            elif meta.get("deletionTimestamp"):
                self.add("job-deleting", meta["name"], attempt)
        elif resource == JOBSETS and etype == "MODIFIED":
            status = obj.get("status") or {}
            self.add("jobset-written", meta["name"], value=status.get("restarts"))
            if any(c.get("type") in ("Completed", "Failed") and c.get("status") == "True"
                   for c in status.get("conditions") or ()):
                self.add("jobset-finished", meta["name"])

    def attach(self, shim: Any) -> None:
        """Wrap the shim's queue, pass, decider client, API client and Job informer."""
        queue, local = shim.queue, self._local
        add, get = queue.add, queue.get

        def queue_add(key: tuple[str, str]) -> None:
            self.add("queued", key[1])
            add(key)

        def queue_get(timeout: float | None = None) -> Any:
            key = get(timeout)
            if key is not None:
                self.add("dequeued", key[1])
            return key

        queue.add, queue.get = queue_add, queue_get
        reconcile = shim.reconcile

        def traced_reconcile(key: tuple[str, str]) -> float:
            local.key = key[1]
            try:
                return reconcile(key)
            except Exception as exc:
                self.add("pass-failed", key[1], value=type(exc).__name__)
                raise

        shim.reconcile = traced_reconcile
        decide = shim.decider.decide

        def traced_decide(request: Any, **kwargs: Any) -> Any:
            name = getattr(local, "key", "")
            self.add("decide-start", name)
            plan = decide(request, **kwargs)
            self.add("decide-end", name, value=len(plan.actions))
            return plan

        shim.decider.decide = traced_decide
        kube = shim.kube
        create, delete = kube.create, kube.delete

        def traced_create(res: Any, namespace: str, body: dict) -> dict:
            meta = body.get("metadata") or {}
            if res.kind == "Job":
                self.add("create-sent", meta.get("name", ""),
                         (meta.get("labels") or {}).get(ATTEMPT, ""))
            return create(res, namespace, body)

        def traced_delete(res: Any, namespace: str, name: str, *args: Any, **kw: Any) -> Any:
            if res.kind == "Job":
                self.add("delete-sent", name)
            return delete(res, namespace, name, *args, **kw)

        kube.create, kube.delete = traced_create, traced_delete
        if kube.limiter is not None:
            acquire = kube.limiter.acquire

            def traced_acquire() -> float:
                waited = acquire()
                self.limiter_waits.append(waited)
                return waited

            kube.limiter.acquire = traced_acquire
        expectations = getattr(shim, "expectations", None)
        if expectations is not None:
            unseen = expectations.unseen

            def traced_unseen(key: tuple[str, str], jobset: dict | None) -> float | None:
                wait = unseen(key, jobset)
                if wait is not None:
                    self.add("put-off", key[1], value=wait)
                return wait

            expectations.unseen = traced_unseen
        for informer in shim.informers:
            if informer.resource.plural == "jobs":
                informer.handler = self._seen(informer.handler)

    def _seen(self, handler: Callable[[str, dict, dict | None], None]) -> Callable:
        def traced(etype: str, obj: dict, old: dict | None) -> None:
            meta = obj["metadata"]
            attempt = (meta.get("labels") or {}).get(ATTEMPT, "")
            self.add(f"seen-{etype.lower()}", meta["name"], attempt)
            handler(etype, obj, old)

        return traced

    # ---- reading a restart back ----------------------------------------------------------

    def since(self, t0: float) -> list[Rec]:
        # Records are appended in time order (monotonic, one process): bisect would do, but a
        # restart's records are few and recent.
        out = []
        for rec in reversed(self.recs):
            if rec.t < t0:
                break
            out.append(rec)
        out.reverse()
        return out

    def restart_stages(self, t0: float, jobset: str, jobs: list[str], old: str,
                       new: str, deletes_received: dict[str, float]) -> dict[str, Any]:
        """One restart's stages, in seconds; t0 is when the failure was written.

        Per Job: its old incarnation gone from the store -> the shim's informer delivers the
        DELETED event -> a worker takes the JobSet's key -> Decide answers -> the create is sent
        -> the new Job is in the store. The pass that creates a Job is the last one to take the
        key before the create was sent.
        """
        recs = self.since(t0)

        def first(pred: Callable[[Rec], bool], after: float = t0) -> Rec | None:
            return next((r for r in recs if r.t >= after and pred(r)), None)

        def last(pred: Callable[[Rec], bool], before: float) -> Rec | None:
            return next((r for r in reversed(recs) if r.t <= before and pred(r)), None)

        failed = jobs[0]
        seen = first(lambda r: r.what == "seen-modified" and r.name == failed)
        recorded = first(lambda r: r.what == "jobset-written" and r.name == jobset
                         and r.value == int(new))
        out: dict[str, Any] = {
            "observed": seen.t - t0 if seen else None,
            "recorded": _d(seen, recorded),
            "deletes": (max(deletes_received.values()) - recorded.t
                        if recorded and deletes_received else None),
            "jobs": [],
        }
        for name in jobs:
            gone = first(lambda r, n=name: r.what == "job-gone" and r.name == n
                         and r.attempt == old)
            added = first(lambda r, n=name: r.what == "job-added" and r.name == n
                          and r.attempt == new)
            sent = first(lambda r, n=name: r.what == "create-sent" and r.name == n
                         and r.attempt == new)
            if gone is None or added is None or sent is None:
                out["jobs"].append(None)
                continue
            job_seen = first(lambda r, n=name: r.what == "seen-deleted" and r.name == n
                             and r.attempt == old, gone.t)
            decided = last(lambda r: r.what == "decide-end" and r.name == jobset, sent.t)
            taken = last(lambda r: r.what == "dequeued" and r.name == jobset,
                         decided.t if decided else sent.t)
            out["jobs"].append({
                "deleted": gone.t - deletes_received.get(name, gone.t),
                "gone_to_created": added.t - gone.t,
                "seen": _d(gone, job_seen),
                "queue": _d(job_seen, taken),
                "decide": _d(taken, decided),
                "apply": _d(decided, sent),
                "create": added.t - sent.t,
                # Passes that ran on this JobSet between the Job going and its re-creation.
                "passes": sum(1 for r in recs if r.what == "decide-start" and r.name == jobset
                              and gone.t <= r.t <= sent.t),
                "created_at": added.t,
            })
        return out


def _d(a: Rec | None, b: Rec | None) -> float | None:
    return None if a is None or b is None else b.t - a.t
