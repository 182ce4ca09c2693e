"""The native targets: Workloads and PodGroups of ``scheduling.k8s.io``, one adapter per API
generation (1.35 ``v1alpha1``, 1.36 ``v1alpha2``, 1.37 ``v1beta1`` with the CompositePodGroup
tree of ``v1alpha3``).

Apart from the out-of-tree targets because these share a Workload with templates, the
basic/gang policy union and the disruption and topology blocks that the others cannot spell.
"""

from __future__ import annotations

import copy
from typing import Any, ClassVar

from decider.core.errors import InvalidInput
from decider.core.gang.model import CompositeGroup, Design, Group, Rendered
from decider.core.gang.targets import V1ALPHA1, V1ALPHA2, V1ALPHA3, V1BETA1, object_meta


def _no_composites(design: Design, key: str) -> None:
    if design.composites:
        raise InvalidInput.at(
            "options.gang_api_version",
            f"JobSetGangOfGangs builds a CompositePodGroup tree, which {key} cannot express: "
            f"use {V1BETA1} (CompositePodGroup objects are {V1ALPHA3})")


def _policy(group: Group) -> dict[str, Any]:
    if group.min_count is None:
        return {"basic": {}}
    return {"gang": {"minCount": group.min_count}}


def _composite_policy(c: CompositeGroup) -> dict[str, Any]:
    if c.min_group_count is None:
        return {"basic": {}}
    return {"gang": {"minGroupCount": c.min_group_count}}


def _gang_min(policy: Any) -> int | None:
    if not isinstance(policy, dict):
        return None
    gang = policy.get("gang")
    if isinstance(gang, dict) and isinstance(gang.get("minCount"), int):
        return int(gang["minCount"])
    return None


class _Native:
    """Shared rendering for the ``scheduling.k8s.io`` generations."""

    key: ClassVar[str]
    supports_basic: ClassVar[bool] = True
    runtime_podgroups: ClassVar[bool] = True
    supports_composites: ClassVar[bool] = False

    def is_composite(self, obj: dict[str, Any]) -> bool:
        return False

    @property
    def podgroup_api_version(self) -> str:
        return self.key

    @property
    def workload_api_version(self) -> str | None:
        return self.key

    def is_workload(self, obj: dict[str, Any]) -> bool:
        return obj.get("kind") == "Workload" and obj.get("apiVersion") == self.key

    def is_podgroup(self, obj: dict[str, Any]) -> bool:
        return obj.get("kind") == "PodGroup" and obj.get("apiVersion") == self.key

    def podgroup_min_count(self, obj: dict[str, Any]) -> int | None:
        spec = obj.get("spec")
        return _gang_min(spec.get("schedulingPolicy")) if isinstance(spec, dict) else None

    def _owners_for_podgroup(self, design: Design) -> list[dict[str, Any]]:
        owners = [dict(design.owner)]
        if design.podgroup_owned_by_workload:
            # Deliberately neither controller nor blockOwnerDeletion: deleting the Workload must
            # never wait for PodGroups (the 1.36 controller leaves both flags unset).
            owners.append(
                {
                    "apiVersion": self.key,
                    "kind": "Workload",
                    "name": design.workload_name,
                    "uid": design.workload_uid,
                }
            )
        return owners

    def _workload(self, design: Design, spec: dict[str, Any]) -> dict[str, Any]:
        meta = object_meta(design, design.workload_name, [dict(design.owner)],
                           design.workload_labels)
        return {"apiVersion": self.key, "kind": "Workload", "metadata": meta, "spec": spec}


