"""What every Job of one replicated Job takes from its template, worked out once per spec.

Building a Job copies the replicated Job's template spec (webhook defaults applied) and adds its
own labels; a pass that creates ten thousand Jobs copies it ten thousand times, so the copy is
the cost that matters. A template of strings, booleans, nulls and integers within 64 bits (every
real one) is copied through orjson, several times faster than json and exact for such data;
any other template keeps the json round trip it always had. The same property lets the adapter
write these Jobs with orjson, byte for byte as json would (`Action.plain_json`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import orjson

from decider.core.jobset_spec import ReplicatedJob, Spec
from decider.core.plain_json import is_plain

# The memo entry of claim positions in Spec.job_templates: not a string, so no replicated Job
# name can be it.
_CLAIMS = object()


@dataclass(frozen=True, slots=True)
class JobTemplate:
    spec_json: str
    # The same JSON for orjson, when `plain`.
    spec_bytes: bytes | None
    # No float and no integer outside 64 bits anywhere in the template: orjson reads and
    # writes it exactly as json does.
    plain: bool
    labels: dict[str, str]
    annotations: dict[str, str]
    # PVC templates (volumeClaimPolicies) that a container of the pod mounts, in order.
    mounted_claims: tuple[str, ...]

    def copy_spec(self) -> dict[str, Any]:
        if self.spec_bytes is not None:
            return orjson.loads(self.spec_bytes)
        return json.loads(self.spec_json)


def defaulted_spec(spec: dict[str, Any]) -> dict[str, Any]:
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


def _claim_positions(spec: Spec) -> dict[str, list[int]]:
    """Where each PVC template name stands among all of them, in order (a name may repeat)."""
    found = spec.job_templates.get(_CLAIMS)
    if found is None:
        found = {}
        position = 0
        for policy in spec.volume_claim_policies:
            for template in policy.get("templates") or ():
                name = ((template or {}).get("metadata") or {}).get("name", "")
                if name:
                    found.setdefault(name, []).append(position)
                position += 1
        spec.job_templates[_CLAIMS] = found
    return found


def _mounted_claims(spec: Spec, pod_spec: dict[str, Any]) -> tuple[str, ...]:
    """The PVC template names a container of the pod mounts, in the templates' order, each as
    often as it is listed: mounts_volume asked of every template, but from the pod's mounts, so
    that many replicated Jobs and many templates do not multiply."""
    if not spec.volume_claim_policies:
        return ()
    positions = _claim_positions(spec)
    mounted: set[str] = set()
    for key in ("containers", "initContainers"):
        containers = pod_spec.get(key)
        for container in containers if isinstance(containers, list) else ():
            mounts = container.get("volumeMounts") if isinstance(container, dict) else None
            for mount in mounts if isinstance(mounts, list) else ():
                name = mount.get("name") if isinstance(mount, dict) else None
                # A name that is no string equals no template name (they are strings).
                if isinstance(name, str):
                    mounted.add(name)
    order = sorted((p, name) for name in mounted for p in positions.get(name, ()))
    return tuple(name for _, name in order)


def job_template(spec: Spec, rjob: ReplicatedJob) -> JobTemplate:
    found = spec.job_templates.get(rjob.name)
    if found is not None:
        return found
    defaulted = defaulted_spec(rjob.template.get("spec") or {})
    # json.dumps first: a template json cannot write fails here as it always did.
    spec_json = json.dumps(defaulted)
    tree = json.loads(spec_json)
    spec_bytes = None
    plain = is_plain(tree)
    if plain:
        try:
            spec_bytes = spec_json.encode()
            orjson.loads(spec_bytes)
        except (orjson.JSONDecodeError, UnicodeEncodeError):  # a lone surrogate escape
            spec_bytes, plain = None, False
    tmeta = rjob.template.get("metadata") or {}
    out = JobTemplate(spec_json=spec_json, spec_bytes=spec_bytes, plain=plain,
                      labels=dict(tmeta.get("labels") or {}),
                      annotations=dict(tmeta.get("annotations") or {}),
                      mounted_claims=_mounted_claims(spec, tree["template"]["spec"]))
    spec.job_templates[rjob.name] = out
    return out
