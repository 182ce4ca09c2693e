"""1.37 ``managePodGroupOnly``: a Job whose parent compiled the Workload makes only its own
PodGroup, from the parent's template that ``scheduling.k8s.io/group-template-name`` names.

Apart from job_objects.py because the design is not the Job's: it is read back from a Workload
someone else wrote, whose shape the decider did not choose.
"""

from __future__ import annotations

from typing import Any

from decider.core.gang import names
from decider.core.gang.job_facts import GROUP_TEMPLATE_ANNOTATION, JobFacts
from decider.core.gang.job_objects import (
    controlled_by,
    controller_ref_matches,
    keep,
    name_of,
    same_namespace,
)
from decider.core.gang.model import Design, GangPlan, Group
from decider.core.gang.targets import GangTarget


def _find_template(wl: dict[str, Any], name: str) -> dict[str, Any] | None:
    spec = wl.get("spec")
    for key in ("podGroupTemplates", "podGroups"):
        tpls = spec.get(key) if isinstance(spec, dict) else None
        for t in tpls if isinstance(tpls, list) else []:
            if isinstance(t, dict) and (not name or t.get("name") == name):
                return t
    return None


def _group_from_template(tpl: dict[str, Any], podgroup: str, member: str, pods: int) -> Group:
    policy = tpl.get("schedulingPolicy", tpl.get("policy"))
    gang = policy.get("gang") if isinstance(policy, dict) else None
    mc = gang.get("minCount") if isinstance(gang, dict) else None
    cons = tpl.get("schedulingConstraints")
    topo = cons.get("topology") if isinstance(cons, dict) else None
    dm = tpl.get("disruptionMode")
    disruption = None
    if isinstance(dm, dict):
        disruption = "all" if "all" in dm else ("single" if "single" in dm else None)
    claims = tpl.get("resourceClaims")
    pcn = tpl.get("priorityClassName")
    return Group(
        template=str(tpl.get("name", "")),
        podgroup=podgroup,
        min_count=mc if isinstance(mc, int) and not isinstance(mc, bool) else None,
        pods=pods,
        members=[member],
        topology=[t for t in topo if isinstance(t, dict)] if isinstance(topo, list) else [],
        disruption=disruption,
        claims=[c for c in claims if isinstance(c, dict)] if isinstance(claims, list) else [],
        priority_class=pcn if isinstance(pcn, str) else "",
    )


def plan_delegated(
    f: JobFacts,
    existing: list[dict[str, Any]],
    native: GangTarget,
    target: GangTarget,
    plan: GangPlan,
) -> GangPlan:
    """1.37 ``managePodGroupOnly``: the parent compiled the Workload, the Job makes its group."""
    say = plan.explanation.append
    assert f.controller is not None
    owner = f.controller
    api = str(owner.get("apiVersion", ""))
    group_name = api.split("/", 1)[0] if "/" in api else ""
    tpl_name = f.annotations[GROUP_TEMPLATE_ANNOTATION]
    parents = [
        w
        for w in existing
        if native.is_workload(w)
        and same_namespace(w, f.namespace)
        and controller_ref_matches(w, group_name, str(owner.get("kind")), str(owner.get("name")))
    ]
    if not parents:
        say(
            f"Job {f.name} is delegated template {tpl_name!r} but the parent's Workload does "
            "not exist yet: nothing now, retry when it appears"
        )
        return plan
    parent = parents[0]
    tpl = _find_template(parent, tpl_name)
    if tpl is None or not tpl_name:
        say(f"template {tpl_name!r} is not in Workload {name_of(parent)}: skipped")
        return plan
    pg_name = names.job_podgroup_name(name_of(parent), tpl_name)
    group = _group_from_template(tpl, pg_name, f.name, f.parallelism or 1)
    design = Design(
        source_kind="Job",
        namespace=f.namespace,
        owner=f.owner_ref,
        controller_ref={},
        workload_name=name_of(parent),
        groups=[group],
        create_workload=False,
    )
    plan.mode = "delegated"
    mine = [
        p
        for p in existing
        if native.is_podgroup(p)
        and native.podgroup_workload(p) == name_of(parent)
        and controlled_by(p, f.uid)
    ]
    rendered = target.render(design)
    plan.warnings.extend(rendered.warnings)
    if mine:
        group.podgroup = name_of(mine[0])
        rendered = target.render(design)
        say(f"PodGroup {group.podgroup} for delegated Job {f.name} exists: reused")
    elif f.is_new:
        plan.objects.extend(rendered.podgroups)
        say(
            f"create PodGroup {pg_name} from parent Workload {name_of(parent)} template "
            f"{tpl_name!r}, owned by the Job only"
        )
    else:
        say(f"Job {f.name} has already started: the delegated PodGroup is not created")
        return plan
    return keep(plan, rendered, group, with_patch=True)
