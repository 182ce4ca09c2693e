"""KEP-5547: the Workload and PodGroup the Kubernetes Job controller makes for a Job.

Two rule sets exist and are kept apart on purpose:

* ``RULES_136`` (released in 1.36, ``scheduling.k8s.io/v1alpha2``): automatic, type-based.
  Indexed + parallelism > 1 + completions == parallelism gives one gang of ``parallelism``.
  What the released controller honours as opt-outs is fewer than the KEP text lists: only a
  pod template ``schedulingGroup``, a foreign ``spec.managedBy``, and a pre-existing Workload
  for the Job that the Job does not control. Owned Jobs (JobSet, CronJob, anything) still get
  objects; this was observed on a real v1.36.2 control plane.
* ``RULES_137`` (``scheduling.k8s.io/v1beta1``): explicit ``spec.scheduling``. Every root Job is
  represented (Basic by default), parent-owned Jobs are left to the parent unless it delegates
  the PodGroup with ``scheduling.k8s.io/group-template-name``.

``scheduling.k8s.io/v1alpha1`` (1.35) never had a Job integration; the decider projects the
1.36 rules onto its embedded pod groups so a 1.35 cluster can be driven the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from decider.core import access as acc
from decider.core.errors import FieldError, InvalidInput
from decider.core.gang import names
from decider.core.gang.blocks import Blocks, check_basic_with_all, parse_blocks
from decider.core.gang.model import Design, GangPlan, Group
from decider.core.gang.targets import GangTarget

RULES_136 = "kep5547-1.36"
RULES_137 = "kep5547-1.37"

JOB_CONTROLLER = "kubernetes.io/job-controller"
GROUP_TEMPLATE_ANNOTATION = "scheduling.k8s.io/group-template-name"


@dataclass
class JobFacts:
    name: str
    namespace: str
    uid: str
    parallelism: int | None
    completions: int | None
    indexed: bool
    managed_by: str
    scheduling_group: dict[str, Any] | None
    controller: dict[str, Any] | None
    annotations: dict[str, str]
    scheduling: dict[str, Any] | None
    is_new: bool
    start_time: bool

    @property
    def owner_ref(self) -> dict[str, Any]:
        return {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": self.name,
            "uid": self.uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }


def read_job(job: dict[str, Any], *, need_identity: bool = True) -> JobFacts:
    job = acc.as_map(job, "")
    kind = acc.string(job, "kind", "", "Job")
    if kind != "Job":
        raise InvalidInput.at("kind", f"expected Job or JobSet, got {kind!r}")
    api = acc.string(job, "apiVersion", "", "batch/v1")
    if api != "batch/v1":
        raise InvalidInput.at("apiVersion", f"a Job must be batch/v1, got {api!r}")
    meta = acc.child(job, "metadata", "")
    name = acc.string(meta, "name", "metadata")
    uid = acc.string(meta, "uid", "metadata")
    if need_identity and not name:
        # generateName is resolved by the API server; hashes need the final name.
        raise InvalidInput.at("metadata.name", "Required value: the Job's final name is needed")
    if need_identity and not uid:
        raise InvalidInput.at("metadata.uid", "Required value: the Workload name hashes the uid")
    spec = acc.child(job, "spec", "")
    tmpl = acc.child(spec, "template", "spec")
    pod_spec = acc.child(tmpl, "spec", "spec.template")
    sg = pod_spec.get("schedulingGroup")
    if sg is not None:
        sg = acc.as_map(sg, "spec.template.spec.schedulingGroup")
    status = acc.child(job, "status", "")
    counters = [
        acc.integer(status, k, "status") or 0
        for k in ("active", "ready", "terminating", "succeeded", "failed")
    ]
    suspended_cond = False
    for i, cond in enumerate(acc.items(status, "conditions", "status")):
        cond = acc.as_map(cond, f"status.conditions[{i}]")
        if acc.string(cond, "type", f"status.conditions[{i}]") == "Suspended":
            suspended_cond = True
    start = acc.string(status, "startTime", "status")
    scheduling = spec.get("scheduling")
    if scheduling is not None:
        scheduling = acc.as_map(scheduling, "spec.scheduling")
    return JobFacts(
        name=name,
        namespace=acc.string(meta, "namespace", "metadata"),
        uid=uid,
        parallelism=acc.integer(spec, "parallelism", "spec"),
        completions=acc.integer(spec, "completions", "spec"),
        indexed=acc.string(spec, "completionMode", "spec", "NonIndexed") == "Indexed",
        managed_by=acc.string(spec, "managedBy", "spec"),
        scheduling_group=sg,
        controller=acc.controller_ref(meta, "metadata"),
        annotations=acc.string_map(meta, "annotations", "metadata"),
        scheduling=scheduling,
        # The controller only creates objects for a Job that never started: no pods, no
        # startTime, no terminal counters and no Suspended condition of any status. Pods are
        # not in the input, so live pod counters stand in for them.
        is_new=not start and not any(counters) and not suspended_cond,
        start_time=bool(start),
    )


def gang_candidate_136(f: JobFacts) -> tuple[bool, str]:
    """``IsGangSchedulingCandidate`` of the 1.36 controller, with the reason when not."""
    if f.parallelism is None:
        return False, "spec.parallelism is unset"
    if f.parallelism <= 1:
        return False, f"spec.parallelism is {f.parallelism}, a gang needs more than 1"
    if f.completions is None:
        return False, "spec.completions is unset"
    if f.completions != f.parallelism:
        return False, f"completions {f.completions} != parallelism {f.parallelism}"
    if not f.indexed:
        return False, "completionMode is not Indexed"
    if f.scheduling_group is not None:
        return False, "the pod template already sets spec.schedulingGroup (opt-out)"
    return True, "Indexed, parallelism > 1 and completions == parallelism"


def job_blocks(f: JobFacts, errors: list[FieldError]) -> Blocks:
    """``spec.scheduling`` of a 1.37 Job with the controller's defaults resolved."""
    if f.scheduling is None:
        return Blocks(policy="basic")
    blocks = parse_blocks(f.scheduling, "spec.scheduling", errors)
    if blocks.policy is None:
        blocks.policy = "basic"
    if blocks.policy == "gang":
        parallelism = 1 if f.parallelism is None else f.parallelism
        if blocks.min_count is None:
            blocks.min_count = max(1, parallelism)
        elif blocks.min_count > parallelism:
            errors.append(
                FieldError(
                    "spec.scheduling.schedulingPolicy.gang.minCount",
                    f"must be less than or equal to spec.parallelism ({parallelism})",
                )
            )
    check_basic_with_all(blocks.policy, blocks.disruption, "spec.scheduling", errors)
    return blocks


