"""Public entry points: plan gangs, report Kueue pod sets, validate updates.

An API generation (a ``scheduling.k8s.io`` version) fixes two things: which upstream rules decide
the gangs (KEP-5547 1.36 or 1.37 for Jobs, draft or WAS naming for JobSets) and, for the
``kubernetes`` target, how they are spelled. Other targets keep the rules of the chosen
generation and spell the gangs their own way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from decider.core import access as acc
from decider.core.errors import FieldError, InvalidInput
from decider.core.gang import job_facts
from decider.core.gang import jobset_design as design
from decider.core.gang import jobset_facts as facts
from decider.core.gang import jobset_objects as objects
from decider.core.gang import scheduling_status as status
from decider.core.gang.job import plan_job
from decider.core.gang.model import GangPlan
from decider.core.gang.targets import (
    V1ALPHA1,
    V1ALPHA2,
    V1BETA1,
    GangTarget,
    lookup,
    register,
    registered,
)
from decider.core.gang.targets_kubernetes import (
    KubernetesV1Alpha1,
    KubernetesV1Alpha2,
    KubernetesV1Beta1,
)
from decider.core.gang.targets_out_of_tree import SchedulerPlugins, Volcano

# The adapters the decider ships, registered here where they are looked up, so that no module
# is imported only for what importing it does; TARGETS lists the others in this order.
for _target in (KubernetesV1Alpha1(), KubernetesV1Alpha2(), KubernetesV1Beta1(),
                SchedulerPlugins(), Volcano()):
    register(_target)


@dataclass(frozen=True)
class Generation:
    api_version: str
    kubernetes: str
    job_rules: str
    jobset_naming: facts.Naming


_GENERATIONS: dict[str, Generation] = {
    V1ALPHA1: Generation(V1ALPHA1, "1.35", job_facts.RULES_136, facts.Naming("draft")),
    V1ALPHA2: Generation(V1ALPHA2, "1.36", job_facts.RULES_136, facts.Naming("upstream")),
    V1BETA1: Generation(V1BETA1, "1.37", job_facts.RULES_137, facts.Naming("upstream")),
}

API_VERSIONS: tuple[str, ...] = tuple(_GENERATIONS)
NEWEST = V1BETA1
KUBERNETES = "kubernetes"
TARGETS: tuple[str, ...] = (KUBERNETES, *(k for k in registered() if k not in _GENERATIONS))

def generation(api_version: str) -> Generation:
    try:
        return _GENERATIONS[api_version]
    except KeyError:
        raise InvalidInput.at(
            "apiVersion",
            f"unsupported scheduling API version {api_version!r}; one of {', '.join(API_VERSIONS)}",
        ) from None


def resolve_target(target: str, api_version: str) -> tuple[Generation, GangTarget, GangTarget]:
    """The generation, its native adapter, and the adapter that renders the plan."""
    gen = generation(api_version)
    native = lookup(api_version, "apiVersion")
    if target == KUBERNETES:
        return gen, native, native
    if target in _GENERATIONS:
        raise InvalidInput.at("target", f"use target {KUBERNETES!r} with apiVersion {target!r}")
    return gen, native, lookup(target, "target")


def _existing(existing: Iterable[Any]) -> list[dict[str, Any]]:
    if existing is None:
        return []
    if isinstance(existing, dict | str | bytes) or not hasattr(existing, "__iter__"):
        raise InvalidInput.at("existing", "must be a list of objects")
    out = []
    for i, obj in enumerate(existing):
        obj = acc.as_map(obj, f"existing[{i}]")
        acc.child(obj, "metadata", f"existing[{i}]")
        acc.string(obj, "kind", f"existing[{i}]")
        acc.string(obj, "apiVersion", f"existing[{i}]")
        out.append(obj)
    return out


def kind_of(obj: Any) -> str:
    """'Job' or 'JobSet'; InvalidInput at `kind` for anything else."""
    obj = acc.as_map(obj, "")
    kind = acc.string(obj, "kind", "")
    if kind not in ("Job", "JobSet"):
        raise InvalidInput.at("kind", f"expected a batch/v1 Job or a JobSet, got {kind!r}")
    return kind


def plan_gang(
    obj: dict[str, Any],
    existing: Iterable[dict[str, Any]] = (),
    api_version: str = NEWEST,
    target: str = KUBERNETES,
    gates: Mapping[str, bool] | None = None,
) -> GangPlan:
    """Objects to create (in order) and pod-template patches so that ``obj`` is gang scheduled."""
    kind = kind_of(obj)
    gen, native, renderer = resolve_target(target, api_version)
    found = _existing(existing)
    if kind == "Job":
        return plan_job(obj, found, gen.job_rules, native, renderer)
    plan = jobset_gang(obj, api_version, found, target, gates)
    if plan is None:
        f = facts.read_jobset(obj)
        return GangPlan(explanation=[f"JobSet {f.name} asks for no gang scheduling: no objects"])
    return plan


def jobset_gang(
    jobset: dict[str, Any],
    api_version: str = NEWEST,
    existing: Iterable[dict[str, Any]] = (),
    target: str = KUBERNETES,
    gates: Mapping[str, bool] | None = None,
) -> GangPlan | None:
    """The JobSet controller's gang step, as Decide runs it before creating child Jobs.

    Returns None when the JobSet asks for no gang scheduling. Otherwise the plan carries the
    objects to create (Workload first, then CompositePodGroups root first, then PodGroups), per
    child Job (``<jobset>-<rjob>-<index>``) the pod template patch and Job annotations it must
    be created with, in-place minCount updates, and deletions (suspend, finish, or drift of an
    immutable field: objects are recreated on a later pass). An object already being deleted is
    never deleted again; while one the JobSet needs is still terminating, nothing is created
    and ``waiting`` names it. Raises ``OwnershipConflict`` when a same-named object is
    controlled by someone else (its ``partial`` attribute holds what was planned before it).
    """
    gen, _native, renderer = resolve_target(target, api_version)
    found = _existing(existing)
    f = facts.read_jobset(jobset)
    try:
        result = design.design_jobset(f, gen.jobset_naming, gates)
    except InvalidInput:
        if f.mode is not None or f.scheduling is None or not (f.finished or f.suspended):
            raise
        # Upstream deletes a suspended or finished JobSet's objects by label and name without
        # compiling its spec: one that no longer compiles still gets its objects removed.
        return _delete_only(f, gen, renderer, found)
    if result.design is None:
        return None
    d = result.design
    rendered = renderer.render(d)
    plan = GangPlan(
        mode=result.mode,
        explanation=list(result.explanation),
        warnings=[*result.warnings, *rendered.warnings],
        groups=d.groups,
        composites=d.composites,
        pod_template_patches=rendered.pod_template_patches,
        job_annotations=d.job_annotations,
        upstream=f.mode is None,
    )
    judge: objects.DriftJudge = objects.UpstreamDrift() if plan.upstream \
        else objects.ProjectDrift()
    objects.reconcile(plan, f, rendered, found, renderer, judge, d.workload_name)
    plan.explanation.extend(status.explain(found, d, renderer))
    return plan


def _delete_only(f: facts.JobSetFacts, gen: Generation, renderer: GangTarget,
                 found: list[dict[str, Any]]) -> GangPlan:
    from decider.core.gang.model import Rendered

    plan = GangPlan(mode="none", upstream=True)
    objects.reconcile(plan, f, Rendered(None, [], {}), found, renderer, objects.UpstreamDrift(),
                      gen.jobset_naming.workload(f))
    return plan


def validate_job_update(
    new_job: dict[str, Any],
    old_job: dict[str, Any],
    api_version: str = NEWEST,
    existing: Iterable[dict[str, Any]] | None = None,
) -> list[FieldError]:
    """Update validation of a Job under the given generation's gang rules.

    1.36 freezes ``spec.parallelism`` of a gang-scheduled Job (Elastic Indexed Jobs are off).
    Whether it is gang scheduled is read from ``existing`` when given (the admission plugin
    looks up the PodGroup); with ``existing=None`` it is inferred from the 1.36 rules.
    1.37 drops the freeze and validates ``spec.scheduling`` instead.
    """
    gen, native, _ = resolve_target(KUBERNETES, api_version)
    new = job_facts.read_job(new_job, need_identity=False)
    old = job_facts.read_job(old_job, need_identity=False)
    errors: list[FieldError] = []
    if gen.job_rules == job_facts.RULES_136:
        if new.parallelism == old.parallelism:
            return errors
        pg = _gang_podgroup_136(old, native, None if existing is None else _existing(existing))
        if pg is not None:
            errors.append(
                FieldError(
                    "spec.parallelism",
                    f"Forbidden: cannot change parallelism for a Job referencing gang-scheduled "
                    f'PodGroup "{pg}"',
                )
            )
        return errors
    if (new.scheduling is None) != (old.scheduling is None):
        errors.append(FieldError("spec.scheduling", "field is immutable: cannot be set or unset"))
        return errors
    new_blocks = job_facts.job_blocks(new, errors)
    if old.scheduling is not None:
        old_blocks = job_facts.job_blocks(old, [])
        if new_blocks.policy != old_blocks.policy:
            errors.append(
                FieldError(
                    "spec.scheduling.schedulingPolicy", "the basic/gang variant is immutable"
                )
            )
        for attr, field in (
            ("topology", "schedulingConstraints"),
            ("disruption", "disruptionMode"),
            ("claims", "resourceClaims"),
        ):
            if getattr(new_blocks, attr) != getattr(old_blocks, attr):
                errors.append(FieldError(f"spec.scheduling.{field}", "field is immutable"))
    return errors


def _gang_podgroup_136(
    old: job_facts.JobFacts, native: GangTarget, existing: list[dict[str, Any]] | None
) -> str | None:
    if existing is not None:
        ref = (old.scheduling_group or {}).get("podGroupName")
        for pg in existing:
            if not native.runtime_podgroups or not native.is_podgroup(pg):
                continue
            name = objects.meta(pg).get("name")
            gang = native.podgroup_min_count(pg) is not None
            if gang and (name == ref or (old.uid and objects.controller_uid(pg) == old.uid)):
                return str(name)
        return None
    ok, _ = job_facts.gang_candidate_136(old)
    if not ok or not old.name:
        return None
    from decider.core.gang import names

    wl = names.job_workload_name(old.name, old.uid)
    return names.job_podgroup_name(wl, names.job_template_name(old.name))


def validate_jobset_scheduling(jobset: dict[str, Any]) -> list[FieldError]:
    """Admission rules of this project's gang annotations (``spec.scheduling``'s are
    admission's own tiers: admission/scheduling)."""
    f = facts.read_jobset(jobset, need_identity=False)
    if f.mode is None:
        return design.jobset_modes.validate(f)
    errors = design.validate(f)
    if errors:
        return errors
    try:
        design.design_jobset(f, facts.Naming("upstream"))
    except InvalidInput as exc:
        errors.extend(exc.errors)
    return errors
