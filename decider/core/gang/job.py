"""KEP-5547: the Workload and PodGroup the Kubernetes Job controller makes for a Job.

``plan_job`` is the controller's route, top to bottom: who manages the Job, which rule set
(job_facts.py) makes it a gang, whether its parent delegated the PodGroup (job_delegated.py),
the names and the design, then the design against what exists (job_objects.py).
"""

from __future__ import annotations

from typing import Any

from decider.core.errors import FieldError, InvalidInput
from decider.core.gang import names
from decider.core.gang.blocks import Blocks
from decider.core.gang.job_delegated import plan_delegated
from decider.core.gang.job_facts import (
    GROUP_TEMPLATE_ANNOTATION,
    JOB_CONTROLLER,
    RULES_136,
    gang_candidate_136,
    job_blocks,
    read_job,
)
from decider.core.gang.job_objects import reconcile_foreign, reconcile_native
from decider.core.gang.model import Design, GangPlan, Group
from decider.core.gang.targets import GangTarget


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
            return plan_delegated(f, existing, native, target, plan)
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
        return reconcile_native(f, design, existing, rules, native, plan)
    return reconcile_foreign(f, design, existing, target, plan)
