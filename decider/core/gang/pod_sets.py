"""Kueue's pod sets of a Job or JobSet, beside the gang that covers each.

Counts are Kueue's (replicas x min(parallelism, completions)); gang.kueue adds what Kueue reads
from each pod template (requests per pod, node selector, tolerations, topology request), so a
scheduler can compute the quota a JobSet asks for without parsing its templates.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from decider.core import access as acc
from decider.core.gang import jobset_design as design
from decider.core.gang import jobset_facts as facts
from decider.core.gang import kueue
from decider.core.gang.job import plan_job
from decider.core.gang.job_facts import read_job
from decider.core.gang.model import CompositeGroup, Group, PodSetInfo
from decider.core.gang.plan import KUBERNETES, NEWEST, kind_of, resolve_target

KUEUE_MAX_POD_SETS = 18


def pod_sets(obj: dict[str, Any], api_version: str = NEWEST,
             gates: Mapping[str, bool] | None = None) -> list[PodSetInfo]:
    """Pod sets as Kueue builds them (counts, per-pod requests, node selectors, tolerations,
    topology requests), next to the gang minCount that covers each."""
    kind = kind_of(obj)
    gen, native, _ = resolve_target(KUBERNETES, api_version)
    if kind == "Job":
        f = read_job(obj, need_identity=False)
        parallelism = 1 if f.parallelism is None else f.parallelism
        count = parallelism if f.completions is None else min(parallelism, f.completions)
        probe = copy.deepcopy(obj)
        probe.pop("status", None)  # the gang shape does not depend on progress
        # Pod sets need no identity; give the probe one so the name hashes can run.
        meta = dict(probe.get("metadata") or {})
        meta["name"] = meta.get("name") or "job"
        meta["uid"] = meta.get("uid") or "pod-sets-probe"
        probe["metadata"] = meta
        groups = plan_job(probe, [], gen.job_rules, native, native).groups
        info = _pod_set("main", count, None, groups[0] if groups else None, ["main"])
        info = replace(info, min_count=kueue.job_min_count(
            acc.child(acc.child(obj, "metadata", ""), "annotations", "metadata")))
        template = acc.child(acc.child(obj, "spec", ""), "template", "spec")
        return [_with_details(info, kueue.pod_set_details(template, "spec.template", None))]
    f = facts.read_jobset(obj, need_identity=False)
    result = design.design_jobset(f, gen.jobset_naming, gates)
    groups = result.design.groups if result.design else []
    composites = {c.name: c for c in result.design.composites} if result.design else {}
    out = []
    for r in f.rjobs:
        count = _kueue_count(r)
        mine = [g for g in groups if r.name in g.rjobs]
        group = mine[0] if mine else None
        extra: list[str] = []
        if len(mine) > 1:
            extra.append(
                f"replicatedJob {r.name} has one gang per Job: {len(mine)} gangs of "
                f"{group.min_count if group else None}"
            )
        sets = [x.lower() for x in group.rjobs] if group else []
        info = _pod_set(r.name.lower(), count, r.name, group, sets, extra, f, len(mine))
        if group is not None and group.parent is not None:
            info = replace(info, gang_pod_groups=tuple(g.podgroup for g in mine),
                           gang_composites=_ancestors(group.parent, composites))
        path = f"spec.replicatedJobs[{r.index}].template.spec.template"
        template = _rjob_template(obj, r.index)
        out.append(_with_details(info, kueue.pod_set_details(template, path, r.replicas)))
    if len(out) > KUEUE_MAX_POD_SETS:
        out = [
            replace(p, warnings=(*p.warnings, f"TooManyPodSets: Kueue allows {KUEUE_MAX_POD_SETS}"))
            for p in out
        ]
    return out


def _ancestors(name: str | None, composites: dict[str, CompositeGroup]
               ) -> tuple[dict[str, Any], ...]:
    """The CompositePodGroups above a leaf, nearest first, as a scheduler reads the tree."""
    out = []
    while name is not None and name in composites:
        c = composites[name]
        out.append({"name": c.name, "template": c.template, "minGroupCount": c.min_group_count,
                    "children": c.children})
        name = c.parent
    return tuple(out)


def _kueue_count(r: facts.RJob) -> int:
    """Kueue's PodSet count: replicas x min(parallelism, completions), saturating at int32."""
    per_job = r.parallelism if r.completions is None else min(r.parallelism, r.completions)
    return min(2**31 - 1, r.replicas * per_job)


def _pod_set(
    name: str,
    count: int,
    rjob: str | None,
    group: Group | None,
    sets: list[str],
    extra: list[str] | None = None,
    f: facts.JobSetFacts | None = None,
    gangs: int = 1,
) -> PodSetInfo:
    warnings = list(extra or [])
    if group is not None and group.min_count is not None:
        if f is not None and len(group.rjobs) > 1:
            kueue = sum(_kueue_count(r) for r in f.rjobs if r.name in group.rjobs)
            scope = f"pod sets {', '.join(sets)} together count {kueue}"
        elif gangs > 1:
            kueue, scope = (
                count // max(1, gangs),
                f"each Job of pod set {name} counts {count // max(1, gangs)}",
            )
        else:
            kueue, scope = count, f"pod set {name} counts {count}"
        if kueue != group.min_count:
            warnings.append(
                f"CountMismatch: {scope} but the gang minCount is {group.min_count}"
                + (" (completions < parallelism)" if kueue < group.min_count else "")
            )
    return PodSetInfo(
        name=name,
        count=count,
        replicated_job=rjob,
        gang_podgroup=group.podgroup if group else None,
        gang_template=group.template if group else None,
        gang_min_count=group.min_count if group else None,
        gang_pod_sets=tuple(sets),
        warnings=tuple(warnings),
    )


def _with_details(info: PodSetInfo, details: kueue.PodSetDetails) -> PodSetInfo:
    return replace(info, pod_requests=details.pod_requests,
                   total_requests=kueue.total_requests(details.pod_requests, info.count),
                   node_selector=details.node_selector, tolerations=tuple(details.tolerations),
                   topology_request=details.topology_request)


def _rjob_template(obj: dict[str, Any], index: int) -> dict[str, Any]:
    """The pod template of replicated Job `index` (read_jobset checked the path's shape)."""
    rjob = acc.items(acc.child(obj, "spec", ""), "replicatedJobs", "spec")[index]
    path = f"spec.replicatedJobs[{index}]"
    # A null entry reads as an empty map, exactly as read_jobset read it.
    rjob = acc.as_map(rjob, path)
    job_spec = acc.child(acc.child(rjob, "template", path), "spec", f"{path}.template")
    return acc.child(job_spec, "template", f"{path}.template.spec")
