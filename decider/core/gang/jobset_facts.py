"""What the gang rules read from a JobSet, and how each API generation names its objects.

Read once per decision with every field path named, so a malformed JobSet is an InvalidInput
that says where, and the rule modules (jobset_modes for the project's annotations, was_builder
for upstream's ``spec.scheduling``) work on plain facts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from decider.core import access as acc
from decider.core.errors import InvalidInput
from decider.core.gang import names

GANG_POLICY_ANNOTATION = "jobset-decider.io/gang-policy"
WORKLOAD_TEMPLATE_ANNOTATION = "jobset-decider.io/workload-template"
JOBSET_API = "jobset.x-k8s.io/v1alpha2"
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
_INT32_MAX = 2**31 - 1


@dataclass
class RJob:
    index: int
    name: str
    replicas: int
    parallelism: int
    completions: int | None
    priority_class: str
    scheduling_group: bool
    depends_on: bool
    # The Job template's own spec.scheduling (batch/v1, KEP-5547): the Job controller's field.
    job_scheduling: bool = False

    @property
    def pods(self) -> int:
        # Saturates like upstream's ReplicatedJobPodCount.
        return min(_INT32_MAX, self.parallelism * self.replicas)

    def child_jobs(self, jobset: str) -> list[str]:
        return [f"{jobset}-{self.name}-{i}" for i in range(self.replicas)]


@dataclass
class JobSetFacts:
    name: str
    namespace: str
    uid: str
    annotations: dict[str, str]
    rjobs: list[RJob]
    in_order: bool
    suspended: bool
    finished: bool
    scheduling: dict[str, Any] | None
    mode: str | None  # annotation mode, when set
    template_text: str
    # status has the Suspended condition True (the controller has seen the suspend through).
    suspended_condition: bool = False
    _by_name: dict[str, RJob] | None = field(default=None, repr=False, compare=False)

    @property
    def sequenced(self) -> bool:
        return self.in_order or any(r.depends_on for r in self.rjobs)

    @property
    def owner_ref(self) -> dict[str, Any]:
        return {
            "apiVersion": JOBSET_API,
            "kind": "JobSet",
            "name": self.name,
            "uid": self.uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }

    def rjob(self, name: Any) -> RJob | None:
        # Indexed on first use: validation asks it for every target of every entry.
        if self._by_name is None:
            self._by_name = {}
            for r in self.rjobs:
                self._by_name.setdefault(r.name, r)
        try:
            return self._by_name.get(name)
        except TypeError:  # an unhashable target in a malformed entry names no replicated Job
            return None


def read_jobset(js: dict[str, Any], *, need_identity: bool = True) -> JobSetFacts:
    js = acc.as_map(js, "")
    if acc.string(js, "kind", "", "JobSet") != "JobSet":
        raise InvalidInput.at("kind", "expected Job or JobSet")
    meta = acc.child(js, "metadata", "")
    name = acc.string(meta, "name", "metadata")
    uid = acc.string(meta, "uid", "metadata")
    if need_identity and not name:
        raise InvalidInput.at("metadata.name", "Required value")
    if need_identity and not uid:
        raise InvalidInput.at("metadata.uid", "Required value: owner references need it")
    annotations = acc.string_map(meta, "annotations", "metadata")
    spec = acc.child(js, "spec", "")
    rjobs: list[RJob] = []
    for i, raw in enumerate(acc.items(spec, "replicatedJobs", "spec")):
        path = f"spec.replicatedJobs[{i}]"
        raw = acc.as_map(raw, path)
        jspec = acc.child(acc.child(raw, "template", path), "spec", f"{path}.template")
        jpath = f"{path}.template.spec"
        pod = acc.child(acc.child(jspec, "template", jpath), "spec", f"{jpath}.template")
        replicas = acc.integer(raw, "replicas", path)
        parallelism = acc.integer(jspec, "parallelism", jpath)
        rjobs.append(
            RJob(
                index=i,
                name=acc.string(raw, "name", path),
                replicas=1 if replicas is None else replicas,
                parallelism=1 if parallelism is None else parallelism,
                completions=acc.integer(jspec, "completions", jpath),
                priority_class=acc.string(pod, "priorityClassName", f"{jpath}.template.spec"),
                scheduling_group=pod.get("schedulingGroup") is not None,
                depends_on=bool(acc.items(raw, "dependsOn", path)),
                job_scheduling=jspec.get("scheduling") is not None,
            )
        )
    startup = acc.child(spec, "startupPolicy", "spec")
    status = acc.child(js, "status", "")
    finished = suspended_condition = False
    for i, cond in enumerate(acc.items(status, "conditions", "status")):
        cond = acc.as_map(cond, f"status.conditions[{i}]")
        ctype = acc.string(cond, "type", f"status.conditions[{i}]")
        if ctype in ("Completed", "Failed") and cond.get("status") == "True":
            finished = True
        if ctype == "Suspended" and cond.get("status") == "True":
            suspended_condition = True
    scheduling = spec.get("scheduling")
    if scheduling is not None:
        scheduling = acc.as_map(scheduling, "spec.scheduling")
    mode = annotations.get(GANG_POLICY_ANNOTATION)
    return JobSetFacts(
        name=name,
        namespace=acc.string(meta, "namespace", "metadata"),
        uid=uid,
        annotations=annotations,
        rjobs=rjobs,
        in_order=acc.string(startup, "startupPolicyOrder", "spec.startupPolicy") == "InOrder",
        suspended=acc.boolean(spec, "suspend", "spec"),
        finished=finished,
        scheduling=scheduling,
        mode=mode,
        template_text=annotations.get(WORKLOAD_TEMPLATE_ANNOTATION, ""),
        suspended_condition=suspended_condition,
    )


@dataclass
class Naming:
    """How one API generation names a JobSet's Workload and templates.

    ``upstream`` is the KEP-969 WAS-integration code (hashed names, delegation annotation on child
    Jobs); ``draft`` is the 1.35-era draft implementation (Workload named after the JobSet,
    labelled with its name and uid, groups named after replicated Jobs).
    """

    style: str  # "upstream" | "draft"

    def workload(self, f: JobSetFacts) -> str:
        if self.style == "draft":
            return f.name
        return names.jobset_workload_name(f.namespace, f.name)

    def workload_labels(self, f: JobSetFacts) -> dict[str, str]:
        if self.style == "draft":
            return {
                "jobset.sigs.k8s.io/jobset-name": f.name,
                "jobset.sigs.k8s.io/jobset-uid": f.uid,
            }
        return {}

    def top_level(self, f: JobSetFacts) -> str:
        if self.style == "draft":
            return f.name
        return names.jobset_top_level_template(f.namespace, f.name)

    def per_rjob(self, f: JobSetFacts, rjob: str) -> str:
        if self.style == "draft":
            return rjob
        return names.jobset_rjob_template(f.namespace, f.name, rjob)

    def annotate_children(self) -> bool:
        return self.style == "upstream"


