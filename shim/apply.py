"""Plan -> API calls, idempotently.

- Creates use the deterministic names the plan carries; AlreadyExists means done only when the
  existing object is controlled by the manifest's controller (the same owner UID). Otherwise the
  name belongs to someone else: a Warning event goes on the JobSet and the pass fails, so it is
  retried and never adopts the object (the next observation carries it to the decider). Services
  and PVCs are the exception: upstream uses whichever object holds the name, and so do we.
- Deletes carry the object's UID as a precondition: NotFound, or a UID mismatch (the name now
  belongs to a newer object), means the object meant is gone, which is done too.
- Patches (suspend, resume, elastic, the headless Service's ports, gang minCount) are JSON merge
  patches carrying the UID as a precondition.
- The status goes through the status subresource with the resourceVersion the plan was decided
  on; a 409 means the plan was decided on a stale observation, and the pass is retried. A plan
  may write twice: an UpdateStatus carrying its own status is a write upstream makes mid-pass
  (the execution attempt counted on a resume, stored before any Job resumes); the plan's final
  write then goes at the resourceVersion that write returned.
- Events are best effort and, as upstream, follow the status write they belong to. An action
  that names an event for its failure (on_failure: FailedResourcePropagation on a resume whose
  new container resources the API server refuses) records it, with the API server's error,
  before the pass fails.

Runs of creates or deletes of one type are sent in parallel (bounded), like upstream's
parallel Job creation; everything else keeps the plan's order.
"""

from __future__ import annotations

import contextvars
import copy
import json
import logging
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from kubernetes.client.exceptions import ApiException

from decider_api.v1 import decider_pb2 as pb
from decider_client.render import ACTION_NAMES, status_to_dict
from shim.event_sink import EventSink
from shim.events import JOBSET_API_VERSION, EventRecorder
from shim.expectations import Expectations
from shim.kube import Kube, Obj
from shim.kube_errors import status_message, status_reason
from shim.kube_resource import Resource
from shim.owned import controller_ref

log = logging.getLogger(__name__)

__all__ = ["JOBSET_API_VERSION", "Applier", "ApplyResult", "NotLeader", "StaleObservation"]

_CREATES = {
    pb.ACTION_TYPE_CREATE_JOB,
    pb.ACTION_TYPE_CREATE_SERVICE,
    pb.ACTION_TYPE_CREATE_PVC,
    pb.ACTION_TYPE_CREATE_WORKLOAD,
    pb.ACTION_TYPE_CREATE_POD_GROUP,
    pb.ACTION_TYPE_CREATE_COMPOSITE_POD_GROUP,
}
_DELETES = {
    pb.ACTION_TYPE_DELETE_JOB,
    pb.ACTION_TYPE_DELETE_WORKLOAD,
    pb.ACTION_TYPE_DELETE_POD_GROUP,
    pb.ACTION_TYPE_DELETE_COMPOSITE_POD_GROUP,
    pb.ACTION_TYPE_DELETE_JOB_SET,
}
_PATCHES = {
    pb.ACTION_TYPE_SUSPEND_JOB,
    pb.ACTION_TYPE_RESUME_JOB,
    pb.ACTION_TYPE_PATCH_JOB,
    pb.ACTION_TYPE_PATCH_WORKLOAD,
    pb.ACTION_TYPE_PATCH_POD_GROUP,
    pb.ACTION_TYPE_UPDATE_SERVICE,
    pb.ACTION_TYPE_PATCH_COMPOSITE_POD_GROUP,
}
# Kinds of the objects delete/patch actions name when the action does not say. The gang kinds'
# versions are the shim's (--scheduling-api-version / --gang-target); these are fallbacks.
_DEFAULT_KIND = {
    pb.ACTION_TYPE_DELETE_JOB: ("batch/v1", "Job"),
    pb.ACTION_TYPE_SUSPEND_JOB: ("batch/v1", "Job"),
    pb.ACTION_TYPE_RESUME_JOB: ("batch/v1", "Job"),
    pb.ACTION_TYPE_PATCH_JOB: ("batch/v1", "Job"),
    pb.ACTION_TYPE_DELETE_WORKLOAD: ("scheduling.k8s.io/v1alpha2", "Workload"),
    pb.ACTION_TYPE_DELETE_POD_GROUP: ("scheduling.k8s.io/v1alpha2", "PodGroup"),
    pb.ACTION_TYPE_PATCH_WORKLOAD: ("scheduling.k8s.io/v1alpha2", "Workload"),
    pb.ACTION_TYPE_PATCH_POD_GROUP: ("scheduling.k8s.io/v1alpha2", "PodGroup"),
    pb.ACTION_TYPE_DELETE_COMPOSITE_POD_GROUP: ("scheduling.k8s.io/v1alpha3", "CompositePodGroup"),
    pb.ACTION_TYPE_PATCH_COMPOSITE_POD_GROUP: ("scheduling.k8s.io/v1alpha3", "CompositePodGroup"),
    pb.ACTION_TYPE_DELETE_JOB_SET: (JOBSET_API_VERSION, "JobSet"),
    pb.ACTION_TYPE_UPDATE_SERVICE: ("v1", "Service"),
}
GANG_KINDS = ("Workload", "PodGroup", "CompositePodGroup")
# The decider's reason for refusing a same-named gang object; a create that meets one uses it
# too, so an operator finds both under one reason.
# Upstream's controller uses an existing headless Service or PVC of the right name whoever owns
# it (it looks the Service up by name; a retained PVC is meant to outlive its JobSet), so for these
# kinds a name that is taken is done, as there.
_ADOPTS_BY_NAME = frozenset({"Service", "PersistentVolumeClaim"})

