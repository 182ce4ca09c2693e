"""Construction of the objects a JobSet owns: child Jobs, the headless Service, PVCs.

Names, labels and annotations are upstream's exactly (constructJob / labelAndAnnotateObject):
Kueue's JobSet integration, kubectl plugins and the pod webhook all match on them.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from decider.core import constants as c
from decider.core.children import job_restarts
from decider.core.jobset import JobSet, ReplicatedJob


def job_name(js_name: str, rjob_name: str, index: int) -> str:
    return f"{js_name}-{rjob_name}-{index}"


def job_key(namespace: str, name: str) -> str:
    """Hex SHA-1 of <namespace>/<jobName> (upstream's API comment says SHA256; its code: SHA-1)."""
    return hashlib.sha1(f"{namespace}/{name}".encode()).hexdigest()


def owner_reference(js: JobSet) -> dict[str, Any]:
    return {"apiVersion": c.API_VERSION, "kind": c.KIND, "name": js.name, "uid": js.uid,
            "controller": True, "blockOwnerDeletion": True}


def coordinator_endpoint(js: JobSet) -> str:
    co = js.coordinator
    assert co is not None
    return f"{js.name}-{co.replicated_job}-{co.job_index}-{co.pod_index}.{js.subdomain}"


class ReplicatedJobBuilder:
    """Builds the Jobs of one replicated Job; what all its Jobs share is computed once."""

    def __init__(self, js: JobSet, rjob: ReplicatedJob, status: dict[str, Any],
                 restart_job_gate: bool) -> None:
        self.js = js
        self.rjob = rjob
        global_offset = 0
        group_offset = 0
        group_replicas = 0
        for other in js.replicated_jobs:
            if other.name == rjob.name:
                break
            global_offset += other.replicas
            if other.group_name == rjob.group_name:
                group_offset += other.replicas
        for other in js.replicated_jobs:
            if other.group_name == rjob.group_name:
                group_replicas += other.replicas
        self.global_offset = global_offset
        self.group_offset = group_offset
        self.common = {
            c.JOBSET_NAME: js.name,
            c.JOBSET_UID: js.uid,
            c.REPLICATED_JOB_NAME: rjob.name,
            c.RESTART_ATTEMPT: str(int(status.get("restarts") or 0)),
            c.REPLICATED_JOB_REPLICAS: str(rjob.replicas),
            c.GLOBAL_REPLICAS: str(js.total_replicas),
            c.GROUP_NAME: rjob.group_name,
            c.GROUP_REPLICAS: str(group_replicas),
        }
        if js.coordinator is not None:
            self.common[c.COORDINATOR] = coordinator_endpoint(js)
        self.job_restarts = (job_restarts(js, status, rjob.name, "jobRestarts")
                             if restart_job_gate else None)
        tmeta = rjob.template.get("metadata") or {}
        self.job_labels = dict(tmeta.get("labels") or {})
        self.job_annotations = dict(tmeta.get("annotations") or {})
        # Exclusive placement: the JobSet's annotation, overridden by the replicated Job's.
        self.exclusive: dict[str, str] = {}
        for source in (js.annotations, self.job_annotations):
            if c.EXCLUSIVE_TOPOLOGY in source:
                self.exclusive[c.EXCLUSIVE_TOPOLOGY] = source[c.EXCLUSIVE_TOPOLOGY]
                if c.NODE_SELECTOR_STRATEGY in source:
                    self.exclusive[c.NODE_SELECTOR_STRATEGY] = source[c.NODE_SELECTOR_STRATEGY]
        # Serialized once: json.loads of a string is several times faster than deepcopy.
        self.spec_json = json.dumps(_defaulted_spec(rjob.template.get("spec") or {}))

    def manifest_floor_bytes(self, index: int) -> int:
        """Bytes the manifest of Job `index` takes on the wire, compact and in UTF-8, as the
        answer writes it. Manifests differ only in their index's digits, so the smallest index
        to be built gives a floor for every one."""
        manifest = self.build(index)
        return len(json.dumps(manifest, separators=(",", ":"), ensure_ascii=False).encode())

    def _keys(self, index: int, name: str) -> dict[str, str]:
        keys = dict(self.common)
        if self.job_restarts is not None:
            attempt = self.job_restarts[index] if index < len(self.job_restarts) else 0
            keys[c.JOB_RESTART_ATTEMPT] = str(attempt)
        keys[c.JOB_INDEX] = str(index)
        keys[c.JOB_KEY] = job_key(self.js.namespace, name)
        keys[c.JOB_GLOBAL_INDEX] = str(self.global_offset + index)
        keys[c.JOB_GROUP_INDEX] = str(self.group_offset + index)
        return keys

    def build(self, index: int) -> dict[str, Any]:
        js = self.js
        name = job_name(js.name, self.rjob.name, index)
        keys = self._keys(index, name)
        spec = json.loads(self.spec_json)
        pod = spec.setdefault("template", {})
        pod_meta = pod.setdefault("metadata", {}) if isinstance(pod, dict) else {}
        pod_spec = pod.setdefault("spec", {})
        pod_meta["labels"] = {**(pod_meta.get("labels") or {}), **keys}
        pod_meta["annotations"] = {**(pod_meta.get("annotations") or {}), **keys,
                                   **self.exclusive}
        annotations = {**self.job_annotations, **keys, **self.exclusive}
        if js.dns_hostnames:
            pod_spec["subdomain"] = js.subdomain
        if c.EXCLUSIVE_TOPOLOGY in annotations and c.NODE_SELECTOR_STRATEGY in annotations:
            node_selector = pod_spec.setdefault("nodeSelector", {})
            node_selector[c.NAMESPACED_JOB] = f"{js.namespace}_{name}"
            pod_spec["tolerations"] = [*(pod_spec.get("tolerations") or []), {
                "key": c.NO_SCHEDULE_TAINT, "operator": "Exists", "effect": "NoSchedule"}]
        if js.independent:
            # Someone else owns each Job's suspend: keep whatever the template says.
            spec["suspend"] = bool(spec.get("suspend"))
        else:
            spec["suspend"] = js.suspend
        if js.volume_claim_policies:
            _add_volumes(js, pod_spec)
        return {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": name,
                "namespace": js.namespace,
                "labels": {**self.job_labels, **keys},
                "annotations": annotations,
                "ownerReferences": [owner_reference(js)],
            },
            "spec": spec,
        }


