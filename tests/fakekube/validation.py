"""What the API server checks and fills in on a write before it stores the object: object
metadata (name, owner references, label and annotation values) for every kind, and the
defaulting and validation of the kinds the shim writes (Job, Event, Lease, Service), with the
Job's immutable template and its scheduling directives, mutable only while suspended and never
started (KEP-2926), and container resources too with the MutablePodResourcesForSuspendedJobs
gate (KEP-5440).

Apart from the store, whose semantics (resourceVersions, preconditions, finalizers) hold for
every kind, because these rules are each kind's own.
"""

from __future__ import annotations

import copy
import re
import uuid

from .errors import invalid
from .resources import ResourceType
from .storage import Obj

_DNS1123_SUBDOMAIN = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def validate_metadata(rt: ResourceType, obj: Obj, name: str) -> None:
    causes: list[tuple[str, str]] = []
    meta = obj["metadata"]
    pattern = _DNS1123_LABEL if rt.kind in ("Job", "Service") else _DNS1123_SUBDOMAIN
    limit = 63 if rt.kind in ("Job", "Service") else 253
    if not pattern.match(name) or len(name) > limit:
        causes.append(
            (
                "metadata.name",
                f'Invalid value: "{name}": must be a lowercase RFC 1123 '
                f"{'label' if limit == 63 else 'subdomain'} (at most {limit} characters)",
            )
        )
    refs = meta.get("ownerReferences") or []
    for i, ref in enumerate(refs):
        for field in ("apiVersion", "kind", "name", "uid"):
            if not ref.get(field):
                causes.append((f"metadata.ownerReferences[{i}].{field}", "Required value"))
    if sum(1 for r in refs if r.get("controller")) > 1:
        causes.append(
            ("metadata.ownerReferences", "Only one reference can have Controller set to true")
        )
    for field in ("labels", "annotations"):
        for k, v in (meta.get(field) or {}).items():
            if not isinstance(v, str):
                causes.append((f"metadata.{field}[{k}]", "must be a string"))
    if causes:
        raise invalid(rt, name, causes)


def default_and_validate(rt: ResourceType, obj: Obj, old: Obj | None,
                         mutable_resources: bool = False) -> None:
    """The per-kind defaulting and validation of the types the shim writes."""
    name = obj["metadata"]["name"]
    if rt.kind == "Job" and rt.group == "batch":
        _default_job(obj)
        _validate_job(rt, name, obj, old, mutable_resources)
    elif rt.kind == "Event" and not rt.group:
        involved = obj.get("involvedObject") or {}
        if involved.get("namespace", obj["metadata"].get("namespace")) != obj["metadata"].get(
            "namespace"
        ):
            raise invalid(
                rt,
                name,
                [("involvedObject.namespace", "Invalid value: does not match event.namespace")],
            )
    elif rt.group == "scheduling.k8s.io":
        _default_scheduling(rt, obj)
    elif rt.kind == "Lease":
        spec = obj.get("spec") or {}
        if spec.get("leaseDurationSeconds") is not None and spec["leaseDurationSeconds"] <= 0:
            raise invalid(rt, name, [("spec.leaseDurationSeconds", "must be greater than 0")])
    elif rt.kind == "Service" and not rt.group:
        spec = obj.setdefault("spec", {})
        if spec.get("clusterIP") is None:
            spec["clusterIP"] = "10.96.0." + str(abs(hash(name)) % 250 + 1)
        spec.setdefault("type", "ClusterIP")
        spec.setdefault("sessionAffinity", "None")
        if old is not None and old.get("spec", {}).get("clusterIP") != spec.get("clusterIP"):
            raise invalid(rt, name, [("spec.clusterIP", "Invalid value: field is immutable")])


