"""A Job's own gang objects against what exists: reuse what the Job controls, create what is
missing while the Job is new, patch minCount in place, else fall back to default scheduling.

Two ways, one per kind of target: the native ``scheduling.k8s.io`` generations (a Workload and
its PodGroups, found by ``controllerRef`` and ``podGroupTemplateRef``/``workloadRef``) and the
out-of-tree schedulers (a PodGroup of the planned name, no Workload). Reading what exists is
tolerant of any shape: an observed object is never trusted to be well formed.
"""

from __future__ import annotations

from typing import Any

from decider.core.gang import names
from decider.core.gang.job_facts import RULES_136, RULES_137, JobFacts
from decider.core.gang.model import Design, GangPlan, Group
from decider.core.gang.targets import GangTarget

# The objects read here passed the contract's one check of their metadata's types
# (clients/python/decider_api/observed_shape.py).

def controlled_by(obj: dict[str, Any], uid: str) -> bool:
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    return any(ref.get("controller") is True and ref.get("uid") == uid for ref in refs)


def name_of(obj: dict[str, Any]) -> str:
    return (obj.get("metadata") or {}).get("name") or ""


def uid_of(obj: dict[str, Any]) -> str:
    return (obj.get("metadata") or {}).get("uid") or ""


def same_namespace(obj: dict[str, Any], namespace: str) -> bool:
    meta = obj.get("metadata")
    ns = meta.get("namespace") if isinstance(meta, dict) else None
    return not namespace or not isinstance(ns, str) or not ns or ns == namespace


def controller_ref_matches(wl: dict[str, Any], group: str, kind: str, name: str) -> bool:
    spec = wl.get("spec")
    ref = spec.get("controllerRef") if isinstance(spec, dict) else None
    return (
        isinstance(ref, dict)
        and ref.get("apiGroup", "") == group
        and ref.get("kind") == kind
        and ref.get("name") == name
    )


def reconcile_native(
    f: JobFacts,
    design: Design,
    existing: list[dict[str, Any]],
    rules: str,
    native: GangTarget,
    plan: GangPlan,
) -> GangPlan:
    say = plan.explanation.append
    group = design.groups[0]
    wls = [
        w
        for w in existing
        if native.is_workload(w)
        and same_namespace(w, f.namespace)
        and controller_ref_matches(w, "batch", "Job", f.name)
    ]
    if rules == RULES_137:
        byo = [w for w in wls if not controlled_by(w, f.uid)]
        if byo:
            # MISMATCH (gang.md 5b): the KEP says use a BYO Workload; the 1.37 code ignores it.
            say(f"Workload {name_of(byo[0])} points at the Job but is not controlled by it: "
                "ignored")
        wls = [w for w in wls if controlled_by(w, f.uid)]
    workload: dict[str, Any] | None = None
    if len(wls) > 1:
        say(f"{len(wls)} Workloads reference Job {f.name}: ambiguous, default scheduling")
        return no_gang(plan)
    if len(wls) == 1:
        wl = wls[0]
        if not controlled_by(wl, f.uid):
            say(
                f"Workload {name_of(wl)} references Job {f.name} but is not controlled by it: "
                "skipping workload integration (pods get no scheduling group)"
            )
            return no_gang(plan)
        counts = native.template_min_counts(wl)
        if len(counts) != 1:
            say(f"Workload {name_of(wl)} has {len(counts)} templates, not 1: default scheduling")
            return no_gang(plan)
        workload = wl
        design.workload_name = name_of(wl)
        design.workload_uid = uid_of(wl)
        ((tpl_name, tpl_min),) = counts.items()
        group.template = tpl_name
        group.podgroup = names.job_podgroup_name(design.workload_name, tpl_name)
        say(f"Workload {design.workload_name} exists and is controlled by Job {f.name}: reused")
        if rules == RULES_136:
            group.min_count = tpl_min
        elif tpl_min is not None and group.min_count is not None and tpl_min != group.min_count:
            plan.updates.append(_min_count_update(native, wl, tpl_name, group.min_count))
            say(f"gang minCount {tpl_min} -> {group.min_count}: update the Workload template")
    elif not f.is_new:
        say(f"Job {f.name} has already started: objects are only created for new Jobs")
        return no_gang(plan)
    rendered = native.render(design)
    plan.warnings.extend(rendered.warnings)
    if workload is None and rendered.workload is not None:
        plan.objects.append(rendered.workload)
        say(f"create Workload {design.workload_name} for Job {f.name}")
    if native.runtime_podgroups:
        pgs = [
            p
            for p in existing
            if native.is_podgroup(p)
            and same_namespace(p, f.namespace)
            and native.podgroup_workload(p) == design.workload_name
        ]
        if rules == RULES_137:
            pgs = [p for p in pgs if controlled_by(p, f.uid)]
        if len(pgs) > 1:
            say(
                f"{len(pgs)} PodGroups reference Workload {design.workload_name}: "
                "default scheduling"
            )
            return no_gang(plan)
        if pgs:
            pg = pgs[0]
            if not controlled_by(pg, f.uid):
                say(f"PodGroup {name_of(pg)} is not controlled by Job {f.name}: default scheduling")
                return no_gang(plan)
            group.podgroup = name_of(pg)
            say(f"PodGroup {group.podgroup} exists and is controlled by Job {f.name}: reused")
            current = native.podgroup_min_count(pg)
            if (
                rules == RULES_137
                and group.min_count is not None
                and current
                not in (
                    None,
                    group.min_count,
                )
            ):
                plan.updates.append(_pg_min_count_update(native, pg, group.min_count))
                say(f"gang minCount {current} -> {group.min_count}: update the PodGroup")
        elif rules == RULES_137 and not f.is_new:
            say(f"Job {f.name} has already started: the missing PodGroup is not created")
            return keep(plan, rendered, group, with_patch=False)
        else:
            pg_obj = native.render(design).podgroups[0]
            plan.objects.append(pg_obj)
            policy = f"gang minCount {group.min_count}" if group.is_gang else "basic policy"
            say(f"create PodGroup {group.podgroup} ({policy}) from template {group.template}")
    return keep(plan, native.render(design), group, with_patch=True)