def _defaulted_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """The webhook's template defaults, for JobSets that reached us without the webhook."""
    out = dict(spec)
    out.setdefault("completionMode", "Indexed")
    pod = dict(out.get("template") or {})
    pod_spec = dict(pod.get("spec") or {})
    if not pod_spec.get("restartPolicy"):
        pod_spec["restartPolicy"] = "OnFailure"
    pod["spec"] = pod_spec
    out["template"] = pod
    return out


def pvc_name(js_name: str, template_name: str) -> str:
    return f"{template_name}-{js_name}"


def mounts_volume(pod_spec: Any, volume: str) -> bool:
    """Whether a container or init container of the pod mounts `volume` (upstream
    hasVolumeMount). Admission asks it of unchecked input too, so anything malformed is simply
    no mount."""
    if not isinstance(pod_spec, dict):
        return False
    for key in ("containers", "initContainers"):
        containers = pod_spec.get(key)
        for container in containers if isinstance(containers, list) else ():
            mounts = container.get("volumeMounts") if isinstance(container, dict) else None
            for mount in mounts if isinstance(mounts, list) else ():
                if isinstance(mount, dict) and mount.get("name") == volume:
                    return True
    return False


def _add_volumes(js: JobSet, pod_spec: dict[str, Any]) -> None:
    volumes = list(pod_spec.get("volumes") or [])
    for policy in js.volume_claim_policies:
        for template in policy.get("templates") or ():
            name = ((template or {}).get("metadata") or {}).get("name", "")
            if name and mounts_volume(pod_spec, name):
                volumes.append({"name": name, "persistentVolumeClaim": {
                    "claimName": pvc_name(js.name, name)}})
    if volumes:
        pod_spec["volumes"] = volumes


def headless_service(js: JobSet) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": js.subdomain, "namespace": js.namespace,
                     "ownerReferences": [owner_reference(js)]},
        "spec": {"clusterIP": "None", "selector": {c.JOBSET_NAME: js.name},
                 "publishNotReadyAddresses": js.publish_not_ready},
    }


def persistent_volume_claims(js: JobSet) -> list[dict[str, Any]]:
    """One PVC per template; owned by the JobSet only when the policy deletes it with the JobSet."""
    out = []
    for policy in js.volume_claim_policies:
        retention = (policy.get("retentionPolicy") or {}).get("whenDeleted", "Delete")
        for template in policy.get("templates") or ():
            meta = (template or {}).get("metadata") or {}
            metadata: dict[str, Any] = {
                "name": pvc_name(js.name, meta.get("name", "")),
                "namespace": js.namespace,
                "labels": {**(meta.get("labels") or {}), c.JOBSET_NAME: js.name},
            }
            if meta.get("annotations"):
                metadata["annotations"] = dict(meta["annotations"])
            if retention == "Delete":
                metadata["ownerReferences"] = [owner_reference(js)]
            out.append({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                        "metadata": metadata, "spec": (template or {}).get("spec") or {}})
    return out