GANG_CONFLICT_REASON = "GangObjectConflict"
CONFLICT_REASON = "ObjectConflict"
# Upstream records a Job create that failed (AlreadyExists included) under this reason; tools
# that watch for it see the same event from the shim.
JOB_CONFLICT_REASON = "JobCreationFailed"
# A conflicting create fails every retry of the pass until the object goes; one event per
# object per this many seconds says it without flooding the JobSet's events.
CONFLICT_EVENT_INTERVAL = 60.0


class StaleObservation(Exception):
    """The status write met a newer JobSet: observe again and decide again."""


class NotLeader(Exception):
    """This replica is not (or no longer) the leader: it must not write."""


class CreateConflict(Exception):
    """A create met a same-named object that another owner controls: it is not ours to adopt."""


@dataclass
class ApplyResult:
    applied: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    # The JobSet's resourceVersion after this plan's last status write ("" before any).
    status_version: str = ""

    def count(self, bucket: dict[str, int], action: pb.Action) -> None:
        name = ACTION_NAMES.get(action.type, "Unspecified")
        bucket[name] = bucket.get(name, 0) + 1


class Applier:
    def __init__(
        self,
        kube: Kube,
        controller_name: str,
        identity: str,
        is_leader: Callable[[], bool] = lambda: True,
        max_parallel: int = 16,
        gang_kinds: Mapping[str, str] | None = None,
        background_events: bool = False,
        expectations: Expectations | None = None,
    ) -> None:
        """`background_events`: events are written by a thread of their own (shim/event_sink.py)
        and a pass does not wait for them; otherwise each is written in its turn.
        `expectations` learns of every write made, so that the next pass waits for the caches
        to show them (shim/expectations.py)."""
        self.kube = kube
        self.expectations = expectations
        self.controller_name = controller_name
        self.identity = identity
        self.is_leader = is_leader
        self._pool = ThreadPoolExecutor(max_workers=max_parallel, thread_name_prefix="apply")
        self.jobsets = kube.resource(JOBSET_API_VERSION, "JobSet")
        self.sink = EventSink(kube.for_events(), self._guard) if background_events else None
        self.recorder = EventRecorder(kube, controller_name, identity, self._guard, self.sink)
        # kind -> apiVersion of the gang objects, for actions that do not name their version.
        self.default_kinds = dict(_DEFAULT_KIND)
        for action_types, kind in (
            (
                (pb.ACTION_TYPE_DELETE_WORKLOAD, pb.ACTION_TYPE_PATCH_WORKLOAD),
                "Workload",
            ),
            (
                (pb.ACTION_TYPE_DELETE_POD_GROUP, pb.ACTION_TYPE_PATCH_POD_GROUP),
                "PodGroup",
            ),
            (
                (pb.ACTION_TYPE_DELETE_COMPOSITE_POD_GROUP,
                 pb.ACTION_TYPE_PATCH_COMPOSITE_POD_GROUP),
                "CompositePodGroup",
            ),
        ):
            api_version = (gang_kinds or {}).get(kind)
            if api_version:
                for t in action_types:
                    self.default_kinds[t] = (api_version, kind)

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        if self.sink is not None:
            self.sink.close()

    def apply(self, jobset: Obj, plan: pb.DecideResponse) -> ApplyResult:
        result = ApplyResult()
        actions = list(plan.actions)
        i = 0
        while i < len(actions):
            action = actions[i]
            j = i + 1
            if action.type in _CREATES or action.type in _DELETES:
                while j < len(actions) and actions[j].type == action.type:
                    j += 1
            batch = actions[i:j]
            if len(batch) == 1:
                self._one(jobset, plan, batch[0], result)
            else:
                # Each in a copy of this pass's context: the API calls' spans are children of
                # the reconcile span, whichever pool thread makes them.
                futures = [
                    self._pool.submit(contextvars.copy_context().run, self._one, jobset, plan, a,
                                      result)
                    for a in batch
                ]
                errors = [f.exception() for f in futures]
                first = next((e for e in errors if e is not None), None)
                if first is not None:
                    raise first
            i = j
        return result

    def _guard(self) -> None:
        if not self.is_leader():
            raise NotLeader("not the leader; refusing to write")

    def _one(self, jobset: Obj, plan: pb.DecideResponse, action: pb.Action, r: ApplyResult) -> None:
        try:
            self._apply_one(jobset, plan, action, r)
        except ApiException as exc:
            if action.HasField("on_failure"):
                event = action.on_failure
                message = event.message.replace("{error}", status_message(exc))
                self.recorder.record(jobset, event.type or "Warning", event.reason, message)
            raise

    def _apply_one(self, jobset: Obj, plan: pb.DecideResponse, action: pb.Action,
                   r: ApplyResult) -> None:
        self._guard()
        meta = jobset["metadata"]
        # Always the JobSet's namespace: the plan guard (shim/guard.py) refuses a plan naming
        # another, and should it ever be bypassed, nothing here reaches outside the namespace.
        namespace = meta["namespace"]
        kind = ACTION_NAMES.get(action.type, "Unspecified")
        if action.type in _CREATES:
            obj = json.loads(action.object_json)
            res = self.kube.resource(
                obj.get("apiVersion") or action.api_version, obj.get("kind") or action.kind
            )
            try:
                created = self.kube.create(res, namespace, obj) or {}
                if self.expectations is not None:
                    self.expectations.created(jobset, {"kind": res.kind, **created})
                r.count(r.applied, action)
            except ApiException as exc:
                if exc.status == 409 and status_reason(exc) == "AlreadyExists":
                    self._already_exists(jobset, res, namespace, obj)
                    log.debug("%s %s/%s already exists", kind, namespace, action.name)
                    r.count(r.skipped, action)
                    return
                if res.kind == "Job":
                    # Upstream records every failed Job create at once, with the API server's
                    # own words; the pass fails and is retried as before.
                    name = obj.get("metadata", {}).get("name", action.name)
                    self.recorder.warn_once(
                        jobset, JOB_CONFLICT_REASON, _job_creation_failed(name,
                                                                          status_message(exc)),
                        ("Job", name, "error"), CONFLICT_EVENT_INTERVAL)
                raise
        elif action.type in _DELETES:
            api_version, obj_kind = self.default_kinds[action.type]
            res = self.kube.resource(action.api_version or api_version, action.kind or obj_kind)
            try:
                self.kube.delete(
                    res,
                    namespace,
                    action.name,
                    action.uid,
                    action.propagation_policy or "Foreground",
                )
                if self.expectations is not None:
                    self.expectations.deleted(jobset, res.kind, action.name, action.uid)
                r.count(r.applied, action)
            except ApiException as exc:
                if exc.status == 404 or (exc.status == 409 and action.uid):
                    # Gone, or the name now belongs to a newer object: the one meant is gone.
                    log.debug(
                        "%s %s/%s already gone (%s)", kind, namespace, action.name, exc.status
                    )
                    r.count(r.skipped, action)
                    return
                raise
        elif action.type in _PATCHES:
            # PatchWorkload/PatchPodGroup (a gang minCount changed in place) are applied like
            # the Job patches.
            api_version, obj_kind = self.default_kinds.get(action.type, ("batch/v1", "Job"))
            res = self.kube.resource(action.api_version or api_version, action.kind or obj_kind)
            precondition: Obj = {"metadata": {"uid": action.uid}} if action.uid else {}
            before = self.expectations.cached_version(jobset, res.kind, action.name) \
                if self.expectations is not None else ""
            try:
                if action.clear_start_time:
                    patch = {"status": {"startTime": None}}
                    patch.update(precondition)
                    self.kube.merge_patch(res, namespace, action.name, patch, "status")
                if action.patch_json:
                    patch = json.loads(action.patch_json)
                    if precondition:
                        patch.setdefault("metadata", {})["uid"] = action.uid
                    self.kube.merge_patch(res, namespace, action.name, patch)
                if self.expectations is not None:
                    self.expectations.patched(jobset, res.kind, action.name, before)
                r.count(r.applied, action)
            except ApiException as exc:
                if exc.status == 404 or (
                    exc.status == 409
                    and status_reason(exc) != "AlreadyExists"
                    and action.uid
                    and "UID" in (exc.body or "")
                ):
                    r.count(r.skipped, action)
                    return
                raise
        elif action.type == pb.ACTION_TYPE_UPDATE_STATUS:
            body = copy.deepcopy(jobset)
            body["status"] = status_to_dict(
                action.status if action.HasField("status") else plan.status)
            body["metadata"]["resourceVersion"] = (r.status_version or plan.resource_version
                                                   or meta["resourceVersion"])
            try:
                written = self.kube.replace_status(
                    self.jobsets, meta["namespace"], meta["name"], body) or {}
                version = str((written.get("metadata") or {}).get("resourceVersion", ""))
                if self.expectations is not None:
                    self.expectations.status_written(
                        jobset, body["metadata"]["resourceVersion"], version)
                r.status_version = version
                r.count(r.applied, action)
            except ApiException as exc:
                if exc.status == 409:
                    raise StaleObservation(
                        f"jobset {meta['namespace']}/{meta['name']} changed since "
                        f"resourceVersion {body['metadata']['resourceVersion']}"
                    ) from exc
                if exc.status == 404:
                    r.count(r.skipped, action)
                    return
                raise
        elif action.type == pb.ACTION_TYPE_EVENT:
            event = action.event
            if self.recorder.record(jobset, event.type or "Normal", event.reason, event.message):
                r.count(r.applied, action)
        else:
            log.warning("unknown action type %s for %s: ignored", action.type, action.name)
            r.count(r.skipped, action)

    def _already_exists(self, jobset: Obj, res: Resource, namespace: str, manifest: Obj) -> None:
        """A create met AlreadyExists: done if the object is ours, else CreateConflict.

        "Ours" is controlled by the owner UID of the manifest's controller reference: the
        object a previous pass created. A manifest without a controller reference has no owner
        to compare, and a create of it stays done on AlreadyExists.
        """
        want = _controller_uid(manifest)
        if not want or res.kind in _ADOPTS_BY_NAME:
            return
        name = manifest["metadata"]["name"]
        try:
            existing = self.kube.get(res, namespace, name)
        except ApiException as exc:
            if exc.status == 404:
                # Deleted since the create: neither ours nor anyone's; the retry creates it.
                raise CreateConflict(
                    f"{res.kind} {namespace}/{name} was deleted while being created"
                ) from exc
            raise
        have = _controller_uid(existing)
        if have == want:
            return
        holder = controller_ref(existing)
        by = (
            f"controlled by {holder.get('kind', '?')} {holder.get('name', '?')} "
            f"(uid {holder.get('uid', '')})"
            if holder
            else "not controlled by anyone"
        )
        js = jobset["metadata"]["name"]
        message = (
            f"{res.kind} {name} already exists and is {by}, not by JobSet {js}; refusing to "
            "adopt it"
        )
        reason = (GANG_CONFLICT_REASON if res.kind in GANG_KINDS
                  else JOB_CONFLICT_REASON if res.kind == "Job" else CONFLICT_REASON)
        # A Job's event is worded as upstream's (tools match it); the log says who holds it.
        event = _job_creation_failed(name, f'jobs.batch "{name}" already exists') \
            if res.kind == "Job" else message
        if self.recorder.warn_once(
            jobset, reason, event, (res.kind, name, have), CONFLICT_EVENT_INTERVAL
        ):
            log.warning("%s/%s: %s", namespace, js, message)
        raise CreateConflict(message)


def _job_creation_failed(name: str, error: str) -> str:
    """Upstream's JobCreationFailed message (spec §1.12)."""
    return f'job "{name}" creation failed with error: {error}'


def _controller_uid(obj: Obj) -> str:
    ref = controller_ref(obj)
    return str(ref.get("uid") or "") if ref else ""
