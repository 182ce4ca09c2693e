"""Construction of the objects a JobSet owns: child Jobs, the headless Service, PVCs.

Names, labels and annotations are upstream's exactly (constructJob / labelAndAnnotateObject):
Kueue's JobSet integration, kubectl plugins and the pod webhook all match on them.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import orjson

from decider.core import constants as c
from decider.core.children import RestartCounters
from decider.core.job_manifests import JobJson, LazyJobAction
from decider.core.job_template import job_template, mounts_volume
from decider.core.jobset import JobSet, ReplicatedJob
from decider.core.model import Action
from decider.core.state import copy_json

# Jobs a builder builds before it writes the rest from pieces (job_manifests.JobJson).
_DIRECT = 2

__all__ = ["ReplicatedJobBuilder", "coordinator_endpoint", "job_key",
           "job_name", "mounts_volume", "owner_reference", "persistent_volume_claims",
           "pvc_name"]


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
                 restart_counters: RestartCounters | None,
                 annotations: dict[str, str] | None = None) -> None:
        """restart_counters: the status's jobRestarts under the RestartJob gate, else None.
        annotations: what every Job and pod template gets besides upstream's keys (the
        execution attempt, decider/core/execution_attempts.py)."""
        self.js = js
        self.rjob = rjob
        placement = js.placement(rjob.name)
        self.global_offset = placement.global_offset
        self.group_offset = placement.group_offset
        self.common = {
            c.JOBSET_NAME: js.name,
            c.JOBSET_UID: js.uid,
            c.REPLICATED_JOB_NAME: rjob.name,
            c.RESTART_ATTEMPT: str(int(status.get("restarts") or 0)),
            c.REPLICATED_JOB_REPLICAS: str(rjob.replicas),
            c.GLOBAL_REPLICAS: str(js.total_replicas),
            c.GROUP_NAME: rjob.group_name,
            c.GROUP_REPLICAS: str(placement.group_replicas),
        }
        if js.coordinator is not None:
            self.common[c.COORDINATOR] = coordinator_endpoint(js)
        # Annotations only, never labels.
        self.annotations = dict(annotations or {})
        self.job_restarts = (restart_counters.of(rjob.name)
                             if restart_counters is not None else None)
        self.template = job_template(js.spec, rjob)
        self.job_labels = self.template.labels
        self.job_annotations = self.template.annotations
        # Exclusive placement: the JobSet's annotation, overridden by the replicated Job's.
        self.exclusive: dict[str, str] = {}
        for source in (js.annotations, self.job_annotations):
            if c.EXCLUSIVE_TOPOLOGY in source:
                self.exclusive[c.EXCLUSIVE_TOPOLOGY] = source[c.EXCLUSIVE_TOPOLOGY]
                if c.NODE_SELECTOR_STRATEGY in source:
                    self.exclusive[c.NODE_SELECTOR_STRATEGY] = source[c.NODE_SELECTOR_STRATEGY]
        self.claims = [(name, pvc_name(js.name, name)) for name in self.template.mounted_claims]
        self._json: JobJson | None | bool = False  # not worked out yet
        self._built = 0
        self._last: tuple[int, bytes] | None = None

    @property
    def plain(self) -> bool:
        """Whether every Job built here is JSON any encoder writes alike (Action.plain_json)."""
        return self.template.plain

    def manifest_floor_bytes(self, index: int) -> int:
        """Bytes the manifest of Job `index` takes on the wire, compact and in UTF-8, as the
        answer writes it. Manifests differ only in their index's digits, so the smallest index
        to be built gives a floor for every one."""
        fast = self.json(index)
        if fast is not None:
            return len(fast)
        manifest = self.build(index)
        return len(json.dumps(manifest, separators=(",", ":"), ensure_ascii=False).encode())

    def json(self, index: int) -> bytes | None:
        """The manifest of Job `index` as the answer writes it (compact, UTF-8), made without
        building it (job_manifests.py) once this builder has made a few; None when only
        building it tells."""
        if not self.plain:
            return None
        if self._last is not None and self._last[0] == index:
            return self._last[1]
        if self._json is False and self._built < _DIRECT:
            # Splitting the manifest costs a few builds: not worth it for a Job or two (a
            # JobSet of many replicated Jobs of one Job each).
            self._built += 1
            try:
                out = orjson.dumps(self.build(index))
            except orjson.JSONEncodeError:  # a key or value orjson refuses: json decides
                return None
        else:
            if self._json is False:
                assert self._last is not None  # the Jobs built directly before
                self._json = JobJson.of(self, self._last[1])
            if self._json is None:
                return None
            out = self._json.render(index)
        # The plan budget sizes the first Job of a replicated Job, then the answer writes it.
        self._last = (index, out)
        return out

    def action(self, index: int) -> Action:
        """The CreateJob action of Job `index`; its manifest is built when first read."""
        return LazyJobAction(self, index)

    def index_keys(self, index: int, name: str) -> dict[str, str]:
        """The labels and annotations a Job of this index carries: `common` and these."""
        keys: dict[str, str] = {}
        if self.job_restarts is not None:
            attempt = self.job_restarts[index] if index < len(self.job_restarts) else 0
            keys[c.JOB_RESTART_ATTEMPT] = str(attempt)
        keys[c.JOB_INDEX] = str(index)
        keys[c.JOB_KEY] = job_key(self.js.namespace, name)
        keys[c.JOB_GLOBAL_INDEX] = str(self.global_offset + index)
        keys[c.JOB_GROUP_INDEX] = str(self.group_offset + index)
        return keys

    def build(self, index: int) -> dict[str, Any]:
        name = job_name(self.js.name, self.rjob.name, index)
        return self.manifest(name, self.index_keys(index, name),
                             f"{self.js.namespace}_{name}")

    def manifest(self, name: str, index_keys: dict[str, str], namespaced: str
                 ) -> dict[str, Any]:
        """The Job named `name`; namespaced: its namespaced-job node selector value."""
        js = self.js
        keys = {**self.common, **index_keys}
        spec = self.template.copy_spec()
        pod = spec.setdefault("template", {})
        pod_meta = pod.setdefault("metadata", {}) if isinstance(pod, dict) else {}
        pod_spec = pod.setdefault("spec", {})
        pod_meta["labels"] = {**(pod_meta.get("labels") or {}), **keys}
        pod_meta["annotations"] = {**(pod_meta.get("annotations") or {}), **keys,
                                   **self.annotations, **self.exclusive}
        annotations = {**self.job_annotations, **keys, **self.annotations, **self.exclusive}
        if js.dns_hostnames:
            pod_spec["subdomain"] = js.subdomain
        if c.EXCLUSIVE_TOPOLOGY in annotations and c.NODE_SELECTOR_STRATEGY in annotations:
            node_selector = pod_spec.setdefault("nodeSelector", {})
            node_selector[c.NAMESPACED_JOB] = namespaced
            pod_spec["tolerations"] = [*(pod_spec.get("tolerations") or []), {
                "key": c.NO_SCHEDULE_TAINT, "operator": "Exists", "effect": "NoSchedule"}]
        if js.independent:
            # Someone else owns each Job's suspend: keep whatever the template says.
            spec["suspend"] = bool(spec.get("suspend"))
        else:
            spec["suspend"] = js.suspend
        if js.volume_claim_policies:
            volumes = list(pod_spec.get("volumes") or [])
            volumes.extend({"name": claim_name, "persistentVolumeClaim": {"claimName": claim}}
                           for claim_name, claim in self.claims)
            if volumes:
                pod_spec["volumes"] = volumes
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


def pvc_name(js_name: str, template_name: str) -> str:
    return f"{template_name}-{js_name}"


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
            # A copy: the template belongs to the parsed spec, which later passes share.
            out.append({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                        "metadata": metadata,
                        "spec": copy_json((template or {}).get("spec") or {})})
    return out