class KubernetesV1Alpha1(_Native):
    """1.35: groups are embedded in the Workload; pods point at it with ``spec.workloadRef``."""

    key = V1ALPHA1
    runtime_podgroups = False

    def is_podgroup(self, obj: dict[str, Any]) -> bool:
        return False  # v1alpha1 has no standalone PodGroup kind

    def podgroup_workload(self, obj: dict[str, Any]) -> str | None:
        return None

    def template_min_counts(self, workload: dict[str, Any]) -> dict[str, int | None]:
        spec = workload.get("spec")
        groups = spec.get("podGroups") if isinstance(spec, dict) else None
        out: dict[str, int | None] = {}
        for g in groups if isinstance(groups, list) else []:
            if isinstance(g, dict) and isinstance(g.get("name"), str):
                out[g["name"]] = _gang_min(g.get("policy"))
        return out

    def render(self, design: Design) -> Rendered:
        _no_composites(design, self.key)
        warnings: list[str] = []
        if design.workload_spec_override is not None:
            spec = copy.deepcopy(design.workload_spec_override)
        else:
            groups = []
            for g in design.groups:
                if g.topology or g.claims or g.disruption or g.priority_class:
                    warnings.append(
                        f"group {g.template}: topology, resource claims, disruption mode and "
                        f"priority are not expressible in {self.key} and were dropped"
                    )
                groups.append({"name": g.template, "policy": _policy(g)})
            spec = {"controllerRef": dict(design.controller_ref), "podGroups": groups}
        patches: dict[str, dict[str, Any]] = {}
        for g in design.groups:
            ref = {"name": design.workload_name, "podGroup": g.template}
            for member in g.members:
                patches[member] = {"spec": {"workloadRef": dict(ref)}}
        workload = self._workload(design, spec) if design.create_workload else None
        return Rendered(workload, [], patches, warnings)


class _RuntimePodGroups(_Native):
    """1.36 and later: templates in the Workload, one runtime PodGroup object per gang."""

    def _disruption(self, mode: str) -> Any:
        """How this version spells a disruption mode ("single" or "all")."""
        raise NotImplementedError

    def _blocks(self, g: Group) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if g.claims:
            out["resourceClaims"] = copy.deepcopy(g.claims)
        if g.disruption:
            out["disruptionMode"] = self._disruption(g.disruption)
        if g.priority_class:
            out["priorityClassName"] = g.priority_class
        return out

    def _template(self, g: Group) -> dict[str, Any]:
        # The Go types have no omitempty on schedulingConstraints, so the API serves an explicit
        # null; emitting it keeps our manifests identical to what the cluster shows.
        return {
            "name": g.template,
            "schedulingPolicy": _policy(g),
            "schedulingConstraints": _topology(g),
            **self._blocks(g),
        }

    def _templates(self, groups: list[Group]) -> list[dict[str, Any]]:
        """One template per name: a tree's leaf template is shared by the Jobs it makes."""
        out: dict[str, dict[str, Any]] = {}
        for g in groups:
            # Rendered once per name, not per Job: setdefault would render (and deep-copy the
            # claims of) every one of a 100,000-Job tree's leaves to keep the first.
            if g.template not in out:
                out[g.template] = self._template(g)
        return list(out.values())

    def _podgroup_spec(self, design: Design, g: Group) -> dict[str, Any]:
        raise NotImplementedError

    def template_min_counts(self, workload: dict[str, Any]) -> dict[str, int | None]:
        spec = workload.get("spec")
        tpls = spec.get("podGroupTemplates") if isinstance(spec, dict) else None
        out: dict[str, int | None] = {}
        for t in tpls if isinstance(tpls, list) else []:
            if isinstance(t, dict) and isinstance(t.get("name"), str):
                out[t["name"]] = _gang_min(t.get("schedulingPolicy"))
        return out

    def _workload_spec(self, design: Design) -> dict[str, Any]:
        _no_composites(design, self.key)
        return {
            "controllerRef": dict(design.controller_ref),
            "podGroupTemplates": self._templates(design.groups),
        }

    def _composites(self, design: Design) -> list[dict[str, Any]]:
        return []

    def render(self, design: Design) -> Rendered:
        if design.workload_spec_override is not None:
            spec = copy.deepcopy(design.workload_spec_override)
        else:
            spec = self._workload_spec(design)
        workload = self._workload(design, spec) if design.create_workload else None
        podgroups = []
        patches: dict[str, dict[str, Any]] = {}
        for g in design.groups:
            podgroups.append(
                {
                    "apiVersion": self.key,
                    "kind": "PodGroup",
                    "metadata": object_meta(design, g.podgroup,
                                            self._owners_for_podgroup(design),
                                            design.podgroup_labels),
                    "spec": self._podgroup_spec(design, g),
                }
            )
            for member in g.members:
                patches[member] = {"spec": {"schedulingGroup": {"podGroupName": g.podgroup}}}
        return Rendered(workload, podgroups, patches, composites=self._composites(design))


def _topology(g: Group | CompositeGroup) -> dict[str, Any] | None:
    if g.topology:
        return {"topology": copy.deepcopy(g.topology)}
    # A present but empty block (upstream's builder copies the pointer) stays present.
    return {} if g.constraints_set else None


