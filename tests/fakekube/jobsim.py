"""A small simulated batch/v1 Job controller (and kubelet) for the fake cluster.

It moves Jobs through the states the real Job controller reports: a started Job gets
`startTime` and `active`, then `ready`; a test decides when it succeeds or fails, and the Job then
carries the conditions batch/v1 sets (SuccessCriteriaMet + Complete, FailureTarget + Failed, with
reasons, messages and lastTransitionTime). Suspending a Job drops its pods and sets
`Suspended=True`; resuming sets `Suspended=False`.

With `pods=True` each running Job owns `parallelism` Pod objects (blockOwnerDeletion), and a
simulated kubelet removes a deleted Pod only after `pod_termination_seconds`, so a Job deleted
in the foreground lingers with a deletionTimestamp the way it does on a real cluster.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from typing import Any

from .errors import ApiError
from .storage import Obj
from .store import Store, now_rfc3339

JOBS = "batch/v1/jobs"
PODS = "/v1/pods"
KUBELET_FINALIZER = "fakekube.test/kubelet"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"


def _condition(ctype: str, reason: str, message: str) -> dict[str, Any]:
    now = now_rfc3339()
    return {
        "type": ctype,
        "status": "True",
        "reason": reason,
        "message": message,
        "lastProbeTime": now,
        "lastTransitionTime": now,
    }


def _finished(job: Obj) -> bool:
    return any(
        c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
        for c in (job.get("status") or {}).get("conditions") or []
    )


class JobSimulator:
    def __init__(
        self,
        store: Store,
        auto_ready: bool = True,
        pods: bool = False,
        pod_termination_seconds: float = 0.2,
    ) -> None:
        self.store = store
        self.auto_ready = auto_ready
        self.pods = pods
        self.pod_termination_seconds = pod_termination_seconds
        self._jobs_rt = store.resources[JOBS]
        self._pods_rt = store.resources[PODS]
        self._work: queue.SimpleQueue[tuple[str, str, str] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._kubelet: threading.Thread | None = None
        self._stop = threading.Event()
        self._terminating: dict[tuple[str, str], float] = {}
        self._term_lock = threading.Lock()
        store.add_listener(self._on_event)

    def start(self) -> JobSimulator:
        self._thread = threading.Thread(target=self._loop, name="jobsim", daemon=True)
        self._thread.start()
        if self.pods:
            self._kubelet = threading.Thread(target=self._kubelet_loop, name="kubelet", daemon=True)
            self._kubelet.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._work.put(None)

    def __enter__(self) -> JobSimulator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- what tests call ------------------------------------------------------------------

    def succeed(self, namespace: str, name: str) -> None:
        def fn(job: Obj) -> None:
            status = job.setdefault("status", {})
            spec = job.get("spec") or {}
            done = spec.get("completions") or spec.get("parallelism") or 1
            status.update(
                {"active": 0, "ready": 0, "succeeded": done, "completionTime": now_rfc3339()}
            )
            if status.get("completedIndexes") is None and spec.get("completionMode") == "Indexed":
                status["completedIndexes"] = f"0-{done - 1}" if done > 1 else "0"
            conds = status.setdefault("conditions", [])
            conds.append(
                _condition(
                    "SuccessCriteriaMet",
                    "CompletionsReached",
                    "Reached expected number of succeeded pods",
                )
            )
            conds.append(
                _condition(
                    "Complete", "CompletionsReached", "Reached expected number of succeeded pods"
                )
            )

        self._finish(namespace, name, fn, "Succeeded")

    def fail(
        self,
        namespace: str,
        name: str,
        reason: str = "BackoffLimitExceeded",
        message: str = "Job has reached the specified backoff limit",
    ) -> None:
        def fn(job: Obj) -> None:
            status = job.setdefault("status", {})
            status.update({"active": 0, "ready": 0, "failed": (status.get("failed") or 0) + 1})
            conds = status.setdefault("conditions", [])
            conds.append(_condition("FailureTarget", reason, message))
            conds.append(_condition("Failed", reason, message))

        self._finish(namespace, name, fn, "Failed")

    def set_ready(self, namespace: str, name: str, ready: int | None = None) -> None:
        def fn(job: Obj) -> None:
            status = job.setdefault("status", {})
            status["ready"] = ready if ready is not None else status.get("active", 0)

        self.store.mutate(self._jobs_rt, namespace, name, fn, status=True)

    def _finish(self, namespace: str, name: str, fn: Any, phase: str) -> None:
        job = self.store.try_get(self._jobs_rt, namespace, name)
        if job is None:
            raise KeyError(f"job {namespace}/{name} does not exist")
        if _finished(job):
            raise ValueError(f"job {namespace}/{name} already finished")
        self.store.mutate(self._jobs_rt, namespace, name, fn, status=True)
        if self.pods:
            for pod in self._pods_of(job):
                self.store.mutate(
                    self._pods_rt,
                    namespace,
                    pod["metadata"]["name"],
                    lambda p: p.setdefault("status", {}).__setitem__("phase", phase),
                    status=True,
                )

    # ---- controller loop ------------------------------------------------------------------

    def _on_event(self, resource: str, event_type: str, obj: Obj) -> None:
        meta = obj["metadata"]
        if resource == JOBS and event_type != "DELETED":
            self._work.put(("job", meta["namespace"], meta["name"]))
        elif (
            resource == PODS
            and self.pods
            and event_type == "MODIFIED"
            and meta.get("deletionTimestamp")
        ):
            with self._term_lock:
                self._terminating.setdefault(
                    (meta["namespace"], meta["name"]),
                    time.monotonic() + self.pod_termination_seconds,
                )

    def _loop(self) -> None:
        while not self._stop.is_set():
            item = self._work.get()
            if item is None:
                return
            _, ns, name = item
            try:
                self._sync(ns, name)
            except Exception:  # noqa: BLE001 - a simulator must keep running
                import traceback

                traceback.print_exc()

    def _sync(self, namespace: str, name: str) -> None:
        job = self.store.try_get(self._jobs_rt, namespace, name)
        if job is None or job["metadata"].get("deletionTimestamp") or _finished(job):
            return
        spec = job.get("spec") or {}
        status = job.get("status") or {}
        conds = status.get("conditions") or []
        suspended_cond = next((c for c in conds if c.get("type") == "Suspended"), None)
        if spec.get("suspend"):
            if status.get("active") or not suspended_cond or suspended_cond.get("status") != "True":

                def suspend(j: Obj) -> None:
                    st = j.setdefault("status", {})
                    # As the real Job controller (seen on 1.37): a suspended Job has no
                    # startTime (resuming starts the clock again) and no `active` (omitempty).
                    st.pop("active", None)
                    st.pop("startTime", None)
                    st["ready"] = 0
                    cs = [c for c in st.get("conditions") or [] if c.get("type") != "Suspended"]
                    cs.append(_condition("Suspended", "JobSuspended", "Job suspended"))
                    st["conditions"] = cs

                self.store.mutate(self._jobs_rt, namespace, name, suspend, status=True)
                self._delete_pods(job)
            return
        parallelism = spec.get("parallelism", 1)
        want_ready = parallelism if self.auto_ready else status.get("ready", 0)
        resumed = suspended_cond is not None and suspended_cond.get("status") == "True"
        if (
            status.get("startTime")
            and status.get("active") == parallelism
            and status.get("ready", 0) == want_ready
            and not resumed
        ):
            if self.pods:
                self._ensure_pods(job)
            return

        def run(j: Obj) -> None:
            st = j.setdefault("status", {})
            if resumed:
                st["startTime"] = now_rfc3339()
            st.setdefault("startTime", now_rfc3339())
            st["active"] = parallelism
            st["ready"] = want_ready
            st.setdefault("succeeded", 0)
            st.setdefault("failed", 0)
            if resumed:
                cs = [c for c in st.get("conditions") or [] if c.get("type") != "Suspended"]
                cond = _condition("Suspended", "JobResumed", "Job resumed")
                cond["status"] = "False"
                cs.append(cond)
                st["conditions"] = cs

        self.store.mutate(self._jobs_rt, namespace, name, run, status=True)
        if self.pods:
            self._ensure_pods(job)

    # ---- pods and the kubelet -------------------------------------------------------------

    def _pods_of(self, job: Obj) -> list[Obj]:
        uid = job["metadata"]["uid"]
        items, _ = self.store.list(self._pods_rt, job["metadata"]["namespace"])
        return [
            p
            for p in items
            if any(r.get("uid") == uid for r in p["metadata"].get("ownerReferences") or [])
        ]

    def _ensure_pods(self, job: Obj) -> None:
        meta = job["metadata"]
        existing = {p["metadata"]["name"] for p in self._pods_of(job)}
        template = (job.get("spec") or {}).get("template") or {}
        indexed = (job.get("spec") or {}).get("completionMode") == "Indexed"
        for i in range((job.get("spec") or {}).get("parallelism", 1)):
            pod_name = f"{meta['name']}-{i}-pod"
            if pod_name in existing:
                continue
            labels = dict((template.get("metadata") or {}).get("labels") or {})
            annotations = dict((template.get("metadata") or {}).get("annotations") or {})
            if indexed:
                # As the real Job controller marks an Indexed Job's pods (seen on 1.37).
                labels[COMPLETION_INDEX] = annotations[COMPLETION_INDEX] = str(i)
            pod = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": pod_name,
                    "namespace": meta["namespace"],
                    "labels": labels,
                    "annotations": annotations,
                    "finalizers": [KUBELET_FINALIZER],
                    "ownerReferences": [
                        {
                            "apiVersion": "batch/v1",
                            "kind": "Job",
                            "name": meta["name"],
                            "uid": meta["uid"],
                            "controller": True,
                            "blockOwnerDeletion": True,
                        }
                    ],
                },
                "spec": template.get("spec") or {},
            }
            with contextlib.suppress(ApiError):  # a racing sync created it
                self.store.create(self._pods_rt, meta["namespace"], pod)

    def _delete_pods(self, job: Obj) -> None:
        if not self.pods:
            return
        for pod in self._pods_of(job):
            with contextlib.suppress(ApiError):  # already gone
                self.store.delete(
                    self._pods_rt,
                    pod["metadata"]["namespace"],
                    pod["metadata"]["name"],
                    {"propagationPolicy": "Background"},
                )

    def _kubelet_loop(self) -> None:
        while not self._stop.wait(0.02):
            now = time.monotonic()
            with self._term_lock:
                due = [k for k, t in self._terminating.items() if t <= now]
                for k in due:
                    del self._terminating[k]
            for ns, name in due:
                self.store.mutate(
                    self._pods_rt,
                    ns,
                    name,
                    lambda p: p["metadata"].__setitem__(
                        "finalizers",
                        [
                            f
                            for f in p["metadata"].get("finalizers") or []
                            if f != KUBELET_FINALIZER
                        ],
                    ),
                    status=False,
                )
