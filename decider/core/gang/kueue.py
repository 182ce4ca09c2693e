"""What Kueue reads from a pod set's template, so a scheduler need not parse templates itself.

- Resource requests of one pod, as Kubernetes computes a pod's effective request
  (component-helpers `PodRequests`) after Kueue's `UseLimitsAsMissingRequestsInPod`:
  a container's limits stand in for the requests it does not set; containers add up; an init
  container needs its own requests plus the sidecars started before it; a sidecar (an init
  container with restartPolicy Always) runs beside the containers and adds to them; the pod needs
  the larger of the two, per resource. Pod-level `spec.resources.requests` replace the sum for
  cpu, memory and hugepages-*; `spec.overhead` is added. LimitRange defaults and RuntimeClass
  overheads live in the cluster, not in the template: they are not applied.
- Node selector and tolerations of the template.
- The topology request Kueue builds with TopologyAwareScheduling (on by default since 0.14)
  from the template's `kueue.x-k8s.io/podset-*` annotations.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from decider.core import access as acc
from decider.core import quantity
from decider.core.errors import InvalidInput
from decider.core.gang.kueue_slices import CONSTRAINTS_ANNOTATION, slice_constraints
from decider.core.model import Toleration

JOB_MIN_PARALLELISM = "kueue.x-k8s.io/job-min-parallelism"
REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-required-topology"
PREFERRED_TOPOLOGY = "kueue.x-k8s.io/podset-preferred-topology"
UNCONSTRAINED_TOPOLOGY = "kueue.x-k8s.io/podset-unconstrained-topology"
SLICE_REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-slice-required-topology"
SLICE_SIZE = "kueue.x-k8s.io/podset-slice-size"
GROUP_NAME = "kueue.x-k8s.io/podset-group-name"
POD_INDEX_LABEL = "batch.kubernetes.io/job-completion-index"
JOB_INDEX_LABEL = "jobset.sigs.k8s.io/job-index"

# Go's strconv.ParseBool and ParseInt(s, 10, 32), which Kueue reads the annotations with.
_GO_TRUE = ("1", "t", "T", "TRUE", "true", "True")
_GO_FALSE = ("0", "f", "F", "FALSE", "false", "False")
_GO_INT = re.compile(r"[+-]?[0-9]+", re.ASCII)
_INT32 = (-(2**31), 2**31 - 1)
TOPOLOGY_KEYS = ("required", "preferred", "unconstrained", "podIndexLabel", "subGroupIndexLabel",
                 "subGroupCount", "podSetGroupName", "podSetSliceRequiredTopology",
                 "podSetSliceSize", "podsetSliceRequiredTopologyConstraints")


@dataclass(frozen=True)
class PodSetDetails:
    pod_requests: dict[str, int] = field(default_factory=dict)
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: list[Toleration] = field(default_factory=list)
    topology_request: dict[str, Any] | None = None


def _resource_list(value: Any, path: str) -> dict[str, Fraction]:
    out = {}
    for name, raw in acc.as_map(value, path).items():
        amount = quantity.parse(raw, f"{path}[{name}]")
        if amount < 0:
            raise InvalidInput.at(f"{path}[{name}]", "must be greater than or equal to 0")
        out[name] = amount
    return out


def _add(into: dict[str, Fraction], more: dict[str, Fraction]) -> None:
    for name, amount in more.items():
        into[name] = into.get(name, Fraction(0)) + amount


def _max(into: dict[str, Fraction], other: dict[str, Fraction]) -> None:
    for name, amount in other.items():
        if amount > into.get(name, Fraction(-1)):
            into[name] = amount


def _requests(container: Any, path: str) -> dict[str, Fraction]:
    """A container's requests, its limits standing in for those it does not set (Kueue)."""
    resources = acc.as_map(acc.as_map(container, path).get("resources"), f"{path}.resources")
    requests = _resource_list(resources.get("requests"), f"{path}.resources.requests")
    limits = _resource_list(resources.get("limits"), f"{path}.resources.limits")
    return {**limits, **requests}


def _pod_level_resource(name: str) -> bool:
    return name in ("cpu", "memory") or name.startswith("hugepages-")


def pod_requests(pod_spec: dict[str, Any], path: str) -> dict[str, Fraction]:
    """One pod's effective requests, exact (Kubernetes' PodRequests)."""
    total: dict[str, Fraction] = {}
    for i, c in enumerate(acc.as_list(pod_spec.get("containers"), f"{path}.containers")):
        _add(total, _requests(c, f"{path}.containers[{i}]"))
    sidecars: dict[str, Fraction] = {}
    init_peak: dict[str, Fraction] = {}
    for i, c in enumerate(acc.as_list(pod_spec.get("initContainers"),
                                      f"{path}.initContainers")):
        where = f"{path}.initContainers[{i}]"
        own = _requests(c, where)
        if acc.as_str(acc.as_map(c, where).get("restartPolicy"), f"{where}.restartPolicy") \
                == "Always":
            # A sidecar keeps running: it adds to the containers and to every later init step.
            _add(total, own)
            _add(sidecars, own)
            _max(init_peak, sidecars)
        else:
            step = dict(own)
            _add(step, sidecars)
            _max(init_peak, step)
    _max(total, init_peak)
    pod = acc.as_map(pod_spec.get("resources"), f"{path}.resources")
    if pod:
        pod_requests_ = _resource_list(pod.get("requests"), f"{path}.resources.requests")
        pod_limits = _resource_list(pod.get("limits"), f"{path}.resources.limits")
        for name, amount in {**pod_limits, **pod_requests_}.items():
            if _pod_level_resource(name):
                total[name] = amount
    _add(total, _resource_list(pod_spec.get("overhead"), f"{path}.overhead"))
    return total


