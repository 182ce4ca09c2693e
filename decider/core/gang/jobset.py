"""JobSet gangs: upstream ``spec.scheduling`` (KEP-969 WAS integration) and the seed's modes.

A real JobSet CRD prunes spec fields it does not know, so the decider also accepts the three
modes of the KEP-969 draft as annotations:

* ``jobset-decider.io/gang-policy: JobSetAsGang`` - the whole JobSet is one gang (exactly what
  upstream does for ``spec.scheduling: {}``);
* ``JobSetGangPerReplicatedJob`` - one gang per replicated Job (upstream's per-ReplicatedJob
  templates, the same ones it falls back to for sequenced startup);
* ``JobSetWorkloadTemplate`` - the Workload spec in ``jobset-decider.io/workload-template``
  (YAML or JSON); each template/group named after a replicated Job gangs that replicated Job.

minCount follows the upstream JobSet code, not Kueue: a replicated Job represents
``replicas x parallelism`` pods (completions are not looked at); ``pod_sets`` reports where Kueue's
``min(parallelism, completions)`` disagrees.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import yaml

from decider.core import access as acc
from decider.core.errors import FieldError, InvalidInput
from decider.core.gang import names
from decider.core.gang.blocks import Blocks, check_basic_with_all, parse_blocks
from decider.core.gang.job import GROUP_TEMPLATE_ANNOTATION
from decider.core.gang.model import Design, Group

GANG_POLICY_ANNOTATION = "jobset-decider.io/gang-policy"
WORKLOAD_TEMPLATE_ANNOTATION = "jobset-decider.io/workload-template"
AS_GANG = "JobSetAsGang"
PER_RJOB = "JobSetGangPerReplicatedJob"
TEMPLATE = "JobSetWorkloadTemplate"
MODES = (AS_GANG, PER_RJOB, TEMPLATE)

JOBSET_API = "jobset.x-k8s.io/v1alpha2"
MAX_TEMPLATES = 8
MAX_ENTRIES = 50
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
            )
        )
    startup = acc.child(spec, "startupPolicy", "spec")
    status = acc.child(js, "status", "")
    finished = False
    for i, cond in enumerate(acc.items(status, "conditions", "status")):
        cond = acc.as_map(cond, f"status.conditions[{i}]")
        ctype = acc.string(cond, "type", f"status.conditions[{i}]")
        if ctype in ("Completed", "Failed") and cond.get("status") == "True":
            finished = True
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


@dataclass
class JobSetDesignResult:
    design: Design | None
    mode: str
    explanation: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def parse_template(text: str, errors: list[FieldError]) -> dict[str, Any] | None:
    where = f"metadata.annotations[{WORKLOAD_TEMPLATE_ANNOTATION}]"
    if not text.strip():
        errors.append(FieldError(where, f"Required value when the gang policy is {TEMPLATE}"))
        return None
    try:
        # YAML is a superset of JSON, but JSON's error messages are clearer for JSON input.
        data = json.loads(text) if text.lstrip().startswith("{") else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        errors.append(FieldError(where, f"is not valid YAML or JSON: {str(exc).splitlines()[0]}"))
        return None
    except RecursionError:
        # The annotation is a string: --max-json-depth bounded the request, not this text.
        errors.append(FieldError(where, "is not valid YAML or JSON: nested too deeply"))
        return None
    if not isinstance(data, dict):
        errors.append(FieldError(where, "must be a Workload spec object"))
        return None
    # Accept a whole Workload manifest as well as just its spec.
    if isinstance(data.get("spec"), dict) and "kind" in data:
        data = data["spec"]
    return data


def _template_groups(
    f: JobSetFacts, spec: dict[str, Any], errors: list[FieldError]
) -> list[tuple[str, Blocks]]:
    where = f"metadata.annotations[{WORKLOAD_TEMPLATE_ANNOTATION}]"
    key = "podGroupTemplates" if "podGroupTemplates" in spec else "podGroups"
    raw = spec.get(key)
    if not isinstance(raw, list) or not raw:
        errors.append(FieldError(f"{where}.{key}", "must have at least one item"))
        return []
    if len(raw) > MAX_TEMPLATES:
        errors.append(FieldError(f"{where}.{key}", f"must have at most {MAX_TEMPLATES} items"))
    out: list[tuple[str, Blocks]] = []
    seen: set[str] = set()
    for i, item in enumerate(raw):
        ipath = f"{where}.{key}[{i}]"
        if not isinstance(item, dict):
            errors.append(FieldError(ipath, "must be an object"))
            continue
        name = item.get("name")
        if not isinstance(name, str) or not name:
            errors.append(FieldError(f"{ipath}.name", "Required value"))
            continue
        if name in seen:
            errors.append(FieldError(f"{ipath}.name", f'Duplicate value: "{name}"'))
        seen.add(name)
        if f.rjob(name) is None:
            errors.append(
                FieldError(f"{ipath}.name", f"{name!r} does not name a replicatedJob of the JobSet")
            )
        # v1alpha1 spells the policy "policy"; later generations "schedulingPolicy".
        body = dict(item)
        if "policy" in body and "schedulingPolicy" not in body:
            body["schedulingPolicy"] = body.pop("policy")
        try:
            blocks = parse_blocks(body, ipath, errors)
        except InvalidInput as exc:
            errors.extend(exc.errors)
            continue
        if body.get("schedulingPolicy") is None:
            errors.append(FieldError(f"{ipath}.schedulingPolicy", "Required value"))
        elif blocks.policy == "gang" and blocks.min_count is None:
            errors.append(FieldError(f"{ipath}.schedulingPolicy.gang.minCount", "Required value"))
        elif (r := f.rjob(name)) and blocks.policy == "gang" and (blocks.min_count or 0) > r.pods:
            errors.append(
                FieldError(
                    f"{ipath}.schedulingPolicy.gang.minCount",
                    f"cannot exceed the {r.pods} pods of replicatedJob {name!r}",
                )
            )
        check_basic_with_all(blocks.policy, blocks.disruption, ipath, errors)
        out.append((name, blocks))
    return out


def _entry(raw: Any, path: str) -> dict[str, Any]:
    return acc.as_map(raw, path)


def validate(f: JobSetFacts, js_path: str = "spec.scheduling") -> list[FieldError]:
    """All admission rules for the gang configuration of a JobSet (empty when none asked)."""
    errors: list[FieldError] = []
    ann = f"metadata.annotations[{GANG_POLICY_ANNOTATION}]"
    if f.scheduling is not None and f.mode is not None:
        errors.append(FieldError(ann, "cannot be combined with spec.scheduling"))
        return errors
    if f.mode is None and f.template_text:
        errors.append(
            FieldError(
                f"metadata.annotations[{WORKLOAD_TEMPLATE_ANNOTATION}]",
                f"is only allowed with {GANG_POLICY_ANNOTATION}: {TEMPLATE}",
            )
        )
    if f.mode is not None and f.mode not in MODES:
        errors.append(
            FieldError(ann, f"Unsupported value: {f.mode!r}: supported {', '.join(MODES)}")
        )
        return errors
    if f.scheduling is None and f.mode is None:
        return errors
    if f.mode is not None and f.mode != TEMPLATE and f.template_text:
        errors.append(
            FieldError(
                f"metadata.annotations[{WORKLOAD_TEMPLATE_ANNOTATION}]",
                f"is only allowed with {GANG_POLICY_ANNOTATION}: {TEMPLATE}",
            )
        )
    if not f.rjobs:
        errors.append(
            FieldError(
                "spec.replicatedJobs",
                "must contain at least one replicatedJob when gang scheduling is configured",
            )
        )
        return errors
    for r in f.rjobs:
        if r.scheduling_group:
            errors.append(
                FieldError(
                    f"spec.replicatedJobs[{r.index}].template.spec.template.spec.schedulingGroup",
                    "Forbidden: cannot be set directly when gang scheduling is configured; the "
                    "JobSet controller manages this field",
                )
            )
    if f.mode == TEMPLATE:
        spec = parse_template(f.template_text, errors)
        if spec is not None:
            _template_groups(f, spec, errors)
        return errors
    if f.mode is not None:
        _check_priorities(f, errors, single=f.mode == AS_GANG and not f.sequenced)
        return errors
    assert f.scheduling is not None
    _validate_scheduling(f, f.scheduling, errors)
    return errors


def _check_priorities(f: JobSetFacts, errors: list[FieldError], *, single: bool) -> None:
    if not single or len(f.rjobs) < 2:
        return
    expected = f.rjobs[0].priority_class
    for r in f.rjobs[1:]:
        if r.priority_class != expected:
            errors.append(
                FieldError(
                    f"spec.replicatedJobs[{r.index}].template.spec.template.spec.priorityClassName",
                    f"must match {expected!r} when top-level gang scheduling is used",
                )
            )


def _validate_scheduling(f: JobSetFacts, sched: dict[str, Any], errors: list[FieldError]) -> None:
    path = "spec.scheduling"
    top = parse_blocks(sched, path, errors, zero_min_is_unset=True, claims_allowed=False)
    entries = acc.items(sched, "replicatedJobs", path)
    if len(entries) > MAX_ENTRIES:
        errors.append(
            FieldError(f"{path}.replicatedJobs", f"must have at most {MAX_ENTRIES} items")
        )
    uses_top = top.policy is not None or bool(top.topology) or top.disruption is not None
    if uses_top and entries:
        errors.append(
            FieldError(
                path,
                "Forbidden: cannot set schedulingPolicy, schedulingConstraints, or disruptionMode "
                "together with replicatedJobs",
            )
        )
    check_basic_with_all(top.policy, top.disruption, path, errors)
    if f.sequenced and not entries and top.policy == "gang" and top.min_count:
        errors.append(
            FieldError(
                f"{path}.schedulingPolicy.gang.minCount",
                "cannot be set when DependsOn or InOrder StartupPolicy is used; use "
                "per-ReplicatedJob gang policies instead",
            )
        )
    if not entries and top.policy in (None, "gang") and not f.sequenced:
        _check_priorities(f, errors, single=True)
        total = min(_INT32_MAX, sum(r.pods for r in f.rjobs))
        if top.min_count is not None and top.min_count > total:
            errors.append(
                FieldError(
                    f"{path}.schedulingPolicy.gang.minCount",
                    f"cannot exceed the total number of JobSet pods ({total})",
                )
            )
    targeted: set[str] = set()
    for i, raw in enumerate(entries):
        epath = f"{path}.replicatedJobs[{i}]"
        entry = _entry(raw, epath)
        tpath = f"{epath}.targetReplicatedJobs"
        targets = acc.items(entry, "targetReplicatedJobs", epath)
        if not targets:
            errors.append(FieldError(tpath, "must have at least 1 item"))
        valid: list[str] = []
        for j, t in enumerate(targets):
            if not isinstance(t, str) or f.rjob(t) is None:
                errors.append(
                    FieldError(
                        f"{tpath}[{j}]", f"{t!r} does not reference a valid replicatedJob name"
                    )
                )
            elif t in targeted:
                errors.append(
                    FieldError(
                        f"{tpath}[{j}]", f"{t!r} is targeted by more than one replicatedJobs entry"
                    )
                )
            else:
                targeted.add(t)
                valid.append(t)
        leaf = parse_blocks(entry, epath, errors, zero_min_is_unset=True)
        check_basic_with_all(leaf.policy, leaf.disruption, epath, errors)
        job = entry.get("job")
        if job is not None:
            jpath = f"{epath}.job"
            jb = parse_blocks(acc.as_map(job, jpath), jpath, errors, zero_min_is_unset=True)
            check_basic_with_all(jb.policy, jb.disruption, jpath, errors)
            if len(targets) != 1:
                errors.append(
                    FieldError(tpath, "must target exactly one replicatedJob when job is set")
                )
            if leaf.has_leaf_fields:
                errors.append(
                    FieldError(
                        jpath,
                        "cannot be set together with schedulingPolicy, schedulingConstraints, "
                        "disruptionMode, or resourceClaims on the same replicatedJobs entry",
                    )
                )
            if valid and jb.policy == "gang" and jb.min_count is not None:
                r = f.rjob(valid[0])
                if r is not None and jb.min_count > r.parallelism:
                    errors.append(
                        FieldError(
                            f"{jpath}.schedulingPolicy.gang.minCount",
                            f"cannot exceed the per-Job pod count (parallelism) of replicatedJob "
                            f"{valid[0]!r} ({r.parallelism})",
                        )
                    )
            continue
        if len(valid) > 1:
            expected = f.rjob(valid[0]).priority_class  # type: ignore[union-attr]
            for j, t in enumerate(valid[1:], start=1):
                actual = f.rjob(t).priority_class  # type: ignore[union-attr]
                if actual != expected:
                    errors.append(
                        FieldError(
                            f"{tpath}[{j}]",
                            f"priorityClassName {actual!r} must match {expected!r} of the other "
                            "ReplicatedJobs sharing this PodGroup",
                        )
                    )
        if leaf.policy == "gang" and leaf.min_count is not None:
            count = min(_INT32_MAX, sum(f.rjob(t).pods for t in valid))  # type: ignore[union-attr]
            if leaf.min_count > count:
                errors.append(
                    FieldError(
                        f"{epath}.schedulingPolicy.gang.minCount",
                        "cannot exceed the number of pods across the targeted ReplicatedJobs "
                        f"({count})",
                    )
                )
    if entries and not uses_top:
        for r in f.rjobs:
            if r.name not in targeted:
                errors.append(
                    FieldError(
                        f"spec.replicatedJobs[{r.index}].name",
                        "must be targeted by a replicatedJobs entry when spec.scheduling does "
                        "not set a top-level schedulingPolicy, schedulingConstraints, or "
                        "disruptionMode",
                    )
                )


def _group(
    template: str,
    podgroup: str,
    blocks: Blocks,
    default_min: int,
    members: list[str],
    rjobs: list[str],
    pods: int,
    priority: str,
) -> Group:
    policy = blocks.policy or "gang"  # upstream's default config is Gang
    return Group(
        template=template,
        podgroup=podgroup,
        min_count=(blocks.min_count or default_min) if policy == "gang" else None,
        pods=pods,
        members=members,
        rjobs=rjobs,
        topology=blocks.topology,
        disruption=blocks.disruption,
        claims=blocks.claims,
        priority_class=priority,
    )


def _global_for_leaf(top: Blocks, ignore_min: bool) -> Blocks:
    """The top-level blocks as a fallback for per-ReplicatedJob and per-Job items."""
    return Blocks(
        policy=top.policy,
        min_count=None if ignore_min else top.min_count,
        topology=top.topology,
        disruption=top.disruption,
    )


def _merge(leaf: Blocks, fallback: Blocks) -> Blocks:
    # Each block falls back on its own, as upstream's builder does.
    if leaf.policy is not None:
        policy, min_count = leaf.policy, leaf.min_count
    else:
        policy, min_count = fallback.policy, fallback.min_count
    return Blocks(
        policy=policy,
        min_count=min_count,
        topology=leaf.topology or fallback.topology,
        disruption=leaf.disruption or fallback.disruption,
        claims=leaf.claims,
    )


def design_jobset(f: JobSetFacts, naming: Naming) -> JobSetDesignResult:
    """Decide the gangs of a JobSet; raises InvalidInput when its configuration is invalid."""
    errors = validate(f)
    if errors:
        raise InvalidInput(errors)
    if f.scheduling is None and f.mode is None:
        return JobSetDesignResult(
            None, "none", [f"JobSet {f.name} asks for no gang scheduling: no objects"]
        )
    result = JobSetDesignResult(None, "none")
    say = result.explanation.append
    groups: list[Group] = []
    top_level = False
    if f.mode == TEMPLATE:
        spec = parse_template(f.template_text, errors)
        assert spec is not None
        covered: set[str] = set()
        for name, blocks in _template_groups(f, spec, errors):
            r = f.rjob(name)
            assert r is not None
            covered.add(name)
            groups.append(
                _group(
                    name,
                    names.jobset_podgroup_name(f.name, name),
                    blocks,
                    r.pods,
                    r.child_jobs(f.name),
                    [name],
                    r.pods,
                    r.priority_class,
                )
            )
        for r in f.rjobs:
            if r.name not in covered:
                result.warnings.append(
                    f"replicatedJob {r.name} is in no template of the Workload: not gang scheduled"
                )
        result.mode = "workloadTemplate"
        say(
            f"JobSet {f.name}: {TEMPLATE}, {len(groups)} group(s) from the user's Workload template"
        )
    else:
        if f.mode == AS_GANG:
            sched: dict[str, Any] = {}
        elif f.mode == PER_RJOB:
            sched = {"replicatedJobs": []}
        else:
            assert f.scheduling is not None
            sched = f.scheduling
        top = parse_blocks(sched, "spec.scheduling", errors, zero_min_is_unset=True)
        entries = [
            acc.as_map(e, "spec.scheduling.replicatedJobs")
            for e in sched.get("replicatedJobs") or []
        ]
        per_rjob_mode = f.mode == PER_RJOB
        top_level = (
            not per_rjob_mode and not entries and top.policy in (None, "gang") and not f.sequenced
        )
        if top_level:
            tpl = naming.top_level(f)
            members = [j for r in f.rjobs for j in r.child_jobs(f.name)]
            total = min(_INT32_MAX, sum(r.pods for r in f.rjobs))
            groups.append(
                _group(
                    tpl,
                    tpl,
                    top,
                    total,
                    members,
                    [r.name for r in f.rjobs],
                    total,
                    f.rjobs[0].priority_class,
                )
            )
            result.mode = "topLevel"
            say(f"JobSet {f.name} is one gang of {groups[0].min_count} of its {total} pods")
        else:
            if f.sequenced and not per_rjob_mode and not entries and top.policy != "basic":
                say(
                    f"JobSet {f.name} starts its replicated Jobs in sequence (InOrder or "
                    "DependsOn): one gang per replicated Job, since a single gang would deadlock"
                )
            fallback = _global_for_leaf(top, ignore_min=f.sequenced)
            grouped: set[str] = set()
            for entry in entries:
                targets = [t for t in entry.get("targetReplicatedJobs") or [] if f.rjob(t)]
                if not targets:
                    continue
                grouped.update(targets)
                if entry.get("job") is not None:
                    r = f.rjob(targets[0])
                    assert r is not None
                    jb = parse_blocks(entry["job"], "job", errors, zero_min_is_unset=True)
                    blocks = _merge(jb, _global_for_leaf(top, ignore_min=True))
                    for idx, child in enumerate(r.child_jobs(f.name)):
                        tpl = names.jobset_job_template(f.namespace, f.name, r.name, idx)
                        groups.append(
                            _group(
                                tpl,
                                names.jobset_podgroup_name(f.name, tpl),
                                blocks,
                                r.parallelism,
                                [child],
                                [r.name],
                                r.parallelism,
                                r.priority_class,
                            )
                        )
                    continue
                members_r = [f.rjob(t) for t in targets]
                leaf = parse_blocks(entry, "entry", errors, zero_min_is_unset=True)
                blocks = _merge(leaf, fallback)
                tpl = names.jobset_group_template(f.namespace, f.name, targets)
                pods = min(_INT32_MAX, sum(r.pods for r in members_r if r))
                groups.append(
                    _group(
                        tpl,
                        names.jobset_podgroup_name(f.name, tpl),
                        blocks,
                        pods,
                        [j for r in members_r if r for j in r.child_jobs(f.name)],
                        targets,
                        pods,
                        members_r[0].priority_class if members_r[0] else "",
                    )
                )
            for r in f.rjobs:
                if r.name in grouped:
                    continue
                tpl = naming.per_rjob(f, r.name)
                groups.append(
                    _group(
                        tpl,
                        names.jobset_podgroup_name(f.name, tpl),
                        fallback,
                        r.pods,
                        r.child_jobs(f.name),
                        [r.name],
                        r.pods,
                        r.priority_class,
                    )
                )
            result.mode = "perReplicatedJob"
            for g in groups:
                policy = f"gang of {g.min_count}" if g.is_gang else "basic"
                say(f"group {g.template} covers {', '.join(g.rjobs)}: {policy}")
    seen: set[str] = set()
    for g in groups:
        if g.template in seen:
            raise InvalidInput.at(
                "spec.scheduling.replicatedJobs",
                f"generated scheduling group name {g.template!r} is not unique",
            )
        seen.add(g.template)
    if len(groups) > MAX_TEMPLATES:
        raise InvalidInput.at(
            "spec.scheduling.replicatedJobs",
            f"the JobSet needs {len(groups)} PodGroupTemplates; a Workload holds at most "
            f"{MAX_TEMPLATES} (the JobSet is not split)",
        )
    annotations: dict[str, dict[str, str]] = {}
    if naming.annotate_children():
        for g in groups:
            for m in g.members:
                annotations[m] = {GROUP_TEMPLATE_ANNOTATION: g.template}
    result.design = Design(
        source_kind="JobSet",
        namespace=f.namespace,
        owner=f.owner_ref,
        controller_ref={"apiGroup": "jobset.x-k8s.io", "kind": "JobSet", "name": f.name},
        workload_name=naming.workload(f),
        groups=groups,
        workload_labels=naming.workload_labels(f),
        job_annotations=annotations,
    )
    return result
