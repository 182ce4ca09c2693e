"""What a Job says to the Kubernetes Job controller's gang rules (KEP-5547), read once.

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

Apart from planning (job.py) because update validation (plan.validate_job_update), Kueue's pod
sets and the JobSet's delegation annotation need the same reading and rules without a plan.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from decider.core import access as acc
from decider.core.errors import FieldError, InvalidInput
from decider.core.gang.blocks import Blocks, check_basic_with_all, parse_blocks

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
