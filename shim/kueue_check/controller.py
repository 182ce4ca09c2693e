"""The check's controller: AdmissionChecks and Workloads watched, each waiting Workload judged.

One key per Workload in a work queue, as the shim's JobSets: a Workload that waits on one of our
checks is judged (the JobSet read fresh from the API server, Validate and PodSets asked, the
verdict applied to its entry), by a few worker threads. An apply the API server refuses as a
conflict (Kueue changed the Workload meanwhile) is retried from the cache at once, anything else
on a backoff. Our AdmissionChecks are marked Active as they appear.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import grpc

from decider_api.v1 import decider_pb2 as pb
from decider_client import observe
from shim.admission import admission_view
from shim.events import EventRecorder
from shim.informer import Informer
from shim.kube import Kube, Obj
from shim.kube_errors import KubeError
from shim.kueue_check import workloads as wl
from shim.kueue_check.verdict import READY, CallFailed, Verdict, judge
from shim.workqueue import WorkQueue

log = logging.getLogger(__name__)

APPLY_PATCH = "application/apply-patch+yaml"
DEFAULT_CONTROLLER_NAME = "jobset-decider.x-k8s.io/admission-check"
AC_KEY = "admissionchecks"


@dataclass
class CheckConfig:
    controller_name: str = DEFAULT_CONTROLLER_NAME
    namespaces: list[str] | None = None
    feature_gates: dict[str, bool] = field(default_factory=dict)
    gang_api_version: str = ""
    decider_timeout: float = 10.0
    # requeueAfterSeconds when the decider cannot answer and gave no pushback.
    retry_after: int = 30
    workers: int = 2


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def ask(decider: Any, config: CheckConfig, jobset: Obj, workload_pod_sets: list[Obj]) -> Verdict:
    """Validate the JobSet as admission would (a create, under the cluster's gates), then, if
    valid, its PodSets; the verdict on the Workload's pod sets. A call that fails is part of
    the verdict (Retry or Rejected), never an exception."""
    name = f"{jobset['metadata'].get('namespace')}/{jobset['metadata'].get('name')}"
    request = pb.ValidateRequest(object_json=json.dumps(admission_view(jobset),
                                                        separators=(",", ":")))
    request.options.feature_gates.update(config.feature_gates)
    validated: pb.ValidateResponse | CallFailed
    try:
        validated = decider.validate(request, timeout=config.decider_timeout)
    except grpc.RpcError as exc:
        validated = CallFailed.of("Validate", exc)
    pod_sets: pb.PodSetsResponse | CallFailed | None = None
    if isinstance(validated, pb.ValidateResponse) and validated.valid:
        try:
            pod_sets = decider.pod_sets(
                observe.build_pod_sets_request(jobset, config.gang_api_version,
                                               config.feature_gates),
                timeout=config.decider_timeout)
        except grpc.RpcError as exc:
            pod_sets = CallFailed.of("PodSets", exc)
    return judge(name, validated, pod_sets, workload_pod_sets, config.retry_after)


class AdmissionCheckController:
    def __init__(self, kube: Kube, decider: Any, config: CheckConfig,
                 clock: Callable[[], str] = now_rfc3339) -> None:
        self.kube = kube
        self.decider = decider
        self.config = config
        self.clock = clock
        self.queue = WorkQueue()
        self.checks_res = kube.resource(wl.KUEUE_API_VERSION, "AdmissionCheck")
        self.workloads_res = kube.resource(wl.KUEUE_API_VERSION, "Workload")
        self.jobsets_res = kube.resource(wl.JOBSET_API_VERSION, "JobSet")
        self.checks = Informer(kube, self.checks_res, None, self._on_check)
        self.workloads = Informer(kube, self.workloads_res, config.namespaces, self._on_workload)
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()
        # Verdicts written, by state (for logs and tests).
        self.written: dict[str, int] = {}
        # The verdict told on the JobSet too: Kueue resets a Rejected or Retry entry to Pending
        # within a second, and only a rejection's message survives in Kueue's own event.
        self.recorder = EventRecorder(kube, config.controller_name, config.controller_name)

    # ---- events ---------------------------------------------------------------------------

    def _ours(self) -> set[str]:
        return wl.ours(self.checks.items(), self.config.controller_name)

    def _on_check(self, etype: str, obj: Obj, old: Obj | None) -> None:
        if etype == "DELETED":
            return
        if (obj.get("spec") or {}).get("controllerName") == self.config.controller_name:
            self.queue.add((AC_KEY, obj["metadata"]["name"]))
            # Workloads that waited on a check we did not know yet.
            for item in self.workloads.items():
                self._on_workload("MODIFIED", item, None)

    def _on_workload(self, etype: str, obj: Obj, old: Obj | None) -> None:
        if etype != "DELETED" and wl.pending(obj, self._ours()):
            meta = obj["metadata"]
            self.queue.add((meta["namespace"], meta["name"]))

    # ---- lifecycle ------------------------------------------------------------------------

    def start(self, sync_timeout: float = 60.0) -> None:
        # Checks first: a Workload is ours only through them.
        self.checks.start()
        if not self.checks.wait_synced(sync_timeout):
            raise RuntimeError("AdmissionChecks: cache did not sync")
        self.workloads.start()
        if not self.workloads.wait_synced(sync_timeout):
            raise RuntimeError("Workloads: cache did not sync")
        for i in range(self.config.workers):
            t = threading.Thread(target=self._work, name=f"kueue-check-{i}", daemon=True)
            t.start()
            self._threads.append(t)

    def stop(self) -> None:
        self._stop.set()
        self.queue.shutdown()
        self.checks.stop()
        self.workloads.stop()
        for t in self._threads:
            t.join(5)

    @property
    def healthy(self) -> bool:
        return self.checks.alive and self.workloads.alive and all(
            t.is_alive() for t in self._threads)

    def _work(self) -> None:
        while not self._stop.is_set():
            key = self.queue.get()
            if key is None:
                return
            try:
                self.reconcile(key)
                self.queue.forget(key)
            except KubeError as exc:
                if exc.status == 409:
                    log.info("%s: changed meanwhile; judging it again", key)
                    self.queue.add_after(key, 0.05)
                else:
                    log.warning("%s: %s; retrying", key, exc)
                    self.queue.add_rate_limited(key, 0.5, 60.0)
            except Exception:  # noqa: BLE001 - one Workload must not stop the worker
                log.exception("%s: failed; retrying", key)
                self.queue.add_rate_limited(key, 0.5, 60.0)
            finally:
                self.queue.done(key)

    # ---- one key --------------------------------------------------------------------------

    def reconcile(self, key: Hashable) -> None:
        first, name = key  # type: ignore[misc]
        if first == AC_KEY:
            check = self.checks.get("", name)
            patch = wl.active_patch(check, self.clock()) if check is not None else None
            if patch is not None:
                self._apply(self.checks_res.path(None, name, "status"), patch)
            return
        workload = self.workloads.get(first, name)
        if workload is None:
            return
        checks = wl.pending(workload, self._ours())
        if not checks:
            return
        judged = self.verdict(workload)
        if judged is None:
            return
        verdict, jobset = judged
        for check in checks:
            self._apply(self.workloads_res.path(first, name, "status"),
                        wl.state_patch(workload, check, verdict, self.clock()))
            self.written[verdict.state] = self.written.get(verdict.state, 0) + 1
            log.info("Workload %s/%s: check %s %s: %s", first, name, check, verdict.state,
                     verdict.message)
            if jobset is not None:
                after = (f" (requeued after {verdict.requeue_after_seconds}s)"
                         if verdict.requeue_after_seconds is not None else "")
                self.recorder.record(jobset, "Normal" if verdict.state == READY else "Warning",
                                     f"AdmissionCheck{verdict.state}",
                                     f"{check} on Workload {name}: {verdict.message}{after}")

    def verdict(self, workload: Obj) -> tuple[Verdict, Obj | None] | None:
        """The check's answer for this Workload, and its JobSet; None when there is nothing to
        judge yet."""
        meta = workload["metadata"]
        owner = wl.jobset_owner(workload)
        if owner is None:
            return Verdict(READY, "not a JobSet's Workload: nothing for the decider to check"), None
        try:
            jobset = self.kube.get(self.jobsets_res, meta["namespace"], owner)
        except KubeError as exc:
            if exc.status == 404:
                return None  # the JobSet is gone; its Workload follows it
            raise
        return ask(self.decider, self.config, jobset,
                   list((workload.get("spec") or {}).get("podSets") or [])), jobset

    def _apply(self, path: str, body: Obj) -> None:
        self.kube.request("PATCH", path, {"fieldManager": self.config.controller_name.replace(
            "/", "-"), "force": "true"}, body, APPLY_PATCH)
