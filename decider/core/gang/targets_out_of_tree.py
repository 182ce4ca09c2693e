"""The out-of-tree targets: scheduler-plugins' coscheduling and Volcano, one PodGroup per gang
with ``minMember`` and no Workload; pods join through a label or an annotation.

Apart from the native targets because they share none of their spelling: no Workload, no
Basic policy, no composite kind.
"""

from __future__ import annotations

from typing import Any, ClassVar

from decider.core.gang.model import Design, Group, Rendered
from decider.core.gang.targets import object_meta


class _MinMemberPodGroups:
    """Out-of-tree schedulers: one PodGroup per gang with ``minMember``, no Workload."""

    key: ClassVar[str]
    podgroup_api_version: ClassVar[str]
    workload_api_version: ClassVar[str | None] = None
    supports_basic: ClassVar[bool] = False
    runtime_podgroups: ClassVar[bool] = True
    supports_composites: ClassVar[bool] = False

    def is_composite(self, obj: dict[str, Any]) -> bool:
        return False

    def _join(self, name: str) -> dict[str, Any]:
        raise NotImplementedError

    def _extra_spec(self, g: Group) -> dict[str, Any]:
        return {}

    def is_workload(self, obj: dict[str, Any]) -> bool:
        return False

    def is_podgroup(self, obj: dict[str, Any]) -> bool:
        return obj.get("kind") == "PodGroup" and obj.get("apiVersion") == self.podgroup_api_version

    def podgroup_workload(self, obj: dict[str, Any]) -> str | None:
        return None

    def podgroup_min_count(self, obj: dict[str, Any]) -> int | None:
        spec = obj.get("spec")
        value = spec.get("minMember") if isinstance(spec, dict) else None
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def template_min_counts(self, workload: dict[str, Any]) -> dict[str, int | None]:
        return {}

    def render(self, design: Design) -> Rendered:
        podgroups = []
        patches: dict[str, dict[str, Any]] = {}
        warnings = []
        if design.composites:
            warnings.append(f"{self.key} has no CompositePodGroup: only the leaf gangs of the "
                            "JobSetGangOfGangs tree are spelled, each on its own")
        for g in design.groups:
            if g.min_count is None:
                # There is no "basic" PodGroup here: without a minimum the group adds nothing.
                warnings.append(f"group {g.podgroup} uses the Basic policy: no {self.key} object")
                continue
            podgroups.append(
                {
                    "apiVersion": self.podgroup_api_version,
                    "kind": "PodGroup",
                    "metadata": object_meta(design, g.podgroup, [dict(design.owner)]),
                    "spec": {"minMember": g.min_count, **self._extra_spec(g)},
                }
            )
            for member in g.members:
                patches[member] = {"metadata": self._join(g.podgroup)}
        return Rendered(None, podgroups, patches, warnings)


class SchedulerPlugins(_MinMemberPodGroups):
    """kubernetes-sigs/scheduler-plugins coscheduling: pods join through a label."""

    key = "scheduler-plugins"
    podgroup_api_version = "scheduling.x-k8s.io/v1alpha1"
    LABEL = "scheduling.x-k8s.io/pod-group"

    def _join(self, name: str) -> dict[str, Any]:
        return {"labels": {self.LABEL: name}}


class Volcano(_MinMemberPodGroups):
    """Volcano: pods join through an annotation; priority travels on the PodGroup."""

    key = "volcano"
    podgroup_api_version = "scheduling.volcano.sh/v1beta1"
    ANNOTATION = "scheduling.k8s.io/group-name"

    def _join(self, name: str) -> dict[str, Any]:
        return {"annotations": {self.ANNOTATION: name}}

    def _extra_spec(self, g: Group) -> dict[str, Any]:
        return {"priorityClassName": g.priority_class} if g.priority_class else {}
