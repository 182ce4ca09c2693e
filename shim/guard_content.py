"""What a created manifest or a patch may say: the content rules of the plan guard.

The scope rules (namespace, kind, owner, which objects) are in shim/guard.py. These say what a
plan may put inside the JobSet: the decider copies a replicated Job's pod template as it is, so
a created Job's pod must run as the template says; a Service must be headless; a PVC must be one
of the JobSet's volumeClaimPolicies; a patch must have exactly the shape the decider emits.
Pure: no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from decider_api.v1 import decider_pb2 as pb
from decider_client.render import ACTION_NAMES

Obj = dict[str, Any]

REPLICATED_JOB_NAME = "jobset.sigs.k8s.io/replicatedjob-name"
# The one annotation a resume writes on the Job itself (ExecutionAttemptsTracking).
EXECUTION_ATTEMPT = "jobset.sigs.k8s.io/execution-attempt"
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


class Broken(Exception):
    """An action breaks `rule`; `detail` says how."""

    def __init__(self, rule: str, detail: str) -> None:
        super().__init__(detail)
        self.rule = rule
        self.detail = detail


def clip(text: str, limit: int = 80) -> str:
    # Whatever the plan carries ends up in a log line and an event: keep it short.
    return text if len(text) <= limit else text[: limit - 3] + "..."


def q(value: Any) -> str:
    return clip(repr(value))


def pvc(obj: Obj, jobset: Obj) -> bool:
    """A PVC is one of the JobSet's volumeClaimPolicies, with its template's spec; returns
    whether its policy retains it (whenDeleted: Retain), so that it must have no owner."""
    js_name = dig(jobset, "metadata").get("name", "")
    templates = {f"{name}-{js_name}": (t.get("spec") or {}, retain)
                 for name, t, retain in _claim_templates(jobset)}
    name = obj["metadata"]["name"]
    if name not in templates:
        raise Broken(
            "pvc",
            f"PVC {q(name)} is not one of the JobSet's volumeClaimPolicies "
            f"({', '.join(sorted(templates)) or 'none'})",
        )
    spec, retain = templates[name]
    if (obj.get("spec") or {}) != spec:
        raise Broken("pvc", f"PVC {q(name)} has a spec other than its template's")
    return retain


def service(obj: Obj) -> None:
    """A Service is headless: it routes nothing and allocates no cluster IP."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        raise Broken("service", "the Service has no spec")
    extra = sorted(set(spec) - _SERVICE_FIELDS)
    if extra:
        raise Broken("service", f"the Service sets {', '.join(extra)}; it must be headless")
    if spec.get("clusterIP") != "None" or spec.get("type", "ClusterIP") != "ClusterIP":
        raise Broken("service", "the Service is not headless (clusterIP None, ClusterIP)")


def service_ports(ports: Any, jobset: Obj) -> None:
    """The headless Service's ports are ports the JobSet's containers declare (upstream #1300:
    `<protocol in lower case>-<port>`, targetPort the port; decider/core/headless_service.py):
    a Service of this JobSet that opens other ports is not what the JobSet asked for."""
    declared: set[tuple[int, str]] = set()
    for rjob in replicated_jobs(jobset):
        pod = dig(rjob, "template", "spec", "template", "spec")
        containers = pod.get("containers")
        for container in containers if isinstance(containers, list) else ():
            listed = container.get("ports") if isinstance(container, dict) else None
            for port in listed if isinstance(listed, list) else ():
                pair = (port.get("containerPort"), port.get("protocol") or "TCP") \
                    if isinstance(port, dict) else None
                if pair is not None and isinstance(pair[0], int) and isinstance(pair[1], str):
                    declared.add(pair)
    for port in ports if isinstance(ports, list) else ():
        number = port.get("port") if isinstance(port, dict) else None
        protocol = (port.get("protocol") or "TCP") if isinstance(port, dict) else None
        if not (_is_int(number) and isinstance(protocol, str)):
            raise Broken("service", f"the Service's port {_short(port)} is not a port and a "
                                    "protocol")
        want = {"name": f"{protocol.lower()}-{number}", "protocol": protocol,
                "port": number, "targetPort": number}
        if (number, protocol) not in declared or {**want, **port} != want:
            raise Broken("service", f"the Service's port {_short(port)} is not one the "
                                    "JobSet's containers declare")