def keep(plan: GangPlan, rendered: Any, group: Group, *, with_patch: bool) -> GangPlan:
    plan.groups = [group]
    if with_patch:
        plan.pod_template_patches.update(rendered.pod_template_patches)
        # v1alpha1 has no PodGroup objects: pods join a group the Workload embeds.
        joined = (group.podgroup if rendered.podgroups or rendered.workload is None else
                  f"pod group {group.template} of Workload "
                  f"{rendered.workload['metadata']['name']}")
        plan.explanation.append(
            f"pods of Job {group.members[0]} join {joined} through the pod template"
        )
    return plan


def no_gang(plan: GangPlan) -> GangPlan:
    plan.objects.clear()
    plan.updates.clear()
    plan.mode = "none"
    return plan


def _min_count_update(
    native: GangTarget, wl: dict[str, Any], tpl: str, value: int
) -> dict[str, Any]:
    spec = wl.get("spec")
    key = (
        "podGroupTemplates"
        if isinstance(spec, dict) and "podGroupTemplates" in spec
        else "podGroups"
    )
    return {
        "apiVersion": native.workload_api_version,
        "kind": "Workload",
        "name": name_of(wl),
        "uid": uid_of(wl),
        "patchType": "strategic",
        "patch": {
            "spec": {key: [{"name": tpl, "schedulingPolicy": {"gang": {"minCount": value}}}]}
        },
    }


def _pg_min_count_update(native: GangTarget, pg: dict[str, Any], value: int) -> dict[str, Any]:
    return {
        "apiVersion": native.podgroup_api_version,
        "kind": "PodGroup",
        "name": name_of(pg),
        "uid": uid_of(pg),
        "patchType": "merge",
        "patch": {"spec": {"schedulingPolicy": {"gang": {"minCount": value}}}},
    }


def reconcile_foreign(
    f: JobFacts,
    design: Design,
    existing: list[dict[str, Any]],
    target: GangTarget,
    plan: GangPlan,
) -> GangPlan:
    """Out-of-tree schedulers: no Workload, a PodGroup per gang; same-named objects reused."""
    say = plan.explanation.append
    rendered = target.render(design)
    plan.warnings.extend(rendered.warnings)
    group = design.groups[0]
    if not rendered.podgroups:
        say(f"Job {f.name} uses the Basic policy: {target.key} needs no PodGroup")
        return no_gang(plan)
    same = [p for p in existing if target.is_podgroup(p) and name_of(p) == group.podgroup]
    if same and not controlled_by(same[0], f.uid):
        say(f"{target.key} PodGroup {group.podgroup} exists and is not controlled by the Job")
        return no_gang(plan)
    if same:
        say(f"{target.key} PodGroup {group.podgroup} exists: reused")
    elif not f.is_new:
        say(f"Job {f.name} has already started: objects are only created for new Jobs")
        return no_gang(plan)
    else:
        plan.objects.extend(rendered.podgroups)
        say(f"create {target.key} PodGroup {group.podgroup} with minMember {group.min_count}")
    return keep(plan, rendered, group, with_patch=True)
