"""Public entry points: plan gangs, report Kueue pod sets, validate updates.

An API generation (a ``scheduling.k8s.io`` version) fixes two things: which upstream rules decide
the gangs (KEP-5547 1.36 or 1.37 for Jobs, draft or WAS naming for JobSets) and, for the
``kubernetes`` target, how they are spelled. Other targets keep the rules of the chosen
generation and spell the gangs their own way.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from decider.core import access as acc
from decider.core.errors import FieldError, InvalidInput
from decider.core.gang import job as jobrules
from decider.core.gang import jobset as jsrules
from decider.core.gang.model import GangPlan, OwnershipConflict
from decider.core.gang.targets import V1ALPHA1, V1ALPHA2, V1BETA1, GangTarget, lookup, registered


@dataclass(frozen=True)
class Generation:
    api_version: str
    kubernetes: str
    job_rules: str
    jobset_naming: jsrules.Naming


_GENERATIONS: dict[str, Generation] = {
    V1ALPHA1: Generation(V1ALPHA1, "1.35", jobrules.RULES_136, jsrules.Naming("draft")),
    V1ALPHA2: Generation(V1ALPHA2, "1.36", jobrules.RULES_136, jsrules.Naming("upstream")),
    V1BETA1: Generation(V1BETA1, "1.37", jobrules.RULES_137, jsrules.Naming("upstream")),
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
) -> GangPlan:
    """Objects to create (in order) and pod-template patches so that ``obj`` is gang scheduled."""
    kind = kind_of(obj)
    gen, native, renderer = resolve_target(target, api_version)
    found = _existing(existing)
    if kind == "Job":
        return jobrules.plan_job(obj, found, gen.job_rules, native, renderer)
    plan = jobset_gang(obj, api_version, found, target)
    if plan is None:
        f = jsrules.read_jobset(obj)
        return GangPlan(explanation=[f"JobSet {f.name} asks for no gang scheduling: no objects"])
    return plan


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _controller_uid(obj: dict[str, Any]) -> str | None:
    for ref in _meta(obj).get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller") is True:
            uid = ref.get("uid")
            return uid if isinstance(uid, str) else ""
    return None


def _ref(obj: dict[str, Any]) -> dict[str, Any]:
    meta = _meta(obj)
    return {
        "apiVersion": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "name": meta.get("name"),
        "uid": meta.get("uid", ""),
    }


def _terminating(obj: dict[str, Any]) -> bool:
    """Already being deleted: a protection finalizer keeps it until no pod uses the group."""
    return bool(_meta(obj).get("deletionTimestamp"))


def _drifted(current: Any, desired: Any) -> bool:
    """Whether ``current`` differs from ``desired`` in a field the decider sets.

    Only the fields of ``desired`` are compared. Whatever else the existing object carries was
    put there by the server or someone else and is never ours to undo: the Priority admission
    plugin (``priority``, a global default ``priorityClassName``, ``preemptionPolicy``), API
    defaults (``disruptionMode``), Volcano's webhook (``queue: default``), scheduler-plugins
    (``scheduleTimeoutSeconds``, ``minResources``), and whatever a newer server or another
    webhook adds. A per-target list of such fields would have to be complete for every server
    version and webhook, and any gap is a delete/create hot loop; the objects the decider
    builds come from the JobSet's spec, so comparing its own fields is enough to see a change.

    ``minCount`` (and scheduler-plugins' and Volcano's ``minMember``) is left out: patched in
    place instead, as both servers allow, rather than replacing a running gang's PodGroup. An
    explicit ``null`` in ``desired`` is a value the decider sets (``schedulingConstraints:
    null`` of a template without topology): the existing field must be absent or null. Lists
    must have the same length (a template added or removed is drift), and are compared item
    by item.
    """
    if isinstance(desired, dict):
        if not isinstance(current, dict):
            return True
        for key, want in desired.items():
            if key in ("minCount", "minMember"):
                continue  # patched in place (_min_count_patch)
            have = current.get(key)
            if want is None:
                if have is not None:
                    return True
            elif _drifted(have, want):
                return True
        return False
    if isinstance(desired, list):
        if not isinstance(current, list) or len(current) != len(desired):
            return True
        return any(_drifted(c, d) for c, d in zip(current, desired, strict=True))
    # A bool is not the number it equals in Python (True == 1); numbers compare by value.
    return isinstance(current, bool) != isinstance(desired, bool) or current != desired


def _min_counts(obj: dict[str, Any]) -> list[int | None]:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return []
    out: list[int | None] = []
    policies = []
    if "schedulingPolicy" in spec:
        policies.append(spec.get("schedulingPolicy"))
    if "minMember" in spec:
        return [spec.get("minMember") if isinstance(spec.get("minMember"), int) else None]
    for key, pkey in (("podGroupTemplates", "schedulingPolicy"), ("podGroups", "policy")):
        for t in spec.get(key) or []:
            policies.append(t.get(pkey) if isinstance(t, dict) else None)
    for p in policies:
        gang = p.get("gang") if isinstance(p, dict) else None
        mc = gang.get("minCount") if isinstance(gang, dict) else None
        out.append(mc if isinstance(mc, int) else None)
    return out


def _min_count_patch(desired: dict[str, Any]) -> dict[str, Any]:
    spec = desired["spec"]
    if "minMember" in spec:
        return {"spec": {"minMember": spec["minMember"]}}
    if "schedulingPolicy" in spec:
        return {"spec": {"schedulingPolicy": copy.deepcopy(spec["schedulingPolicy"])}}
    key, pkey = ("podGroupTemplates", "schedulingPolicy")
    if "podGroups" in spec:
        key, pkey = ("podGroups", "policy")
    return {"spec": {key: [{"name": t["name"], pkey: copy.deepcopy(t[pkey])} for t in spec[key]]}}


def jobset_gang(
    jobset: dict[str, Any],
    api_version: str = NEWEST,
    existing: Iterable[dict[str, Any]] = (),
    target: str = KUBERNETES,
) -> GangPlan | None:
    """The JobSet controller's gang step, as Decide runs it before creating child Jobs.

    Returns None when the JobSet asks for no gang scheduling. Otherwise the plan carries the
    objects to create (Workload first), per child Job (``<jobset>-<rjob>-<index>``) the pod
    template patch and Job annotations it must be created with, in-place minCount updates, and
    deletions (suspend, finish, or drift of an immutable field: objects are recreated on a later
    pass). An object already being deleted is never deleted again; while one the JobSet needs
    is still terminating, nothing is created and ``waiting`` names it (no Job may be created or
    resumed meanwhile). Raises ``OwnershipConflict`` when a same-named object is controlled by
    someone else.
    """
    gen, _native, renderer = resolve_target(target, api_version)
    found = _existing(existing)
    f = jsrules.read_jobset(jobset)
    result = jsrules.design_jobset(f, gen.jobset_naming)
    if result.design is None:
        return None
    design = result.design
    rendered = renderer.render(design)
    plan = GangPlan(
        mode=result.mode,
        explanation=list(result.explanation),
        warnings=[*result.warnings, *rendered.warnings],
        groups=design.groups,
        pod_template_patches=rendered.pod_template_patches,
        job_annotations=design.job_annotations,
    )
    say = plan.explanation.append
    owned = [
        o
        for o in found
        if (renderer.is_workload(o) or renderer.is_podgroup(o)) and _controller_uid(o) == f.uid
    ]
    # PodGroups go before the Workload, leaves first, as upstream deletes them.
    owned.sort(key=lambda o: o.get("kind") == "Workload")
    # An object already being deleted lingers (protection finalizer) until no pod uses it.
    # Deleting it again changes nothing, and planned on every pass it is a hot loop; upstream
    # skips children that are already terminating (spec §2.2), and so do we.
    live = [o for o in owned if not _terminating(o)]
    going = len(owned) - len(live)
    if f.finished or f.suspended:
        plan.deletes = [_ref(o) for o in live]
        why = "has finished" if f.finished else "is suspended"
        if live:
            say(f"JobSet {f.name} {why}: delete its {len(live)} scheduling object(s)")
        elif not going:
            say(f"JobSet {f.name} {why}: no scheduling objects are kept")
        if going:
            say(f"JobSet {f.name} {why}: {going} scheduling object(s) already being deleted "
                "are not deleted again")
        if f.suspended and not f.finished:
            say("they are recreated with the same names when the JobSet resumes")
        return plan
    by_key = {
        (o.get("apiVersion"), o.get("kind"), _meta(o).get("name")): (i, o)
        for i, o in enumerate(found)
    }
    waiting: list[dict[str, Any]] = []
    for desired in rendered.objects:
        name = desired["metadata"]["name"]
        hit = by_key.get((desired["apiVersion"], desired["kind"], name))
        if hit is None:
            plan.objects.append(desired)
            say(f"create {desired['kind']} {name}")
            continue
        index, current = hit
        if _controller_uid(current) != f.uid:
            raise OwnershipConflict(
                FieldError(
                    f"existing[{index}].metadata.ownerReferences",
                    f"{desired['kind']} {name} already exists and is not controlled by JobSet "
                    f"{f.name}; refusing to adopt it",
                )
            )
        if _terminating(current):
            # Its successor cannot be created until the name is free (AlreadyExists), and a
            # terminating object is neither kept nor compared: it is waited for.
            waiting.append(_ref(current))
            say(f"{desired['kind']} {name} is still being deleted: wait until it is gone")
            continue
        if _drifted(current.get("spec"), desired["spec"]):
            plan.objects.clear()
            plan.updates.clear()
            plan.deletes = [_ref(o) for o in live]
            # Any of ours still terminating holds the Jobs as below; the rest follow next pass.
            plan.waiting = [_ref(o) for o in owned if _terminating(o)]
            say(
                f"{desired['kind']} {name} differs from the JobSet in an immutable field: delete "
                "the scheduling objects; they are recreated on the next pass"
            )
            return plan
        if _min_counts(current) != _min_counts(desired):
            plan.updates.append(
                {**_ref(current), "patchType": "merge", "patch": _min_count_patch(desired)}
            )
            say(f"{desired['kind']} {name}: update gang minCount in place")
        else:
            say(f"{desired['kind']} {name} exists and is controlled by the JobSet: kept")
    if waiting:
        # Create none of the others either: a PodGroup made now would name (and be owned by)
        # the Workload that is going away, or join a gang whose other half is. The deletion
        # of an owned object wakes the JobSet, and the next pass creates them all.
        plan.waiting = waiting
        plan.objects.clear()
        say(
            f"JobSet {f.name}: {len(waiting)} scheduling object(s) still being deleted; "
            "nothing is created, and no Job is created or resumed, until they are gone"
        )
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
    new = jobrules.read_job(new_job, need_identity=False)
    old = jobrules.read_job(old_job, need_identity=False)
    errors: list[FieldError] = []
    if gen.job_rules == jobrules.RULES_136:
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
    new_blocks = jobrules.job_blocks(new, errors)
    if old.scheduling is not None:
        old_blocks = jobrules.job_blocks(old, [])
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
    old: jobrules.JobFacts, native: GangTarget, existing: list[dict[str, Any]] | None
) -> str | None:
    if existing is not None:
        ref = (old.scheduling_group or {}).get("podGroupName")
        for pg in existing:
            if not native.runtime_podgroups or not native.is_podgroup(pg):
                continue
            name = _meta(pg).get("name")
            gang = native.podgroup_min_count(pg) is not None
            if gang and (name == ref or (old.uid and _controller_uid(pg) == old.uid)):
                return str(name)
        return None
    ok, _ = jobrules.gang_candidate_136(old)
    if not ok or not old.name:
        return None
    from decider.core.gang import names

    wl = names.job_workload_name(old.name, old.uid)
    return names.job_podgroup_name(wl, names.job_template_name(old.name))


def validate_jobset_scheduling(jobset: dict[str, Any]) -> list[FieldError]:
    """Admission rules for ``spec.scheduling`` and the gang annotations of a JobSet."""
    f = jsrules.read_jobset(jobset, need_identity=False)
    errors = jsrules.validate(f)
    if errors:
        return errors
    try:
        jsrules.design_jobset(f, jsrules.Naming("upstream"))
    except InvalidInput as exc:
        errors.extend(exc.errors)
    return errors
