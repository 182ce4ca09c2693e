"""Gang targets: the one interface every way of spelling a gang implements, and the registry
the planner looks a target up in.

Like Kueue's job integrations, each target is an adapter registered under a key; the planner
looks a target up by key and never branches on which one it got. Keys are the
``scheduling.k8s.io`` API versions (the native targets, targets_kubernetes.py) plus
``scheduler-plugins`` and ``volcano`` (targets_out_of_tree.py); plan.py registers them.
"""

from __future__ import annotations

from typing import Any, Protocol

from decider.core.errors import InvalidInput
from decider.core.gang.model import Design, Rendered

V1ALPHA1 = "scheduling.k8s.io/v1alpha1"
V1ALPHA2 = "scheduling.k8s.io/v1alpha2"
V1BETA1 = "scheduling.k8s.io/v1beta1"
# CompositePodGroup exists only at v1alpha3 (Kubernetes 1.37, gate CompositePodGroup).
V1ALPHA3 = "scheduling.k8s.io/v1alpha3"


class GangTarget(Protocol):
    """How one scheduler generation spells Workloads, PodGroups and the pod linkage."""

    key: str
    # apiVersion of the PodGroup-like objects this target emits and recognises.
    podgroup_api_version: str
    workload_api_version: str | None
    # Whether a Basic (non-gang) group is expressible at all.
    supports_basic: bool
    # Whether gangs are standalone PodGroup objects (False: embedded in the Workload).
    runtime_podgroups: bool
    # Whether a CompositePodGroup tree (JobSetGangOfGangs) can be spelled.
    supports_composites: bool

    def render(self, design: Design) -> Rendered: ...

    def is_workload(self, obj: dict[str, Any]) -> bool: ...

    def is_podgroup(self, obj: dict[str, Any]) -> bool: ...

    def is_composite(self, obj: dict[str, Any]) -> bool: ...

    def podgroup_workload(self, obj: dict[str, Any]) -> str | None: ...

    def podgroup_min_count(self, obj: dict[str, Any]) -> int | None: ...

    def template_min_counts(self, workload: dict[str, Any]) -> dict[str, int | None]: ...


_REGISTRY: dict[str, GangTarget] = {}


def register(target: GangTarget) -> GangTarget:
    _REGISTRY[target.key] = target
    return target


def lookup(key: str, field: str) -> GangTarget:
    try:
        return _REGISTRY[key]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY))
        raise InvalidInput.at(field, f"unsupported value {key!r}; known: {known}") from None


def registered() -> list[str]:
    return list(_REGISTRY)


def object_meta(design: Design, name: str, owners: list[dict[str, Any]],
                labels: dict[str, str] | None = None) -> dict[str, Any]:
    """The metadata of an object a target emits: every adapter names and owns them alike."""
    meta: dict[str, Any] = {"name": name, "namespace": design.namespace}
    if labels:
        meta["labels"] = dict(labels)
    meta["ownerReferences"] = owners
    return meta


__all__ = [
    "V1ALPHA1",
    "V1ALPHA3",
    "V1ALPHA2",
    "V1BETA1",
    "GangTarget",
    "lookup",
    "object_meta",
    "register",
    "registered",
]
