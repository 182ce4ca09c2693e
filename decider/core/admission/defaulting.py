"""Defaulting, in the API server's order for a create: nulls pruned, CRD structural defaults,
then the mutating webhook's defaults and its Go round trip (create only: crd.go_round_trip),
then structural defaults once more for anything the webhook added.

Everything here works on a private copy and tolerates any JSON-like shape: a value of the wrong
type is left alone (the schema module reports it) rather than replaced or crashed on.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from decider.core.admission import crd, scheduling
from decider.core.admission._util import as_dict, as_list

# The CRD's `default:` markers inside the embedded pod spec (controller-gen copies them from
# the core/v1 types). They matter because the stored object, and so every later comparison,
# carries them. Paths are relative to a pod spec; "[]" steps into every item of a list.
_CONTAINER_DEFAULTS: tuple[tuple[str, Any], ...] = (
    ("env[].valueFrom.configMapKeyRef.name", ""),
    ("env[].valueFrom.fileKeyRef.optional", False),
    ("env[].valueFrom.secretKeyRef.name", ""),
    ("envFrom[].configMapRef.name", ""),
    ("envFrom[].secretRef.name", ""),
    ("livenessProbe.grpc.service", ""),
    ("readinessProbe.grpc.service", ""),
    ("startupProbe.grpc.service", ""),
    ("ports[].protocol", "TCP"),
)
_POD_SPEC_DEFAULTS: tuple[tuple[str, Any], ...] = (
    *(
        (f"{kind}[].{path}", value)
        for kind in ("containers", "initContainers", "ephemeralContainers")
        for path, value in _CONTAINER_DEFAULTS
    ),
    ("imagePullSecrets[].name", ""),
    ("volumes[].azureDisk.fsType", "ext4"),
    ("volumes[].azureDisk.readOnly", False),
    ("volumes[].cephfs.secretRef.name", ""),
    ("volumes[].cinder.secretRef.name", ""),
    ("volumes[].configMap.name", ""),
    ("volumes[].csi.nodePublishSecretRef.name", ""),
    ("volumes[].flexVolume.secretRef.name", ""),
    ("volumes[].iscsi.iscsiInterface", "default"),
    ("volumes[].iscsi.secretRef.name", ""),
    ("volumes[].projected.sources[].configMap.name", ""),
    ("volumes[].projected.sources[].secret.name", ""),
    ("volumes[].rbd.keyring", "/etc/ceph/keyring"),
    ("volumes[].rbd.pool", "rbd"),
    ("volumes[].rbd.secretRef.name", ""),
    ("volumes[].rbd.user", "admin"),
    ("volumes[].scaleIO.fsType", "xfs"),
    ("volumes[].scaleIO.secretRef.name", ""),
    ("volumes[].scaleIO.storageMode", "ThinProvisioned"),
    ("volumes[].storageos.secretRef.name", ""),
)


def _set_default(node: Any, steps: list[str], value: Any) -> None:
    """Set a default at a dotted path below node where the leaf is absent; objects along the
    way are not created (a structural default applies only inside an existing parent)."""
    if not isinstance(node, dict):
        return
    head, rest = steps[0], steps[1:]
    is_list = head.endswith("[]")
    key = head[:-2] if is_list else head
    if not rest:
        if key not in node:
            node[key] = value
        return
    child = node.get(key)
    for item in as_list(child) if is_list else [child]:
        _set_default(item, rest, value)


def _ensure_dict(parent: dict[str, Any], key: str) -> dict[str, Any] | None:
    """parent[key] as an object, created when absent; None when it holds another type.
    The webhook works on Go structs, where a missing nested struct is a zero value it can
    set fields on; the resulting patch therefore creates the missing objects."""
    if key not in parent:
        parent[key] = {}
    child = parent[key]
    return child if isinstance(child, dict) else None


def _structural_defaults(obj: dict[str, Any]) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    for rjob in as_list(spec.get("replicatedJobs")):
        if not isinstance(rjob, dict):
            continue
        rjob.setdefault("groupName", "default")
        rjob.setdefault("replicas", 1)
        pod_spec = as_dict(as_dict(as_dict(rjob.get("template")).get("spec")).get("template"))
        for path, value in _POD_SPEC_DEFAULTS:
            _set_default(pod_spec.get("spec"), path.split("."), value)
    failure_policy = spec.get("failurePolicy")
    if isinstance(failure_policy, dict):
        failure_policy.setdefault("restartStrategy", "Recreate")
    for policy in as_list(spec.get("volumeClaimPolicies")):
        retention = as_dict(policy).get("retentionPolicy")
        if isinstance(retention, dict):
            retention.setdefault("whenDeleted", "Delete")


def _webhook_defaults(spec: dict[str, Any], gates: Mapping[str, bool] | None = None) -> None:
    """The mutating webhook's create-time defaults (spec §3.1), in its order."""
    if "successPolicy" not in spec:
        spec["successPolicy"] = {"operator": "All"}
    if "startupPolicy" not in spec:
        spec["startupPolicy"] = {"startupPolicyOrder": "AnyOrder"}
    for rjob in as_list(spec.get("replicatedJobs")):
        if not isinstance(rjob, dict):
            continue
        # A missing template is a zero Go struct the webhook defaults like any other: the
        # schema then finds its pod without containers, where upstream reports it.
        template = _ensure_dict(rjob, "template")
        job_spec = _ensure_dict(template, "spec") if template is not None else None
        if job_spec is None:
            continue
        if job_spec.get("completionMode") is None:
            job_spec["completionMode"] = "Indexed"
        pod_template = _ensure_dict(job_spec, "template")
        pod_spec = _ensure_dict(pod_template, "spec") if pod_template is not None else None
        # Go compares restartPolicy with "": an explicit empty string is defaulted too.
        if pod_spec is not None and pod_spec.get("restartPolicy", "") == "":
            pod_spec["restartPolicy"] = "OnFailure"
    network = _ensure_dict(spec, "network")
    if network is not None:
        network.setdefault("enableDNSHostnames", True)
        network.setdefault("publishNotReadyAddresses", True)
    failure_policy = spec.get("failurePolicy")
    if isinstance(failure_policy, dict):
        for index, rule in enumerate(as_list(failure_policy.get("rules"))):
            if isinstance(rule, dict) and rule.get("name", "") == "":
                rule["name"] = f"failurePolicyRule{index}"
    for policy in as_list(spec.get("volumeClaimPolicies")):
        if isinstance(policy, dict) and "retentionPolicy" not in policy:
            policy["retentionPolicy"] = {"whenDeleted": "Delete"}
    scheduling.apply_default(spec, gates)