def _controlled_by(obj: dict[str, Any], uid: str) -> bool:
    meta = obj.get("metadata")
    refs = meta.get("ownerReferences") if isinstance(meta, dict) else None
    for ref in refs if isinstance(refs, list) else []:
        if isinstance(ref, dict) and ref.get("controller") is True and ref.get("uid") == uid:
            return True
    return False


def _name(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    return name if isinstance(name, str) else ""


def _uid(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata")
    uid = meta.get("uid") if isinstance(meta, dict) else None
    return uid if isinstance(uid, str) else ""


def _same_namespace(obj: dict[str, Any], namespace: str) -> bool:
    meta = obj.get("metadata")
    ns = meta.get("namespace") if isinstance(meta, dict) else None
    return not namespace or not isinstance(ns, str) or not ns or ns == namespace


def _controller_ref_matches(wl: dict[str, Any], group: str, kind: str, name: str) -> bool:
    spec = wl.get("spec")
    ref = spec.get("controllerRef") if isinstance(spec, dict) else None
    return (
        isinstance(ref, dict)
        and ref.get("apiGroup", "") == group
        and ref.get("kind") == kind
        and ref.get("name") == name
    )


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


def plan_job(
    job: dict[str, Any],
    existing: list[dict[str, Any]],
    rules: str,
    native: GangTarget,
    target: GangTarget,
) -> GangPlan:
    f = read_job(job)
    plan = GangPlan()
    say = plan.explanation.append
    if f.managed_by and f.managed_by != JOB_CONTROLLER:
        say(f"Job {f.name}: spec.managedBy is {f.managed_by!r}; the Job controller skips it")
        return plan
    if rules == RULES_136:
        ok, why = gang_candidate_136(f)
        if not ok:
            say(f"Job {f.name} is not a gang candidate ({RULES_136}): {why}; no objects")
            return plan
        say(f"Job {f.name} is a gang candidate ({RULES_136}): {why}")
        assert f.parallelism is not None
        blocks = Blocks(policy="gang", min_count=f.parallelism)
    else:
        if f.scheduling_group is not None:
            say(f"Job {f.name}: the pod template sets spec.schedulingGroup (bring your own)")
            return plan
        if f.controller is not None and GROUP_TEMPLATE_ANNOTATION not in f.annotations:
            say(
                f"Job {f.name} is owned by {f.controller.get('kind')} "
                f"{f.controller.get('name')}: the parent owns its scheduling objects"
            )
            return plan
        errors: list[FieldError] = []
        blocks = job_blocks(f, errors)
        if errors:
            raise InvalidInput(errors)
        if f.controller is not None:
            return _plan_delegated(f, existing, native, target, plan)
    template = names.job_template_name(f.name)
    if len(template) > names.DNS1123_LABEL_MAX:
        # Upstream bug: the controller builds this template name anyway, the API rejects the
        # Workload and the Job retries forever without pods. Emit nothing invalid instead.
        say(
            f"Job name {f.name!r} is {len(f.name)} characters: the template {template!r} would "
            f"exceed {names.DNS1123_LABEL_MAX}; the upstream controller's Workload is rejected "
            "and its pods are never created, so no objects are planned"
        )
        plan.warnings.append("Job name longer than 57 characters cannot be gang scheduled")
        return plan
    wl_name = names.job_workload_name(f.name, f.uid)
    group = Group(
        template=template,
        podgroup=names.job_podgroup_name(wl_name, template),
        min_count=blocks.min_count if blocks.policy == "gang" else None,
        pods=f.parallelism if f.parallelism is not None else 1,
        members=[f.name],
        topology=blocks.topology,
        disruption=blocks.disruption,
        claims=blocks.claims,
    )
    design = Design(
        source_kind="Job",
        namespace=f.namespace,
        owner=f.owner_ref,
        controller_ref={"apiGroup": "batch", "kind": "Job", "name": f.name},
        workload_name=wl_name,
        groups=[group],
        podgroup_owned_by_workload=True,
    )
    plan.mode = "gang" if group.is_gang else "basic"
    if target is native:
        return _reconcile_native(f, design, existing, rules, native, plan)
    return _reconcile_foreign(f, design, existing, target, plan)


def _reconcile_native(
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
        and _same_namespace(w, f.namespace)
        and _controller_ref_matches(w, "batch", "Job", f.name)
    ]
    if rules == RULES_137:
        byo = [w for w in wls if not _controlled_by(w, f.uid)]
        if byo:
            # MISMATCH (gang.md 5b): the KEP says use a BYO Workload; the 1.37 code ignores it.
            say(f"Workload {_name(byo[0])} points at the Job but is not controlled by it: ignored")
        wls = [w for w in wls if _controlled_by(w, f.uid)]
    workload: dict[str, Any] | None = None
    if len(wls) > 1:
        say(f"{len(wls)} Workloads reference Job {f.name}: ambiguous, default scheduling")
        return _no_gang(plan)
    if len(wls) == 1:
        wl = wls[0]
        if not _controlled_by(wl, f.uid):
            say(
                f"Workload {_name(wl)} references Job {f.name} but is not controlled by it: "
                "skipping workload integration (pods get no scheduling group)"
            )
            return _no_gang(plan)
        counts = native.template_min_counts(wl)
        if len(counts) != 1:
            say(f"Workload {_name(wl)} has {len(counts)} templates, not 1: default scheduling")
            return _no_gang(plan)
        workload = wl
        design.workload_name = _name(wl)
        design.workload_uid = _uid(wl)
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
        return _no_gang(plan)
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
            and _same_namespace(p, f.namespace)
            and native.podgroup_workload(p) == design.workload_name
        ]
        if rules == RULES_137:
            pgs = [p for p in pgs if _controlled_by(p, f.uid)]
        if len(pgs) > 1:
            say(
                f"{len(pgs)} PodGroups reference Workload {design.workload_name}: "
                "default scheduling"
            )
            return _no_gang(plan)
        if pgs:
            pg = pgs[0]
            if not _controlled_by(pg, f.uid):
                say(f"PodGroup {_name(pg)} is not controlled by Job {f.name}: default scheduling")
                return _no_gang(plan)
            group.podgroup = _name(pg)
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
            return _keep(plan, rendered, group, with_patch=False)
        else:
            pg_obj = native.render(design).podgroups[0]
            plan.objects.append(pg_obj)
            policy = f"gang minCount {group.min_count}" if group.is_gang else "basic policy"
            say(f"create PodGroup {group.podgroup} ({policy}) from template {group.template}")
    return _keep(plan, native.render(design), group, with_patch=True)


def _keep(plan: GangPlan, rendered: Any, group: Group, *, with_patch: bool) -> GangPlan:
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


def _no_gang(plan: GangPlan) -> GangPlan:
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
        "name": _name(wl),
        "uid": _uid(wl),
        "patchType": "strategic",
        "patch": {
            "spec": {key: [{"name": tpl, "schedulingPolicy": {"gang": {"minCount": value}}}]}
        },
    }