def pod_template(job: Obj, jobset: Obj) -> None:
    """A Job's pod runs as its replicated Job's template says."""
    js_name = dig(jobset, "metadata").get("name", "")
    labels = job["metadata"].get("labels") or {}
    rjob_name = labels.get(REPLICATED_JOB_NAME) if isinstance(labels, dict) else None
    rjob = next((r for r in replicated_jobs(jobset) if r.get("name") == rjob_name), None)
    if rjob is None:
        raise Broken(
            "pod-template",
            f"the Job's {REPLICATED_JOB_NAME} {q(rjob_name)} is not a replicated Job of the JobSet",
        )
    want = dig(rjob, "template", "spec", "template", "spec")
    have = dig(job, "spec", "template", "spec")
    for field in POD_FIELDS_FROM_TEMPLATE:
        if have.get(field) != want.get(field):
            raise Broken(
                "pod-template",
                f"the pod's {field} is {q(have.get(field))}; replicated Job {q(rjob_name)} "
                f"says {q(want.get(field))}",
            )
    allowed = [v for v in want.get("volumes") or [] if isinstance(v, dict)]
    claims = {name for name, _, _ in _claim_templates(jobset)}
    for volume in have.get("volumes") or []:
        if not isinstance(volume, dict):
            raise Broken("pod-template", "the pod has a volume that is not an object")
        claim = {"persistentVolumeClaim": {"claimName": f"{volume.get('name')}-{js_name}"}}
        if volume in allowed or (
            volume.get("name") in claims and volume == {"name": volume["name"], **claim}
        ):
            continue
        raise Broken(
            "pod-template",
            f"the pod's volume {q(volume.get('name'))} is neither in replicated Job "
            f"{q(rjob_name)}'s template nor one of the JobSet's volumeClaimPolicies",
        )


def patch(action_type: int, patch_json: str) -> Obj:
    """A patch has exactly the shape the decider emits for its action type; the patch, read."""
    try:
        value = json.loads(patch_json or "null")
    except ValueError as exc:
        raise Broken("patch", f"the patch is not JSON: {exc}") from None
    shape, complete = PATCH_SHAPES[action_type]
    if not (_fits(value, shape) and isinstance(value.get("spec"), dict) and complete(value)):
        raise Broken(
            "patch",
            f"the patch {_short(value)} is not of the shape a {ACTION_NAMES[action_type]} has",
        )
    return value


def resume_containers(patch: Obj, job: Obj, jobset: Obj) -> None:
    """A resume that rewrites the Job's containers (MutablePodResourcesForSuspendedJobSets)
    keeps every container as the Job has it but for resources.requests and .limits, which
    become those of the replicated Job's container of the same name."""
    pod_patch = dig(patch, "spec", "template", "spec")
    labels = job["metadata"].get("labels") or {}
    rjob_name = labels.get(REPLICATED_JOB_NAME) if isinstance(labels, dict) else None
    rjob = next((r for r in replicated_jobs(jobset) if r.get("name") == rjob_name), None)
    template = dig(rjob, "template", "spec", "template", "spec")
    have_spec = dig(job, "spec", "template", "spec")
    for key in ("containers", "initContainers"):
        if key not in pod_patch:
            continue
        want_resources = {c.get("name"): c.get("resources") or {}
                          for c in template.get(key) or [] if isinstance(c, dict)}
        have = have_spec.get(key) or []
        new = pod_patch[key]
        if [c.get("name") for c in new] != [c.get("name") for c in have if isinstance(c, dict)]:
            raise Broken("patch", f"the resume's {key} are not the Job's own")
        for old, changed in zip(have, new, strict=True):
            keep = {k: v for k, v in (old.get("resources") or {}).items()
                    if k not in ("requests", "limits")}
            rest = {k: v for k, v in (changed.get("resources") or {}).items()
                    if k not in ("requests", "limits")}
            if {k: v for k, v in changed.items() if k != "resources"} != \
                    {k: v for k, v in old.items() if k != "resources"} or keep != rest:
                raise Broken("patch", f"the resume changes {key[:-1]} {q(old.get('name'))} "
                                      "beyond its requests and limits")
            want = want_resources.get(old.get("name"))
            for field in ("requests", "limits"):
                expected = (old.get("resources") or {}).get(field) if want is None \
                    else want.get(field)
                if (changed.get("resources") or {}).get(field) != expected:
                    raise Broken("patch",
                                 f"the resume sets {key[:-1]} {q(old.get('name'))}'s {field} "
                                 f"to what replicated Job {q(rjob_name)} does not say")