class KubernetesV1Alpha2(_RuntimePodGroups):
    """1.36: ``podGroupTemplateRef.workload`` on the PodGroup, string disruption modes."""

    key = V1ALPHA2
    _DISRUPTION = {"single": "Pod", "all": "PodGroup"}

    def podgroup_workload(self, obj: dict[str, Any]) -> str | None:
        spec = obj.get("spec")
        ref = spec.get("podGroupTemplateRef") if isinstance(spec, dict) else None
        wl = ref.get("workload") if isinstance(ref, dict) else None
        name = wl.get("workloadName") if isinstance(wl, dict) else None
        return name if isinstance(name, str) else None

    def _disruption(self, mode: str) -> Any:
        return self._DISRUPTION[mode]

    def _podgroup_spec(self, design: Design, g: Group) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "podGroupTemplateRef": {
                "workload": {
                    "workloadName": design.workload_name,
                    "podGroupTemplateName": g.template,
                }
            },
            "schedulingPolicy": _policy(g),
        }
        if _topology(g) is not None:
            spec["schedulingConstraints"] = _topology(g)
        spec.update(self._blocks(g))
        return spec


class KubernetesV1Beta1(_RuntimePodGroups):
    """1.37: ``spec.workloadRef{workloadName, templateName}``, union disruption modes."""

    key = V1BETA1

    def podgroup_workload(self, obj: dict[str, Any]) -> str | None:
        spec = obj.get("spec")
        ref = spec.get("workloadRef") if isinstance(spec, dict) else None
        name = ref.get("workloadName") if isinstance(ref, dict) else None
        return name if isinstance(name, str) else None

    def _disruption(self, mode: str) -> Any:
        return {mode: {}}  # a union: {"single": {}} or {"all": {}}

    supports_composites = True

    def is_composite(self, obj: dict[str, Any]) -> bool:
        return obj.get("kind") == "CompositePodGroup" and obj.get("apiVersion") == V1ALPHA3

    def _podgroup_spec(self, design: Design, g: Group) -> dict[str, Any]:
        spec: dict[str, Any] = {}
        if g.parent is not None:
            spec["parentCompositePodGroupName"] = g.parent
        spec["workloadRef"] = {"workloadName": design.workload_name, "templateName": g.template}
        spec["schedulingPolicy"] = _policy(g)
        if _topology(g) is not None:
            spec["schedulingConstraints"] = _topology(g)
        spec.update(self._blocks(g))
        return spec

    def _composite_blocks(self, c: CompositeGroup) -> dict[str, Any]:
        out: dict[str, Any] = {"schedulingPolicy": _composite_policy(c)}
        if _topology(c) is not None:
            out["schedulingConstraints"] = _topology(c)
        if c.disruption:
            out["disruptionMode"] = {c.disruption: {}}
        if c.priority_class:
            out["priorityClassName"] = c.priority_class
        return out

    def _workload_spec(self, design: Design) -> dict[str, Any]:
        if not design.composites:
            return super()._workload_spec(design)
        by_parent: dict[str | None, list[CompositeGroup]] = {}
        for c in design.composites:
            by_parent.setdefault(c.parent_template, []).append(c)

        def template(c: CompositeGroup) -> dict[str, Any]:
            out: dict[str, Any] = {"name": c.template, **self._composite_blocks(c)}
            leaves = [g for g in design.groups if g.parent_template == c.template]
            if leaves:
                out["podGroupTemplates"] = self._templates(leaves)
            children = by_parent.get(c.template, [])
            if children:
                out["compositePodGroupTemplates"] = [template(k) for k in children]
            return out

        # WorkloadSpec.podGroupTemplates has no omitempty: a tree's Workload, which has none at
        # the top, is served with an explicit null (seen on a v1.37.2 API server).
        return {
            "controllerRef": dict(design.controller_ref),
            "podGroupTemplates": None,
            "compositePodGroupTemplates": [template(c) for c in by_parent.get(None, [])],
        }

    def _composites(self, design: Design) -> list[dict[str, Any]]:
        out = []
        for c in design.composites:
            spec: dict[str, Any] = {}
            if c.parent is not None:
                spec["parentCompositePodGroupName"] = c.parent
            spec["workloadRef"] = {"workloadName": design.workload_name,
                                   "templateName": c.template}
            spec.update(self._composite_blocks(c))
            out.append({
                "apiVersion": V1ALPHA3,
                "kind": "CompositePodGroup",
                "metadata": object_meta(design, c.name, [dict(design.owner)],
                                        design.podgroup_labels),
                "spec": spec,
            })
        return out