def _go_bool(text: str, path: str) -> bool:
    if text in _GO_TRUE:
        return True
    if text in _GO_FALSE:
        return False
    raise InvalidInput.at(path, f'strconv.ParseBool: parsing "{text}": invalid syntax')


def job_min_count(annotations: dict[str, Any]) -> int | None:
    """A Job's minCount as Kueue's job integration reads it (minPodsCount): strconv.Atoi of
    the annotation, converted to int32 as Go converts (wrapping), and nothing, without a word,
    for a value Atoi refuses. Kueue's webhook, not PodSets, judges the number."""
    text = annotations.get(JOB_MIN_PARALLELISM)
    if not isinstance(text, str) or not _GO_INT.fullmatch(text):
        return None
    value = int(text)
    if not -(2**63) <= value < 2**63:  # past Go's int on a 64-bit platform
        return None
    return (value + 2**31) % 2**32 - 2**31


def _go_int32(text: str, path: str) -> int:
    if not _GO_INT.fullmatch(text):
        raise InvalidInput.at(path, f'strconv.ParseInt: parsing "{text}": invalid syntax')
    value = int(text)
    if not _INT32[0] <= value <= _INT32[1]:
        raise InvalidInput.at(path, f'strconv.ParseInt: parsing "{text}": value out of range')
    return value


def topology_request(annotations: dict[str, str], path: str,
                     sub_group_count: int | None) -> dict[str, Any]:
    """Kueue's PodSetTopologyRequest for a template with these annotations (jobframework's
    NewPodSetTopologyRequest(...).Build()). `sub_group_count`: a JobSet's replicas; None for a
    Job, whose pod sets have no sub-groups."""
    found: dict[str, Any] = {}
    if REQUIRED_TOPOLOGY in annotations:
        found["required"] = annotations[REQUIRED_TOPOLOGY]
    elif PREFERRED_TOPOLOGY in annotations:
        found["preferred"] = annotations[PREFERRED_TOPOLOGY]
    elif UNCONSTRAINED_TOPOLOGY in annotations:
        found["unconstrained"] = _go_bool(annotations[UNCONSTRAINED_TOPOLOGY],
                                          f"{path}[{UNCONSTRAINED_TOPOLOGY}]")
    found["podIndexLabel"] = POD_INDEX_LABEL
    if sub_group_count is not None:
        found["subGroupIndexLabel"] = JOB_INDEX_LABEL
        found["subGroupCount"] = sub_group_count
    if GROUP_NAME in annotations and ("required" in found or "preferred" in found):
        found["podSetGroupName"] = annotations[GROUP_NAME]
    # Kueue's TASMultiLayerTopology gate is Beta, on by default since 0.19: the multi-layer
    # annotation, when present, replaces the two-level pair, which is then not even parsed.
    if CONSTRAINTS_ANNOTATION in annotations:
        found["podsetSliceRequiredTopologyConstraints"] = slice_constraints(
            annotations[CONSTRAINTS_ANNOTATION], path)
    elif SLICE_REQUIRED_TOPOLOGY in annotations and SLICE_SIZE in annotations:
        size = _go_int32(annotations[SLICE_SIZE], f"{path}[{SLICE_SIZE}]")
        found["podSetSliceRequiredTopology"] = annotations[SLICE_REQUIRED_TOPOLOGY]
        found["podSetSliceSize"] = size
    # Keys in the order of Kueue's PodSetTopologyRequest fields.
    return {key: found[key] for key in TOPOLOGY_KEYS if key in found}


def _tolerations(value: Any, path: str) -> list[Toleration]:
    out = []
    for i, raw in enumerate(acc.as_list(value, path)):
        where = f"{path}[{i}]"
        t = acc.as_map(raw, where)
        # Kueue's pod set carries it as an int64, as the pod's API does.
        seconds = acc.as_int64(t.get("tolerationSeconds"), f"{where}.tolerationSeconds")
        out.append(Toleration(**{k: acc.as_str(t.get(key), f"{where}.{key}") for k, key in (
            ("key", "key"), ("operator", "operator"), ("value", "value"),
            ("effect", "effect"))}, toleration_seconds=seconds))
    return out


def pod_set_details(template: Any, path: str, sub_group_count: int | None) -> PodSetDetails:
    """What Kueue reads from the pod template at `path` (a Job's spec.template)."""
    template = acc.as_map(template, path)
    meta = acc.as_map(template.get("metadata"), f"{path}.metadata")
    spec = acc.as_map(template.get("spec"), f"{path}.spec")
    annotations = acc.string_map(meta, "annotations", f"{path}.metadata")
    requests = pod_requests(spec, f"{path}.spec")
    return PodSetDetails(
        pod_requests={name: quantity.kueue_value(name, amount)
                      for name, amount in sorted(requests.items())},
        node_selector=dict(sorted(acc.string_map(spec, "nodeSelector", f"{path}.spec").items())),
        tolerations=_tolerations(spec.get("tolerations"), f"{path}.spec.tolerations"),
        topology_request=topology_request(annotations, f"{path}.metadata.annotations",
                                          sub_group_count))


def total_requests(pod: dict[str, int], count: int) -> dict[str, int]:
    return {name: quantity.saturating_mul(value, count) for name, value in pod.items()}