# ---- shapes of the patches the decider emits -----------------------------------------------

Shape = Mapping[str, "Shape"] | Callable[[Any], bool]


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _is_count_or_null(v: Any) -> bool:
    return v is None or _is_int(v)


def _is_str_map(v: Any) -> bool:
    return isinstance(v, dict) and all(isinstance(x, str) for x in v.values())


def _list_of(shape: Shape) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, list) and all(_fits(item, shape) for item in v)


def _is_policy(v: Any) -> bool:
    return (v == {"basic": {}}
            or _fits(v, {"gang": {"minCount": _is_int}}, required=True)
            or _fits(v, {"gang": {"minGroupCount": _is_int}}, required=True))


def _is_object_list(v: Any) -> bool:
    # What a template list may hold is judged against the object's own list (gang_lists).
    return isinstance(v, list) and all(isinstance(item, dict) for item in v)


def _is_object_list(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(item, dict) for item in v)


_SERVICE_PORT: Shape = {
    "name": lambda v: isinstance(v, str),
    "protocol": lambda v: v in ("TCP", "UDP", "SCTP"),
    "port": _is_int,
    "targetPort": _is_int,
}
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
            # The execution attempt (ExecutionAttemptsTracking) on the Job itself, and only it.
            "metadata": {"annotations": lambda v: _is_str_map(v) and set(v) <= {
                EXECUTION_ATTEMPT}},
            "spec": {
                "suspend": lambda v: v is False,
                "template": {
                    "metadata": {"labels": _is_str_map, "annotations": _is_str_map},
                    "spec": {
                        "nodeSelector": _is_str_map,
                        "tolerations": _list_of(_TOLERATION),
                        "schedulingGates": _list_of({"name": lambda v: isinstance(v, str)}),
                        # Judged against the Job by resume_containers.
                        "containers": _is_object_list,
                        "initContainers": _is_object_list,
                    },
                },
            },
        },
        lambda p: p["spec"].get("suspend") is False,
    ),
    pb.ACTION_TYPE_PATCH_JOB: (
        # null: the template leaves the count unset (merge patch: back to the Job's default).
        {"spec": {"parallelism": _is_count_or_null, "completions": _is_count_or_null}},
        lambda p: bool(p["spec"]),
    ),
}
PATCH_SHAPES[pb.ACTION_TYPE_UPDATE_SERVICE] = (
    # decider/core/headless_service.py: the ports the containers declare, or none.
    {"spec": {"ports": lambda v: v is None or _list_of(_SERVICE_PORT)(v)}},
    lambda p: set(p["spec"]) == {"ports"},
)
_GANG_PATCH: tuple[Shape, Callable[[Obj], bool]] = (
    {
        "spec": {
            "minMember": _is_int,
            "schedulingPolicy": _is_policy,
            "podGroupTemplates": _is_object_list,
            "podGroups": _is_object_list,
            "compositePodGroupTemplates": _is_object_list,
        }
    },
    lambda p: len(p["spec"]) == 1 or set(p["spec"]) <= _GANG_LISTS,
)
PATCH_SHAPES[pb.ACTION_TYPE_PATCH_WORKLOAD] = _GANG_PATCH
PATCH_SHAPES[pb.ACTION_TYPE_PATCH_POD_GROUP] = _GANG_PATCH
PATCH_SHAPES[pb.ACTION_TYPE_PATCH_COMPOSITE_POD_GROUP] = _GANG_PATCH
GANG_PATCHES = frozenset({pb.ACTION_TYPE_PATCH_WORKLOAD, pb.ACTION_TYPE_PATCH_POD_GROUP,
                          pb.ACTION_TYPE_PATCH_COMPOSITE_POD_GROUP})
