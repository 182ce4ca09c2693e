"""The plan guard: every action of a plan is checked against its JobSet before any is applied.

The decider is trusted to decide, not to act. Whoever answers on its address (a plaintext,
unauthenticated gRPC port, unless TLS is configured) would otherwise get the shim's rights, which
reach every watched namespace. So a plan is applied only when every action stays inside the
JobSet it was decided for:

- its namespace (the action's, and a created manifest's) is the JobSet's, or empty;
- its kind is the one its type allows (CreateJob: batch/v1 Job, CreateService: v1 Service,
  CreatePVC: v1 PersistentVolumeClaim, Workload/PodGroup/CompositePodGroup actions: the gang
  kinds the shim is configured for, UpdateStatus/DeleteJobSet/Event: this JobSet itself);
- what it creates is controlled by this JobSet (exactly one controller reference, to its UID),
  is named plainly (no generateName, no `/`), and is what the JobSet asked for where that is
  security-relevant: a Job's pod runs as the replicated Job's template says (service account,
  host namespaces, security contexts, containers, volumes), a Service is headless, a PVC is one
  of the JobSet's volumeClaimPolicies;
- what it deletes or patches is an object this JobSet controlled when the plan was decided, named
  with its UID;
- a status write keeps the counters from going back and names only this JobSet's replicated
  Jobs (shim/guard_status.py);
- a Service declares only ports the JobSet's containers declare, as `<protocol>-<port>`;
- a patch has exactly the shape the decider emits for its type (suspend, resume with scheduling
  directives, elastic parallelism, the headless Service's ports, gang counts, a Workload's
  template lists as they are but for their counts), so it cannot rewrite owner references, the
  namespace or the pod's identity; a resume that rewrites the Job's containers
  (MutablePodResourcesForSuspendedJobSets) changes nothing in them but requests and limits, and
  only to what the JobSet's template says;
- every identity a created object or a resume patch writes is this JobSet's: names, the
  jobset-name/-uid and Job labels and annotations, the pod's hostname and subdomain, the Job's
  selector, the Service's name and selector, the gang objects a pod joins
  (shim/guard_identity.py). Owned by this JobSet but labelled as another's, a pod would join
  the other's headless Service, DNS and gang.

A plan that breaks any rule is refused whole: a half-applied plan of a hostile decider is still
an attack, and one of a buggy decider leaves the JobSet in a state no pass planned. Pure: no I/O.
This module holds the scope rules; what a manifest or a patch may say is shim/guard_content.py,
and whom it may say it is, shim/guard_identity.py.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from decider_api.v1 import decider_pb2 as pb
from decider_client.render import ACTION_NAMES
from shim import guard_content as content
from shim import guard_status
from shim.guard_content import Broken, clip, q
from shim.guard_identity import Identity
from shim.owned import controller_ref, is_jobset_ref

Obj = dict[str, Any]

# metadata.name of every kind the decider creates: an RFC 1123 subdomain. Besides the API
# server's own check, this keeps `/`, `..` and empty names out of the request paths.
_DNS1123_SUBDOMAIN = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)

CREATES: dict[int, str] = {
    pb.ACTION_TYPE_CREATE_JOB: "Job",
    pb.ACTION_TYPE_CREATE_SERVICE: "Service",
    pb.ACTION_TYPE_CREATE_PVC: "PersistentVolumeClaim",
    pb.ACTION_TYPE_CREATE_WORKLOAD: "Workload",
    pb.ACTION_TYPE_CREATE_POD_GROUP: "PodGroup",
    pb.ACTION_TYPE_CREATE_COMPOSITE_POD_GROUP: "CompositePodGroup",
}
DELETES: dict[int, str] = {
    pb.ACTION_TYPE_DELETE_JOB: "Job",
    pb.ACTION_TYPE_DELETE_WORKLOAD: "Workload",
    pb.ACTION_TYPE_DELETE_POD_GROUP: "PodGroup",
    pb.ACTION_TYPE_DELETE_COMPOSITE_POD_GROUP: "CompositePodGroup",
}
PATCHES: dict[int, str] = {
    pb.ACTION_TYPE_SUSPEND_JOB: "Job",
    pb.ACTION_TYPE_RESUME_JOB: "Job",
    pb.ACTION_TYPE_PATCH_JOB: "Job",
    pb.ACTION_TYPE_PATCH_WORKLOAD: "Workload",
    pb.ACTION_TYPE_PATCH_POD_GROUP: "PodGroup",
    pb.ACTION_TYPE_UPDATE_SERVICE: "Service",
    pb.ACTION_TYPE_PATCH_COMPOSITE_POD_GROUP: "CompositePodGroup",
}
# Actions on the JobSet itself.
SELF = frozenset(
    {pb.ACTION_TYPE_UPDATE_STATUS, pb.ACTION_TYPE_DELETE_JOB_SET, pb.ACTION_TYPE_EVENT}
)
_CORE_KINDS = {"Job": "batch/v1", "Service": "v1", "PersistentVolumeClaim": "v1"}
_PROPAGATION = frozenset({"", "Foreground", "Background", "Orphan"})


@dataclass(frozen=True)
class Refusal:
    """Why a plan is refused: the first action that breaks a rule, and the rule."""

    index: int
    action: str
    target: str
    rule: str
    detail: str

    def __str__(self) -> str:
        return (
            f"actions[{self.index}] ({self.action} {self.target}) breaks rule {self.rule}: "
            f"{self.detail}"
        )


# ---- the guard -----------------------------------------------------------------------------


class PlanGuard:
    """Checks plans for one shim configuration; `gang_kinds` maps kind -> apiVersion."""

    def __init__(self, gang_kinds: Mapping[str, str]) -> None:
        self.kinds: dict[str, str] = {**_CORE_KINDS, **gang_kinds}

    def check(
        self, jobset: Obj, controlled: Iterable[Obj], plan: pb.DecideResponse
    ) -> Refusal | None:
        """The first rule the plan breaks, or None when every action may be applied.

        `controlled` is what the plan was decided on (the objects sent to Decide); only those
        this JobSet controls, in its namespace, may be deleted or patched.
        """
        ctx = _Context(self.kinds, jobset, controlled, plan)
        for index, action in enumerate(plan.actions):
            try:
                ctx.check(action)
            except Broken as broken:
                return Refusal(
                    index,
                    ACTION_NAMES.get(action.type, f"type {int(action.type)}"),
                    _target(action, ctx.namespace),
                    broken.rule,
                    broken.detail,
                )
        return None


def _gang_creates(plan: pb.DecideResponse) -> list[Obj]:
    """The manifests of the plan's Workload, CompositePodGroup and PodGroup creates that parse
    (one that does not is refused on its own)."""
    out = []
    for a in plan.actions:
        if a.type in (pb.ACTION_TYPE_CREATE_WORKLOAD, pb.ACTION_TYPE_CREATE_POD_GROUP,
                      pb.ACTION_TYPE_CREATE_COMPOSITE_POD_GROUP):
            try:
                obj = json.loads(a.object_json or "null")
            except ValueError:
                continue
            if isinstance(obj, dict):
                out.append(obj)
    return out


def _target(action: pb.Action, namespace: str) -> str:
    if not action.name:
        return "(no name)"
    return clip(f"{action.namespace or namespace}/{action.name}")


class _Context:
    def __init__(self, kinds: Mapping[str, str], jobset: Obj, controlled: Iterable[Obj],
                 plan: pb.DecideResponse) -> None:
        self.kinds = kinds
        self.jobset = jobset
        self.plan_status = plan.status
        meta = jobset.get("metadata") or {}
        self.namespace: str = meta.get("namespace", "")
        self.name: str = meta.get("name", "")
        self.uid: str = meta.get("uid", "")
        self.controlled: dict[tuple[str, str, str], Obj] = {}
        for obj in controlled:
            m = obj.get("metadata") or {}
            ref = controller_ref(obj)
            if (
                m.get("namespace") == self.namespace
                and is_jobset_ref(ref)
                and (ref or {}).get("uid") == self.uid
            ):
                self.controlled[(obj.get("apiVersion", ""), obj.get("kind", ""), m["name"])] = obj
        gang_kinds = {k: v for k, v in kinds.items() if k not in _CORE_KINDS}
        # A pod may join a gang object the JobSet controls, or one this plan creates (gang
        # objects come before the Jobs that join them, but a plan is judged whole).
        self.identity = Identity(jobset, gang_kinds,
                                 [*self.controlled.values(), *_gang_creates(plan)])

    # ---- per action -------------------------------------------------------------------------

    def check(self, a: pb.Action) -> None:
        t = a.type
        if t not in CREATES and t not in DELETES and t not in PATCHES and t not in SELF:
            raise Broken("action-type", f"unknown action type {int(t)}")
        if a.namespace and a.namespace != self.namespace:
            raise Broken(
                "namespace",
                f"namespace {q(a.namespace)} is not the JobSet's namespace {q(self.namespace)}",
            )
        self._fields(a)
        self._on_failure(a)
        if t in CREATES:
            self._create(a, CREATES[t])
        elif t in DELETES:
            self._target(a, DELETES[t])
            if a.propagation_policy not in _PROPAGATION:
                raise Broken(
                    "fields",
                    f"propagation policy {q(a.propagation_policy)} is not one of "
                    "Foreground, Background, Orphan",
                )
        elif t in PATCHES:
            target = self._target(a, PATCHES[t])
            patch = content.patch(t, a.patch_json)
            if t == pb.ACTION_TYPE_RESUME_JOB:
                content.resume_containers(patch, target, self.jobset)
                self.identity.resume(target, a.patch_json)
            if t in content.GANG_PATCHES:
                content.gang_lists(a.patch_json, target)
            if t == pb.ACTION_TYPE_UPDATE_SERVICE:
                self.identity.service_update(target)
                content.service_ports(patch["spec"]["ports"], self.jobset)
        else:
            self._self(a)

    def _fields(self, a: pb.Action) -> None:
        t = a.type
        carried = {
            "object": bool(a.object_json) and t not in CREATES,
            "patch": bool(a.patch_json) and t not in PATCHES,
            "clearStartTime": a.clear_start_time and t != pb.ACTION_TYPE_RESUME_JOB,
            "propagationPolicy": bool(a.propagation_policy)
            and t not in DELETES
            and t != pb.ACTION_TYPE_DELETE_JOB_SET,
            "event": a.HasField("event") and t != pb.ACTION_TYPE_EVENT,
            "status": a.HasField("status") and t != pb.ACTION_TYPE_UPDATE_STATUS,
            "onFailure": a.HasField("on_failure") and t != pb.ACTION_TYPE_RESUME_JOB,
        }
        extra = [name for name, bad in carried.items() if bad]
        if extra:
            raise Broken("fields", f"carries {', '.join(extra)}, which this type never does")

    def _kind(self, a: pb.Action, kind: str) -> str:
        """The apiVersion this action type allows for `kind`; the action may only repeat it."""
        api_version = self.kinds.get(kind)
        if api_version is None:
            raise Broken(
                "kind",
                f"{kind} is not a kind this shim manages (gang kinds: "
                f"{', '.join(sorted(set(self.kinds) - set(_CORE_KINDS))) or 'none'})",
            )
        if (a.kind and a.kind != kind) or (a.api_version and a.api_version != api_version):
            raise Broken(
                "kind",
                f"names {q(a.api_version)} {q(a.kind)}; this action type acts on "
                f"{api_version} {kind} only",
            )
        return api_version

    def _name(self, name: Any, what: str) -> None:
        if not isinstance(name, str) or not name:
            raise Broken("name", f"{what} is empty")
        if len(name) > 253 or not _DNS1123_SUBDOMAIN.match(name):
            raise Broken("name", f"{what} {q(name)} is not a lowercase RFC 1123 subdomain")

    # ---- creates ------------------------------------------------------------------------------

    def _create(self, a: pb.Action, kind: str) -> None:
        api_version = self._kind(a, kind)
        try:
            obj = json.loads(a.object_json or "null")
        except ValueError as exc:
            raise Broken("manifest", f"the manifest is not JSON: {exc}") from None
        if not isinstance(obj, dict) or not isinstance(obj.get("metadata"), dict):
            raise Broken("manifest", "the manifest is not an object with metadata")
        if obj.get("apiVersion") != api_version or obj.get("kind") != kind:
            raise Broken(
                "kind",
                f"the manifest is {q(obj.get('apiVersion'))} {q(obj.get('kind'))}; this action "
                f"type creates {api_version} {kind} only",
            )
        meta = obj["metadata"]
        if meta.get("namespace") not in (None, "", self.namespace):
            raise Broken(
                "namespace",
                f"the manifest's namespace {q(meta.get('namespace'))} is not the JobSet's "
                f"namespace {q(self.namespace)}",
            )
        if meta.get("generateName"):
            raise Broken("name", "the manifest sets generateName; the decider's names are fixed")
        self._name(meta.get("name"), "the manifest's name")
        if a.name and a.name != meta["name"]:
            raise Broken("name", f"the action names {q(a.name)}, the manifest {q(meta['name'])}")
        if kind == "PersistentVolumeClaim":
            # A retained claim (whenDeleted: Retain) outlives the JobSet: it has no owner at
            # all, or the garbage collector would delete the data with the JobSet. Any other
            # is the JobSet's, or it would outlive it.
            if content.pvc(obj, self.jobset):
                if obj["metadata"].get("ownerReferences"):
                    raise Broken("pvc", f"PVC {q(meta['name'])} is retained (whenDeleted: "
                                        "Retain) but has owner references: the garbage "
                                        "collector would delete it with the JobSet")
            else:
                self._owners(obj, kind)
        else:
            self._owners(obj, kind)
        if kind == "Job":
            content.pod_template(obj, self.jobset)
            self.identity.job(obj)
        elif kind == "Service":
            content.service(obj)
            content.service_ports(obj["spec"].get("ports"), self.jobset)
            self.identity.service(obj)
        elif kind == "PersistentVolumeClaim":
            self.identity.pvc(obj)
        elif kind == "Workload":
            self.identity.workload(obj)
        elif kind == "CompositePodGroup":
            self.identity.composite_pod_group(obj)
        else:
            self.identity.pod_group(obj)

    def _owners(self, obj: Obj, kind: str) -> None:
        refs = obj["metadata"].get("ownerReferences")
        if not isinstance(refs, list) or not all(isinstance(r, dict) for r in refs):
            raise Broken("owner", "the manifest has no controller reference to the JobSet")
        controllers = [r for r in refs if r.get("controller") is True]
        if len(controllers) != 1:
            raise Broken(
                "owner",
                f"the manifest has {len(controllers)} controller references; it must "
                "have exactly one, to the JobSet",
            )
        ref = controllers[0]
        if not (is_jobset_ref(ref) and ref.get("name") == self.name and ref.get("uid") == self.uid):
            raise Broken(
                "owner",
                f"the controller reference is {q(ref.get('kind'))} {q(ref.get('name'))} "
                f"(uid {q(ref.get('uid'))}), not JobSet {q(self.name)} (uid {q(self.uid)})",
            )
        workload = self.kinds.get("Workload")
        for other in refs:
            if other is ref:
                continue
            # A PodGroup of the 1.36 API also names its Workload, without controller or
            # blockOwnerDeletion; nothing else carries a second owner.
            if not (
                kind == "PodGroup"
                and other.get("kind") == "Workload"
                and other.get("apiVersion") == workload
                and not other.get("blockOwnerDeletion")
            ):
                raise Broken(
                    "owner",
                    f"the manifest has another owner reference, to {q(other.get('kind'))} "
                    f"{q(other.get('name'))}",
                )

    # ---- deletes and patches ----------------------------------------------------------------

    def _target(self, a: pb.Action, kind: str) -> Obj:
        api_version = self._kind(a, kind)
        self._name(a.name, "the object's name")
        obj = self.controlled.get((api_version, kind, a.name))
        if obj is None:
            raise Broken(
                "controlled",
                f"{kind} {clip(self.namespace + '/' + a.name)} is not an object JobSet "
                f"{q(self.name)} controls",
            )
        uid = obj["metadata"].get("uid", "")
        if not a.uid:
            # Without the precondition the call would hit whatever holds the name by then.
            raise Broken("uid", "names no UID precondition")
        if a.uid != uid:
            raise Broken("uid", f"UID {q(a.uid)} is not the UID of the JobSet's {kind} ({q(uid)})")
        return obj

    # ---- the JobSet itself --------------------------------------------------------------------

    def _self(self, a: pb.Action) -> None:
        if (a.kind and a.kind != "JobSet") or (
            a.api_version and not is_jobset_ref({"kind": "JobSet", "apiVersion": a.api_version})
        ):
            raise Broken("jobset", f"names {q(a.api_version)} {q(a.kind)}, not the JobSet")
        required = a.type == pb.ACTION_TYPE_DELETE_JOB_SET
        if (a.name or required) and a.name != self.name:
            raise Broken("jobset", f"names JobSet {q(a.name)}, not {q(self.name)}")
        if (a.uid or required) and a.uid != self.uid:
            raise Broken("jobset", f"names UID {q(a.uid)}, not the JobSet's {q(self.uid)}")
        if a.type == pb.ACTION_TYPE_DELETE_JOB_SET and a.propagation_policy not in _PROPAGATION:
            raise Broken("fields", f"propagation policy {q(a.propagation_policy)} is unknown")
        if a.type == pb.ACTION_TYPE_UPDATE_STATUS:
            guard_status.check(self.jobset, a.status if a.HasField("status")
                               else self.plan_status)
        # An empty type is recorded as Normal, as the applier always did.
        if a.type == pb.ACTION_TYPE_EVENT and a.event.type not in ("", "Normal", "Warning"):
            raise Broken("event", f"event type {q(a.event.type)} is not Normal or Warning")

    def _on_failure(self, a: pb.Action) -> None:
        if a.HasField("on_failure") and a.on_failure.type not in ("", "Normal", "Warning"):
            raise Broken("event", f"event type {q(a.on_failure.type)} is not Normal or Warning")
