"""The gangs of a JobSet: this project's annotations (jobset_modes) or upstream's
``spec.scheduling`` (was_builder), one ``Design`` either way for the target adapters.

Upstream's path needs the JobSetWorkloadAwareSchedulingAPI gate to be reconciled (Decide);
PlanGang and PodSets describe what a spec asks for whatever the gate, and say so.
JobSetGangOfGangs turns the flat PodGroups into a CompositePodGroup tree.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from decider.core.constants import GATE_GANG_OF_GANGS
from decider.core.errors import FieldError, InvalidInput
from decider.core.gang import jobset_modes, names, was_draft, was_rules
from decider.core.gang import was_builder as wb
from decider.core.gang.job_facts import GROUP_TEMPLATE_ANNOTATION
from decider.core.gang.jobset_facts import JOBSET_NAME_LABEL, JobSetFacts, Naming
from decider.core.gang.model import CompositeGroup, Design, Group
from decider.core.gang.was_spec import read_scheduling, use_top_level

MAX_TEMPLATES = 8


@dataclass
class JobSetDesignResult:
    design: Design | None
    mode: str
    explanation: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def tree_on(gates: Mapping[str, bool] | None) -> bool:
    return bool((gates or {}).get(GATE_GANG_OF_GANGS))


def validate(f: JobSetFacts, gates: Mapping[str, bool] | None = None) -> list[FieldError]:
    """Every rule a JobSet's gang configuration must meet to be planned: the annotations', or
    upstream's CRD and webhook rules on ``spec.scheduling`` (its gate taken as on: planning
    describes the spec; Decide is where the gate decides whether it is reconciled)."""
    errors = jobset_modes.validate(f)
    if errors or f.scheduling is None:
        return errors
    planned = {**(gates or {}), "JobSetWorkloadAwareSchedulingAPI": True}
    errors = was_draft.draft_errors(f.scheduling)
    if errors:
        return errors
    errors = was_rules.scheduling_cel_errors(f.scheduling, f.sequenced, planned)
    if errors:
        return errors
    return was_rules.webhook_errors(f, None, planned)


def _mode_design(f: JobSetFacts, naming: Naming) -> JobSetDesignResult:
    mode, groups, say, warnings = jobset_modes.design(f, naming)
    _check_templates(groups)
    return JobSetDesignResult(
        _design(f, naming, groups, naming.workload_labels(f), {}, naming.annotate_children()),
        mode, say, warnings)


def _check_templates(groups: list[Group]) -> None:
    seen: set[str] = set()
    for g in groups:
        if g.template in seen:
            raise InvalidInput.at("spec.scheduling.replicatedJobs",
                                  f"generated scheduling group name {g.template!r} is not unique")
        seen.add(g.template)
    if len(seen) > MAX_TEMPLATES:
        raise InvalidInput.at(
            "spec.scheduling.replicatedJobs",
            f"the JobSet needs {len(seen)} PodGroupTemplates; a Workload holds at most "
            f"{MAX_TEMPLATES} (the JobSet is not split)")


def _design(f: JobSetFacts, naming: Naming, groups: list[Group], workload_labels: dict[str, str],
            podgroup_labels: dict[str, str], annotate: bool,
            composites: list[CompositeGroup] | None = None) -> Design:
    annotations: dict[str, dict[str, str]] = {}
    if annotate:
        for g in groups:
            for m in g.members:
                annotations[m] = {GROUP_TEMPLATE_ANNOTATION: g.template}
    return Design(
        source_kind="JobSet",
        namespace=f.namespace,
        owner=f.owner_ref,
        controller_ref={"apiGroup": "jobset.x-k8s.io", "kind": "JobSet", "name": f.name},
        workload_name=naming.workload(f),
        groups=groups,
        workload_labels=workload_labels,
        podgroup_labels=podgroup_labels,
        job_annotations=annotations,
        composites=composites or [],
    )


def _draft_names(f: JobSetFacts, naming: Naming, groups: list[Group]) -> None:
    """v1alpha1 (1.35) keeps the draft implementation's names: the top-level template is the
    JobSet's name and a ReplicatedJob's own template its name."""
    if naming.style != "draft":
        return
    rename = {names.jobset_top_level_template(f.namespace, f.name): naming.top_level(f)}
    for r in f.rjobs:
        rename[names.jobset_rjob_template(f.namespace, f.name, r.name)] = naming.per_rjob(f, r.name)
    for g in groups:
        g.template = rename.get(g.template, g.template)


def _say_group(g: Group) -> str:
    policy = f"gang of {g.min_count}" if g.is_gang else "basic"
    return f"group {g.template} covers {', '.join(g.rjobs)}: {policy}"


def scheduling_design(f: JobSetFacts, naming: Naming,
                      gates: Mapping[str, bool] | None = None) -> JobSetDesignResult:
    """Upstream's ``spec.scheduling`` compiled (flat, or the tree with JobSetGangOfGangs).
    Raises ``wb.DuplicateName`` on a name collision; callers validate first."""
    assert f.scheduling is not None
    s = read_scheduling(f.scheduling)
    labels = {JOBSET_NAME_LABEL: f.name}
    workload_labels = {**labels, **naming.workload_labels(f)}
    say: list[str] = []
    if tree_on(gates):
        composites, groups = wb.build_tree(f, s)
        root = composites[0]
        say.append(
            f"JobSet {f.name} is a tree of CompositePodGroups (JobSetGangOfGangs): root "
            f"{root.name} " + (f"needs {root.min_group_count} of its {root.children} groups"
                               if root.is_gang else "is Basic (its groups independent)"))
        for c in composites[1:]:
            say.append(f"CompositePodGroup {c.name} covers {', '.join(c.rjobs)}: "
                       + (f"needs {c.min_group_count} of its {c.children} Jobs"
                          if c.is_gang else "Basic (its Jobs independent)"))
        leaves = {}
        for g in groups:
            leaves.setdefault(g.template, g)
        for g in leaves.values():
            say.append(f"each Job of {', '.join(g.rjobs)} is a PodGroup from template "
                       f"{g.template}: " + (f"gang of {g.min_count}" if g.is_gang else "basic"))
        return JobSetDesignResult(
            _design(f, naming, groups, workload_labels, labels, True, composites), "gangOfGangs",
            say)
    groups = wb.build_flat(f, s)
    _draft_names(f, naming, groups)
    if use_top_level(s):
        g = groups[0]
        say.append(f"JobSet {f.name} is one gang of {g.min_count} of its {g.pods} pods"
                   if g.is_gang else
                   f"JobSet {f.name} is one Basic PodGroup over its {g.pods} pods: no "
                   "all-or-nothing")
        mode = "topLevel"
    else:
        say.extend(_say_group(g) for g in groups)
        mode = "perReplicatedJob"
    return JobSetDesignResult(
        _design(f, naming, groups, workload_labels, labels, naming.annotate_children()), mode,
        say)


def design_jobset(f: JobSetFacts, naming: Naming,
                  gates: Mapping[str, bool] | None = None) -> JobSetDesignResult:
    """Decide the gangs of a JobSet; raises InvalidInput when its configuration is invalid."""
    errors = validate(f, gates)
    if errors:
        raise InvalidInput(errors)
    if f.scheduling is None and f.mode is None:
        return JobSetDesignResult(
            None, "none", [f"JobSet {f.name} asks for no gang scheduling: no objects"])
    if f.mode is not None:
        return _mode_design(f, naming)
    return scheduling_design(f, naming, gates)


__all__ = ["JobSetDesignResult", "design_jobset", "scheduling_design", "tree_on", "validate"]
