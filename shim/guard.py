"""The plan guard: every action of a plan is checked against its JobSet before any is applied.

The decider is trusted to decide, not to act. Whoever answers on its address (a plaintext,
unauthenticated gRPC port, unless TLS is configured) would otherwise get the shim's rights, which
reach every watched namespace. So a plan is applied only when every action stays inside the
JobSet it was decided for:

- its namespace (the action's, and a created manifest's) is the JobSet's, or empty;
- its kind is the one its type allows (CreateJob: batch/v1 Job, CreateService: v1 Service,
  CreatePVC: v1 PersistentVolumeClaim, Workload/PodGroup actions: the gang kinds the shim is
  configured for, UpdateStatus/DeleteJobSet/Event: this JobSet itself);
- what it creates is controlled by this JobSet (exactly one controller reference, to its UID),
  is named plainly (no generateName, no `/`), and is what the JobSet asked for where that is
  security-relevant: a Job's pod runs as the replicated Job's template says (service account,
  host namespaces, security contexts, containers, volumes), a Service is headless, a PVC is one
  of the JobSet's volumeClaimPolicies;
- what it deletes or patches is an object this JobSet controlled when the plan was decided, named
  with its UID;
- a patch has exactly the shape the decider emits for its type (suspend, resume with scheduling
  directives, elastic parallelism, gang minCount), so it cannot rewrite owner references, the
  namespace or the pod's identity.

A plan that breaks any rule is refused whole: a half-applied plan of a hostile decider is still
an attack, and one of a buggy decider leaves the JobSet in a state no pass planned. Pure: no I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from decider.v1 import decider_pb2 as pb
from decider_client.render import ACTION_NAMES

Obj = dict[str, Any]

JOBSET_GROUP = "jobset.x-k8s.io"
REPLICATED_JOB_NAME = "jobset.sigs.k8s.io/replicatedjob-name"
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
}
DELETES: dict[int, str] = {
    pb.ACTION_TYPE_DELETE_JOB: "Job",
    pb.ACTION_TYPE_DELETE_WORKLOAD: "Workload",
    pb.ACTION_TYPE_DELETE_POD_GROUP: "PodGroup",
}
PATCHES: dict[int, str] = {
    pb.ACTION_TYPE_SUSPEND_JOB: "Job",
    pb.ACTION_TYPE_RESUME_JOB: "Job",
    pb.ACTION_TYPE_PATCH_JOB: "Job",
    pb.ACTION_TYPE_PATCH_WORKLOAD: "Workload",
    pb.ACTION_TYPE_PATCH_POD_GROUP: "PodGroup",
}
# Actions on the JobSet itself.
SELF = frozenset(
    {pb.ACTION_TYPE_UPDATE_STATUS, pb.ACTION_TYPE_DELETE_JOB_SET, pb.ACTION_TYPE_EVENT}
)
_CORE_KINDS = {"Job": "batch/v1", "Service": "v1", "PersistentVolumeClaim": "v1"}
_PROPAGATION = frozenset({"", "Foreground", "Background", "Orphan"})

# Pod-spec fields the decider copies from the replicated Job's template untouched, and that
# decide who the pod runs as, where, and with what: a created Job must carry the template's.
# (The decider does change labels, annotations, subdomain, nodeSelector, tolerations,
# schedulingGates, schedulingGroup and volumes: those are not in this list; volumes are checked
# on their own.)
POD_FIELDS_FROM_TEMPLATE = (
    "serviceAccountName",
    "serviceAccount",
    "automountServiceAccountToken",
    "nodeName",
    "hostNetwork",
    "hostPID",
    "hostIPC",
    "hostUsers",
    "shareProcessNamespace",
    "securityContext",
    "runtimeClassName",
    "priorityClassName",
    "containers",
    "initContainers",
    "ephemeralContainers",
)
# What a headless Service may set: nothing that routes traffic (externalIPs, a load balancer, an
# ExternalName) or allocates a cluster IP.
_SERVICE_FIELDS = frozenset(
    {
        "clusterIP",
        "clusterIPs",
        "selector",
        "publishNotReadyAddresses",
        "ports",
        "type",
        "ipFamilies",
        "ipFamilyPolicy",
    }
)


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


class _Broken(Exception):
    def __init__(self, rule: str, detail: str) -> None:
        super().__init__(detail)
        self.rule = rule
        self.detail = detail


# ---- shapes of the patches the decider emits -----------------------------------------------

Shape = Mapping[str, "Shape"] | Callable[[Any], bool]


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _is_str_map(v: Any) -> bool:
    return isinstance(v, dict) and all(isinstance(x, str) for x in v.values())


def _list_of(shape: Shape) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, list) and all(_fits(item, shape) for item in v)


def _is_policy(v: Any) -> bool:
    return v == {"basic": {}} or _fits(v, {"gang": {"minCount": _is_int}}, required=True)


_TOLERATION: Shape = {
    "key": lambda v: isinstance(v, str),
    "operator": lambda v: isinstance(v, str),
    "value": lambda v: isinstance(v, str),
    "effect": lambda v: isinstance(v, str),
    "tolerationSeconds": lambda v: v is None or isinstance(v, int),
}
# decider/core/suspend.py suspend_jobs and resume_patch; decider/core/decide.py
# _sync_job_scaling; decider/core/gang/plan.py _min_count_patch.
PATCH_SHAPES: dict[int, tuple[Shape, Callable[[Obj], bool]]] = {
    pb.ACTION_TYPE_SUSPEND_JOB: (
        {"spec": {"suspend": lambda v: v is True}},
        lambda p: p["spec"].get("suspend") is True,
    ),
    pb.ACTION_TYPE_RESUME_JOB: (
        {
            "spec": {
                "suspend": lambda v: v is False,
                "template": {
                    "metadata": {"labels": _is_str_map, "annotations": _is_str_map},
                    "spec": {
                        "nodeSelector": _is_str_map,
                        "tolerations": _list_of(_TOLERATION),
                        "schedulingGates": _list_of({"name": lambda v: isinstance(v, str)}),
                    },
                },
            }
        },
        lambda p: p["spec"].get("suspend") is False,
    ),
    pb.ACTION_TYPE_PATCH_JOB: (
        {"spec": {"parallelism": _is_int, "completions": _is_int}},
        lambda p: bool(p["spec"]),
    ),
}
_GANG_PATCH: tuple[Shape, Callable[[Obj], bool]] = (
    {
        "spec": {
            "minMember": _is_int,
            "schedulingPolicy": _is_policy,
            "podGroupTemplates": _list_of(
                {"name": lambda v: isinstance(v, str), "schedulingPolicy": _is_policy}
            ),
            "podGroups": _list_of({"name": lambda v: isinstance(v, str), "policy": _is_policy}),
        }
    },
    lambda p: len(p["spec"]) == 1,
)
PATCH_SHAPES[pb.ACTION_TYPE_PATCH_WORKLOAD] = _GANG_PATCH
PATCH_SHAPES[pb.ACTION_TYPE_PATCH_POD_GROUP] = _GANG_PATCH


def _fits(value: Any, shape: Shape, required: bool = False) -> bool:
    """`value` has only the keys `shape` names, each fitting (all of them when `required`)."""
    if callable(shape):
        return bool(shape(value))
    if not isinstance(value, dict):
        return False
    if required and set(value) != set(shape):
        return False
    return all(key in shape and _fits(item, shape[key]) for key, item in value.items())


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
        ctx = _Context(self.kinds, jobset, controlled)
        for index, action in enumerate(plan.actions):
            try:
                ctx.check(action)
            except _Broken as broken:
                return Refusal(
                    index,
                    ACTION_NAMES.get(action.type, f"type {int(action.type)}"),
                    _target(action, ctx.namespace),
                    broken.rule,
                    broken.detail,
                )
        return None


def _target(action: pb.Action, namespace: str) -> str:
    return f"{action.namespace or namespace}/{action.name}" if action.name else "(no name)"


def controller_ref(obj: Obj) -> Obj | None:
    refs = (obj.get("metadata") or {}).get("ownerReferences")
    for ref in refs if isinstance(refs, list) else ():
        if isinstance(ref, dict) and ref.get("controller") is True:
            return ref
    return None


def is_jobset_ref(ref: Obj | None) -> bool:
    return (
        isinstance(ref, dict)
        and ref.get("kind") == "JobSet"
        and str(ref.get("apiVersion", "")).split("/")[0] == JOBSET_GROUP
    )


class _Context:
    def __init__(self, kinds: Mapping[str, str], jobset: Obj, controlled: Iterable[Obj]) -> None:
        self.kinds = kinds
        self.jobset = jobset
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

    # ---- per action -------------------------------------------------------------------------

    def check(self, a: pb.Action) -> None:
        t = a.type
        if t not in CREATES and t not in DELETES and t not in PATCHES and t not in SELF:
            raise _Broken("action-type", f"unknown action type {int(t)}")
        if a.namespace and a.namespace != self.namespace:
            raise _Broken(
                "namespace",
                f"namespace {a.namespace!r} is not the JobSet's namespace {self.namespace!r}",
            )
        self._fields(a)
        if t in CREATES:
            self._create(a, CREATES[t])
        elif t in DELETES:
            self._target(a, DELETES[t])
            if a.propagation_policy not in _PROPAGATION:
                raise _Broken(
                    "fields",
                    f"propagation policy {a.propagation_policy!r} is not one of "
                    "Foreground, Background, Orphan",
                )
        elif t in PATCHES:
            self._target(a, PATCHES[t])
            self._patch(a)
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
        }
        extra = [name for name, bad in carried.items() if bad]
        if extra:
            raise _Broken("fields", f"carries {', '.join(extra)}, which this type never does")

    def _kind(self, a: pb.Action, kind: str) -> str:
        """The apiVersion this action type allows for `kind`; the action may only repeat it."""
        api_version = self.kinds.get(kind)
        if api_version is None:
            raise _Broken(
                "kind",
                f"{kind} is not a kind this shim manages (gang kinds: "
                f"{', '.join(sorted(set(self.kinds) - set(_CORE_KINDS))) or 'none'})",
            )
        if (a.kind and a.kind != kind) or (a.api_version and a.api_version != api_version):
            raise _Broken(
                "kind",
                f"names {a.api_version or '?'} {a.kind or '?'}; this action type acts on "
                f"{api_version} {kind} only",
            )
        return api_version

    def _name(self, name: Any, what: str) -> None:
        if not isinstance(name, str) or not name:
            raise _Broken("name", f"{what} is empty")
        if len(name) > 253 or not _DNS1123_SUBDOMAIN.match(name):
            raise _Broken("name", f"{what} {name!r} is not a lowercase RFC 1123 subdomain")

    # ---- creates ------------------------------------------------------------------------------

    def _create(self, a: pb.Action, kind: str) -> None:
        api_version = self._kind(a, kind)
        try:
            obj = json.loads(a.object_json or "null")
        except ValueError as exc:
            raise _Broken("manifest", f"the manifest is not JSON: {exc}") from None
        if not isinstance(obj, dict) or not isinstance(obj.get("metadata"), dict):
            raise _Broken("manifest", "the manifest is not an object with metadata")
        if obj.get("apiVersion") != api_version or obj.get("kind") != kind:
            raise _Broken(
                "kind",
                f"the manifest is {obj.get('apiVersion')!r} {obj.get('kind')!r}; this action "
                f"type creates {api_version} {kind} only",
            )
        meta = obj["metadata"]
        if meta.get("namespace") not in (None, "", self.namespace):
            raise _Broken(
                "namespace",
                f"the manifest's namespace {meta.get('namespace')!r} is not the JobSet's "
                f"namespace {self.namespace!r}",
            )
        if meta.get("generateName"):
            raise _Broken("name", "the manifest sets generateName; the decider's names are fixed")
        self._name(meta.get("name"), "the manifest's name")
        if a.name and a.name != meta["name"]:
            raise _Broken("name", f"the action names {a.name!r}, the manifest {meta['name']!r}")
        if kind == "PersistentVolumeClaim":
            self._pvc(obj)
        else:
            self._owners(obj, kind)
        if kind == "Job":
            self._pod_template(obj)
        elif kind == "Service":
            self._service(obj)

    def _owners(self, obj: Obj, kind: str) -> None:
        refs = obj["metadata"].get("ownerReferences")
        if not isinstance(refs, list) or not all(isinstance(r, dict) for r in refs):
            raise _Broken("owner", "the manifest has no controller reference to the JobSet")
        controllers = [r for r in refs if r.get("controller") is True]
        if len(controllers) != 1:
            raise _Broken(
                "owner",
                f"the manifest has {len(controllers)} controller references; it must "
                "have exactly one, to the JobSet",
            )
        ref = controllers[0]
        if not (is_jobset_ref(ref) and ref.get("name") == self.name and ref.get("uid") == self.uid):
            raise _Broken(
                "owner",
                f"the controller reference is {ref.get('kind')!r} {ref.get('name')!r} "
                f"(uid {ref.get('uid')!r}), not JobSet {self.name!r} (uid {self.uid!r})",
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
                raise _Broken(
                    "owner",
                    f"the manifest has another owner reference, to {other.get('kind')!r} "
                    f"{other.get('name')!r}",
                )

    def _pvc(self, obj: Obj) -> None:
        templates = {
            f"{name}-{self.name}": t.get("spec") or {} for name, t in _claim_templates(self.jobset)
        }
        name = obj["metadata"]["name"]
        if name not in templates:
            raise _Broken(
                "pvc",
                f"PVC {name!r} is not one of the JobSet's volumeClaimPolicies "
                f"({', '.join(sorted(templates)) or 'none'})",
            )
        if (obj.get("spec") or {}) != templates[name]:
            raise _Broken("pvc", f"PVC {name!r} has a spec other than its template's")
        # A retained claim (whenDeleted: Retain) outlives the JobSet: it has no owner at all.
        if obj["metadata"].get("ownerReferences"):
            self._owners(obj, "PersistentVolumeClaim")

    def _service(self, obj: Obj) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            raise _Broken("service", "the Service has no spec")
        extra = sorted(set(spec) - _SERVICE_FIELDS)
        if extra:
            raise _Broken("service", f"the Service sets {', '.join(extra)}; it must be headless")
        if spec.get("clusterIP") != "None" or spec.get("type", "ClusterIP") != "ClusterIP":
            raise _Broken("service", "the Service is not headless (clusterIP None, ClusterIP)")

    def _pod_template(self, job: Obj) -> None:
        labels = job["metadata"].get("labels") or {}
        rjob_name = labels.get(REPLICATED_JOB_NAME) if isinstance(labels, dict) else None
        rjob = next((r for r in _replicated_jobs(self.jobset) if r.get("name") == rjob_name), None)
        if rjob is None:
            raise _Broken(
                "pod-template",
                f"the Job's {REPLICATED_JOB_NAME} {rjob_name!r} is not a "
                "replicated Job of the JobSet",
            )
        want = _dig(rjob, "template", "spec", "template", "spec")
        have = _dig(job, "spec", "template", "spec")
        for field in POD_FIELDS_FROM_TEMPLATE:
            if have.get(field) != want.get(field):
                raise _Broken(
                    "pod-template",
                    f"the pod's {field} is {have.get(field)!r}; replicated Job {rjob_name!r} "
                    f"says {want.get(field)!r}",
                )
        allowed = [v for v in want.get("volumes") or [] if isinstance(v, dict)]
        claims = {name for name, _ in _claim_templates(self.jobset)}
        for volume in have.get("volumes") or []:
            if not isinstance(volume, dict):
                raise _Broken("pod-template", "the pod has a volume that is not an object")
            claim = {"persistentVolumeClaim": {"claimName": f"{volume.get('name')}-{self.name}"}}
            if volume in allowed or (
                volume.get("name") in claims and volume == {"name": volume["name"], **claim}
            ):
                continue
            raise _Broken(
                "pod-template",
                f"the pod's volume {volume.get('name')!r} is neither in replicated Job "
                f"{rjob_name!r}'s template nor one of the JobSet's volumeClaimPolicies",
            )

    # ---- deletes and patches ----------------------------------------------------------------

    def _target(self, a: pb.Action, kind: str) -> None:
        api_version = self._kind(a, kind)
        self._name(a.name, "the object's name")
        obj = self.controlled.get((api_version, kind, a.name))
        if obj is None:
            raise _Broken(
                "controlled",
                f"{kind} {self.namespace}/{a.name} is not an object JobSet {self.name!r} controls",
            )
        uid = obj["metadata"].get("uid", "")
        if not a.uid:
            # Without the precondition the call would hit whatever holds the name by then.
            raise _Broken("uid", "names no UID precondition")
        if a.uid != uid:
            raise _Broken("uid", f"UID {a.uid!r} is not the UID of the JobSet's {kind} ({uid!r})")

    def _patch(self, a: pb.Action) -> None:
        try:
            patch = json.loads(a.patch_json or "null")
        except ValueError as exc:
            raise _Broken("patch", f"the patch is not JSON: {exc}") from None
        shape, complete = PATCH_SHAPES[a.type]
        if not (_fits(patch, shape) and isinstance(patch.get("spec"), dict) and complete(patch)):
            raise _Broken(
                "patch",
                f"the patch {_short(patch)} is not of the shape a {ACTION_NAMES[a.type]} has",
            )

    # ---- the JobSet itself --------------------------------------------------------------------

    def _self(self, a: pb.Action) -> None:
        if (a.kind and a.kind != "JobSet") or (
            a.api_version and a.api_version.split("/")[0] != JOBSET_GROUP
        ):
            raise _Broken("jobset", f"names {a.api_version} {a.kind}, not the JobSet")
        required = a.type == pb.ACTION_TYPE_DELETE_JOB_SET
        if (a.name or required) and a.name != self.name:
            raise _Broken("jobset", f"names JobSet {a.name!r}, not {self.name!r}")
        if (a.uid or required) and a.uid != self.uid:
            raise _Broken("jobset", f"names UID {a.uid!r}, not the JobSet's {self.uid!r}")
        if a.type == pb.ACTION_TYPE_DELETE_JOB_SET and a.propagation_policy not in _PROPAGATION:
            raise _Broken("fields", f"propagation policy {a.propagation_policy!r} is unknown")
        if a.type == pb.ACTION_TYPE_EVENT and a.event.type not in ("Normal", "Warning"):
            raise _Broken("event", f"event type {a.event.type!r} is not Normal or Warning")


def _dig(obj: Any, *keys: str) -> Obj:
    for key in keys:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj if isinstance(obj, dict) else {}


def _replicated_jobs(jobset: Obj) -> list[Obj]:
    rjobs = _dig(jobset, "spec").get("replicatedJobs")
    return [r for r in rjobs if isinstance(r, dict)] if isinstance(rjobs, list) else []


def _claim_templates(jobset: Obj) -> list[tuple[str, Obj]]:
    out: list[tuple[str, Obj]] = []
    policies = _dig(jobset, "spec").get("volumeClaimPolicies")
    for policy in policies if isinstance(policies, list) else ():
        templates = policy.get("templates") if isinstance(policy, dict) else None
        for t in templates if isinstance(templates, list) else ():
            name = _dig(t, "metadata").get("name")
            if isinstance(name, str) and name:
                out.append((name, t))
    return out


def _short(value: Any, limit: int = 200) -> str:
    text = json.dumps(value, separators=(",", ":"), sort_keys=True)
    return text if len(text) <= limit else text[: limit - 3] + "..."
