"""Target-neutral description of a gang, and the plan handed back to callers.

The rule modules (``job``, ``jobset``) decide *what* gangs exist; a target adapter
(``targets``) decides *how* they are spelled for one API generation or scheduler. The ``Design``
between them is the seam that keeps the rules free of per-version ``if`` ladders.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from decider.core.errors import FieldError, InvalidInput
from decider.core.model import Toleration


@dataclass
class Group:
    """One gang unit: a PodGroupTemplate in the Workload and the PodGroup made from it."""

    template: str
    podgroup: str
    # None means the Basic policy: no all-or-nothing, pods are scheduled one by one.
    min_count: int | None
    pods: int
    members: list[str] = field(default_factory=list)
    rjobs: list[str] = field(default_factory=list)
    topology: list[dict[str, Any]] = field(default_factory=list)
    disruption: str | None = None  # "single" | "all" | None (not set)
    claims: list[dict[str, Any]] = field(default_factory=list)
    priority_class: str = ""
    # A present but empty schedulingConstraints ({}), as upstream's builder copies it.
    constraints_set: bool = False
    # JobSetGangOfGangs: the CompositePodGroup this group's PodGroup joins (object name), and
    # the CompositePodGroupTemplate its template sits under. Several groups (one per Job) may
    # share one template there: a template is instantiated once per Job.
    parent: str | None = None
    parent_template: str | None = None

    @property
    def is_gang(self) -> bool:
        return self.min_count is not None


@dataclass
class CompositeGroup:
    """One CompositePodGroupTemplate and the CompositePodGroup made from it (JobSetGangOfGangs).

    ``min_group_count`` counts child groups (CompositePodGroups or PodGroups), not pods; None
    means the Basic policy (children scheduled independently).
    """

    template: str
    name: str
    min_group_count: int | None
    children: int
    rjobs: list[str] = field(default_factory=list)
    topology: list[dict[str, Any]] = field(default_factory=list)
    constraints_set: bool = False
    disruption: str | None = None
    priority_class: str = ""
    parent: str | None = None  # the parent CompositePodGroup's name; None for the root
    parent_template: str | None = None
    # Set from an observed CompositePodGroup's status (CompositePodGroupInitiallyScheduled).
    explanation: str = ""

    @property
    def is_gang(self) -> bool:
        return self.min_group_count is not None


@dataclass
class Design:
    """Everything a target needs to render manifests, and nothing version-specific."""

    source_kind: str  # "Job" | "JobSet"
    namespace: str
    owner: dict[str, Any]  # controller ownerReference to the Job or JobSet
    controller_ref: dict[str, str]
    workload_name: str
    groups: list[Group]
    # A delegated Job only creates its PodGroup: the Workload belongs to the parent.
    create_workload: bool = True
    workload_uid: str = ""
    # A root Job's PodGroup also names its Workload as a (non-controller) owner.
    podgroup_owned_by_workload: bool = False
    workload_labels: dict[str, str] = field(default_factory=dict)
    # JobSetWorkloadTemplate: the user's Workload spec, copied verbatim for its generation.
    workload_spec_override: dict[str, Any] | None = None
    # Child-Job metadata annotations (JobSet delegation hint), keyed like pod template patches.
    job_annotations: dict[str, dict[str, str]] = field(default_factory=dict)
    podgroup_labels: dict[str, str] = field(default_factory=dict)
    # JobSetGangOfGangs: the CompositePodGroup tree, root first (parents before children).
    composites: list[CompositeGroup] = field(default_factory=list)


@dataclass
class Rendered:
    workload: dict[str, Any] | None
    podgroups: list[dict[str, Any]]
    pod_template_patches: dict[str, dict[str, Any]]
    warnings: list[str] = field(default_factory=list)
    # CompositePodGroups, root first: created after the Workload, before the PodGroups.
    composites: list[dict[str, Any]] = field(default_factory=list)

    @property
    def objects(self) -> list[dict[str, Any]]:
        return ([self.workload] if self.workload else []) + self.composites + self.podgroups


@dataclass
class GangPlan:
    """What to do so that the input is gang scheduled.

    ``objects`` are full manifests in creation order (Workload, then PodGroups; pods come last
    and are the controller's business). ``updates`` carry merge patches for objects that exist
    and may change in place (only ``gang.minCount`` may); ``deletes`` name objects to remove
    with their uid as a precondition. An ownerReference whose ``uid`` is empty refers to an
    object created earlier in the same plan: fill in its uid once it exists.
    """

    objects: list[dict[str, Any]] = field(default_factory=list)
    pod_template_patches: dict[str, dict[str, Any]] = field(default_factory=dict)
    explanation: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    job_annotations: dict[str, dict[str, str]] = field(default_factory=dict)
    updates: list[dict[str, Any]] = field(default_factory=list)
    deletes: list[dict[str, Any]] = field(default_factory=list)
    # Same-named objects still being deleted (a deletionTimestamp): the plan creates nothing
    # until they are gone, and no Job may be created or resumed meanwhile (its pods would join,
    # and keep alive through the protection finalizer, the group that is going away).
    # Not part of ``to_dict``: the explanation says it, and the RPC has no field for it.
    waiting: list[dict[str, Any]] = field(default_factory=list)
    mode: str = "none"
    groups: list[Group] = field(default_factory=list)
    composites: list[CompositeGroup] = field(default_factory=list)
    # Every object the JobSet needs exists, is live and matches (upstream's readiness gate:
    # schedulingObjectsReady). Not part of ``to_dict``.
    ready: bool = True
    # Planned from upstream's spec.scheduling (gated, upstream's lifecycle) rather than from
    # this project's annotations.
    upstream: bool = False

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "objects": self.objects,
            "podTemplatePatches": self.pod_template_patches,
            "explanation": self.explanation,
        }
        if self.warnings:
            out["warnings"] = self.warnings
        if self.job_annotations:
            out["jobAnnotations"] = self.job_annotations
        if self.updates:
            out["updates"] = self.updates
        if self.deletes:
            out["deletes"] = self.deletes
        out["mode"] = self.mode
        return out


class OwnershipConflict(InvalidInput):
    """An object with the name we need exists and is controlled by someone else.

    Upstream's JobSet controller refuses to adopt it and fails the reconcile; callers that can
    do other work (status updates) may catch this subclass specifically.
    """


@dataclass(frozen=True)
class PodSetInfo:
    """One Kueue pod set, next to the gang that covers it."""

    name: str
    count: int
    replicated_job: str | None
    gang_podgroup: str | None
    gang_template: str | None
    gang_min_count: int | None
    gang_pod_sets: tuple[str, ...]
    warnings: tuple[str, ...] = ()
    # What Kueue reads from the pod template (gang.kueue): one pod's requests in Kueue's
    # integers (millicores for cpu), times count, node selector, tolerations, topology request.
    pod_requests: dict[str, int] = field(default_factory=dict)
    total_requests: dict[str, int] = field(default_factory=dict)
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: tuple[Toleration, ...] = ()
    topology_request: dict[str, Any] | None = None
    # Kueue's minCount for partial admission (a Job's kueue.x-k8s.io/job-min-parallelism).
    min_count: int | None = None
    # JobSetGangOfGangs: every PodGroup of the pod set (one per Job), and the CompositePodGroups
    # above them, nearest first ({name, template, minGroupCount, children}).
    gang_pod_groups: tuple[str, ...] = ()
    gang_composites: tuple[dict[str, Any], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        # minCount only where Kueue sets one, as its PodSet's JSON (omitempty) shows it.
        min_count = {} if self.min_count is None else {"minCount": self.min_count}
        return {
            "name": self.name,
            "count": self.count,
            **min_count,
            "replicatedJob": self.replicated_job,
            "gang": None
            if self.gang_podgroup is None
            else {
                "podGroup": self.gang_podgroup,
                "template": self.gang_template,
                "minCount": self.gang_min_count,
                "podSets": list(self.gang_pod_sets),
                # Only with the tree, so a flat plan's JSON is what it always was.
                **({"podGroups": list(self.gang_pod_groups),
                    "compositePodGroups": [dict(c) for c in self.gang_composites]}
                   if self.gang_composites else {}),
            },
            "warnings": list(self.warnings),
            "podRequests": dict(self.pod_requests),
            "totalRequests": dict(self.total_requests),
            "nodeSelector": dict(self.node_selector),
            "tolerations": [t.to_dict() for t in self.tolerations],
            "topologyRequest": self.topology_request,
        }


__all__ = [
    "CompositeGroup",
    "Design",
    "FieldError",
    "GangPlan",
    "Group",
    "OwnershipConflict",
    "PodSetInfo",
    "Rendered",
]