# A Workload's template lists: a merge patch replaces a list whole, so the decider sends the
# list back as the server holds it with minCounts changed (decider/core/gang/jobset_objects.py
# min_count_patch). Anything else in them must be what the object already says.
_GANG_LISTS = frozenset({"podGroupTemplates", "podGroups", "compositePodGroupTemplates"})
_POLICY_KEYS = ("schedulingPolicy", "policy")


def gang_lists(patch_json: str, current: Obj) -> None:
    """A gang patch's template lists differ from `current`'s only in gang counts."""
    spec = json.loads(patch_json or "null")["spec"]
    have = current.get("spec") if isinstance(current.get("spec"), dict) else {}
    for key in sorted(_GANG_LISTS & set(spec)):
        if _counts_masked(spec[key]) != _counts_masked(have.get(key)):
            raise Broken("patch", f"the patch's {key} change more than gang counts "
                                  f"({_short(spec[key])} against {_short(have.get(key))})")


def _counts_masked(value: Any) -> Any:
    """`value` with every gang count replaced by a marker (a policy that is neither basic nor
    gang with a count is refused)."""
    if isinstance(value, list):
        return [_counts_masked(v) for v in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for k, v in value.items():
        if k in _POLICY_KEYS and isinstance(v, dict) and "gang" in v:
            if not _is_policy(v):
                raise Broken("patch", f"the patch's {k} {_short(v)} is neither basic nor gang "
                                      "with a count")
            out[k] = {"gang": "<count>"}
        else:
            out[k] = _counts_masked(v)
    return out


def _fits(value: Any, shape: Shape, required: bool = False) -> bool:
    """`value` has only the keys `shape` names, each fitting (all of them when `required`)."""
    if callable(shape):
        return bool(shape(value))
    if not isinstance(value, dict):
        return False
    if required and set(value) != set(shape):
        return False
    return all(key in shape and _fits(item, shape[key]) for key, item in value.items())


def dig(obj: Any, *keys: str) -> Obj:
    for key in keys:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj if isinstance(obj, dict) else {}


def replicated_jobs(jobset: Obj) -> list[Obj]:
    rjobs = dig(jobset, "spec").get("replicatedJobs")
    return [r for r in rjobs if isinstance(r, dict)] if isinstance(rjobs, list) else []


def _claim_templates(jobset: Obj) -> list[tuple[str, Obj, bool]]:
    """(template name, template, retained) for every claim template of the JobSet."""
    out: list[tuple[str, Obj, bool]] = []
    policies = dig(jobset, "spec").get("volumeClaimPolicies")
    for policy in policies if isinstance(policies, list) else ():
        if not isinstance(policy, dict):
            continue
        # Delete is the CRD's default, as the decider reads it.
        retain = dig(policy, "retentionPolicy").get("whenDeleted", "Delete") == "Retain"
        templates = policy.get("templates")
        for t in templates if isinstance(templates, list) else ():
            name = dig(t, "metadata").get("name")
            if isinstance(name, str) and name:
                out.append((name, t, retain))
    return out


def _short(value: Any, limit: int = 200) -> str:
    text = json.dumps(value, separators=(",", ":"), sort_keys=True)
    return text if len(text) <= limit else text[: limit - 3] + "..."