def apply_structural_defaults(obj: Any) -> Any:
    """A copy with nulls pruned and only the CRD's structural defaults applied: what the API
    server does to every object it reads or receives, including both sides of an update."""
    out = crd.copy_pruned(obj)
    if isinstance(out, dict):
        _structural_defaults(out)
    return out


def default_jobset(obj: dict, feature_gates: Mapping[str, bool] | None = None) -> dict:
    """Return the object the API server stores for a create, as a deep copy: the CRD
    structural defaults (groupName "default", replicas 1, failurePolicy.restartStrategy
    Recreate, retentionPolicy.whenDeleted Delete, pod-template defaults such as
    ports[].protocol TCP), the mutating webhook's defaults (spec §3.1) and its Go round trip
    (zero values of fields without omitempty, quantities in canonical form: crd.py), then the
    structural defaults again. With JobSetWorkloadAwareSchedulingAPI on, a spec.scheduling
    without a policy or entries gets ``schedulingPolicy: {gang: {}}``. Never mutates the
    input; a non-object input comes back as a copy, undefaulted. Unknown fields are kept:
    strict decoding rejects such an object."""
    out = apply_structural_defaults(obj)
    if not isinstance(out, dict):
        return out
    spec = out.get("spec")
    if "spec" not in out:
        # The webhook decodes into a typed JobSet whose Spec is a struct, never absent.
        spec = out["spec"] = {}
    if isinstance(spec, dict):
        _webhook_defaults(spec, feature_gates)
        crd.go_round_trip(spec)  # its errors are validate_create's to report
        _structural_defaults(out)
    return out