def _pg_min_count_update(native: GangTarget, pg: dict[str, Any], value: int) -> dict[str, Any]:
    return {
        "apiVersion": native.podgroup_api_version,
        "kind": "PodGroup",
        "name": _name(pg),
        "uid": _uid(pg),
        "patchType": "merge",
        "patch": {"spec": {"schedulingPolicy": {"gang": {"minCount": value}}}},
    }


def _plan_delegated(
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
        and _same_namespace(w, f.namespace)
        and _controller_ref_matches(w, group_name, str(owner.get("kind")), str(owner.get("name")))
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
        say(f"template {tpl_name!r} is not in Workload {_name(parent)}: skipped")
        return plan
    pg_name = names.job_podgroup_name(_name(parent), tpl_name)
    group = _group_from_template(tpl, pg_name, f.name, f.parallelism or 1)
    design = Design(
        source_kind="Job",
        namespace=f.namespace,
        owner=f.owner_ref,
        controller_ref={},
        workload_name=_name(parent),
        groups=[group],
        create_workload=False,
    )
    plan.mode = "delegated"
    mine = [
        p
        for p in existing
        if native.is_podgroup(p)
        and native.podgroup_workload(p) == _name(parent)
        and _controlled_by(p, f.uid)
    ]
    rendered = target.render(design)
    plan.warnings.extend(rendered.warnings)
    if mine:
        group.podgroup = _name(mine[0])
        rendered = target.render(design)
        say(f"PodGroup {group.podgroup} for delegated Job {f.name} exists: reused")
    elif f.is_new:
        plan.objects.extend(rendered.podgroups)
        say(
            f"create PodGroup {pg_name} from parent Workload {_name(parent)} template "
            f"{tpl_name!r}, owned by the Job only"
        )
    else:
        say(f"Job {f.name} has already started: the delegated PodGroup is not created")
        return plan
    return _keep(plan, rendered, group, with_patch=True)


def _reconcile_foreign(
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
        return _no_gang(plan)
    same = [p for p in existing if target.is_podgroup(p) and _name(p) == group.podgroup]
    if same and not _controlled_by(same[0], f.uid):
        say(f"{target.key} PodGroup {group.podgroup} exists and is not controlled by the Job")
        return _no_gang(plan)
    if same:
        say(f"{target.key} PodGroup {group.podgroup} exists: reused")
    elif not f.is_new:
        say(f"Job {f.name} has already started: objects are only created for new Jobs")
        return _no_gang(plan)
    else:
        plan.objects.extend(rendered.podgroups)
        say(f"create {target.key} PodGroup {group.podgroup} with minMember {group.min_count}")
    return _keep(plan, rendered, group, with_patch=True)