def _default_scheduling(rt: ResourceType, obj: Obj) -> None:
    """What v1.37.2's and v1.36.3's API servers fill in (tests/e2e/test_gang.py reads it back):
    a PodGroup's or CompositePodGroup's disruption mode and, without a priority class, priority
    0; a v1beta1 Workload's podGroupTemplates, a list without omitempty, as null."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    if rt.kind == "Workload" and rt.version == "v1beta1":
        spec.setdefault("podGroupTemplates", None)
    elif rt.kind == "PodGroup" and rt.version == "v1alpha2":
        spec.setdefault("disruptionMode", "Pod")
    elif rt.kind in ("PodGroup", "CompositePodGroup") and rt.version in ("v1beta1", "v1alpha3"):
        spec.setdefault("disruptionMode", {"single": {}})
        if not spec.get("priorityClassName"):
            spec.setdefault("priority", 0)


def _default_job(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("parallelism", 1)
    if spec.get("completionMode") != "Indexed":
        spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("backoffLimit", 6)
    spec.setdefault("suspend", False)
    spec.setdefault("manualSelector", False)
    spec.setdefault("podReplacementPolicy", "TerminatingOrFailed")
    uid_key = "batch.kubernetes.io/controller-uid"
    template = spec.setdefault("template", {})
    tmeta = template.setdefault("metadata", {})
    labels = tmeta.setdefault("labels", {})
    if "selector" not in spec:
        # The real server fills the selector and template labels from the Job's UID, which is
        # not assigned yet at defaulting time; a stable per-name value does the same job here.
        token = (
            obj["metadata"].get("uid")
            or uuid.uuid5(uuid.NAMESPACE_URL, obj["metadata"]["name"]).hex
        )
        spec["selector"] = {"matchLabels": {uid_key: token}}
        labels.setdefault(uid_key, token)
        labels.setdefault("batch.kubernetes.io/job-name", obj["metadata"]["name"])
        labels.setdefault("controller-uid", token)
        labels.setdefault("job-name", obj["metadata"]["name"])


def _strip_directives(template: Obj, resources: bool = False) -> Obj:
    t = copy.deepcopy(template)
    meta = t.get("metadata") or {}
    meta.pop("labels", None)
    meta.pop("annotations", None)
    spec = t.get("spec") or {}
    for field in ("nodeSelector", "tolerations", "schedulingGates"):
        spec.pop(field, None)
    if resources:
        for key in ("containers", "initContainers"):
            for container in spec.get(key) or []:
                if isinstance(container, dict):
                    res = container.get("resources") or {}
                    res.pop("requests", None)
                    res.pop("limits", None)
                    if not res:
                        container.pop("resources", None)
    return t


def _validate_job(rt: ResourceType, name: str, obj: Obj, old: Obj | None,
                  mutable_resources: bool = False) -> None:
    spec = obj["spec"]
    causes: list[tuple[str, str]] = []
    pod_spec = (spec.get("template") or {}).get("spec") or {}
    if not pod_spec.get("containers"):
        causes.append(("spec.template.spec.containers", "Required value"))
    if pod_spec.get("restartPolicy") not in ("OnFailure", "Never"):
        causes.append(
            (
                "spec.template.spec.restartPolicy",
                f'Unsupported value: "{pod_spec.get("restartPolicy", "")}": supported values: '
                f'"OnFailure", "Never"',
            )
        )
    if spec.get("completionMode") == "Indexed" and spec.get("completions") is None:
        causes.append(("spec.completions", "Required value: when completion mode is Indexed"))
    if old is not None:
        old_spec = old.get("spec") or {}
        if spec.get("selector") != old_spec.get("selector"):
            causes.append(("spec.selector", "Invalid value: field is immutable"))
        if spec.get("completionMode") != old_spec.get("completionMode"):
            causes.append(("spec.completionMode", "Invalid value: field is immutable"))
        elastic = spec.get("completionMode") == "Indexed" and spec.get("parallelism") == spec.get(
            "completions"
        )
        if spec.get("completions") != old_spec.get("completions") and not elastic:
            causes.append(("spec.completions", "Invalid value: field is immutable"))
        new_t, old_t = spec.get("template") or {}, old_spec.get("template") or {}
        resources = mutable_resources and old_spec.get("suspend") is True
        if new_t != old_t:
            if _strip_directives(new_t, resources) != _strip_directives(old_t, resources):
                causes.append(("spec.template", "Invalid value: field is immutable"))
            else:
                never_started = not (old.get("status") or {}).get("startTime")
                if not (old_spec.get("suspend") and never_started):
                    causes.append(
                        (
                            "spec.template",
                            "Invalid value: field is immutable: scheduling directives may change "
                            "only while the Job is suspended and has never started",
                        )
                    )
    if causes:
        raise invalid(rt, name, causes)
