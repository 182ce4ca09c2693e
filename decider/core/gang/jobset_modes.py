"""This project's gang annotations: the three modes of the KEP-969 draft (jobset#1111).

A JobSet CRD that prunes spec fields it does not know still keeps annotations, so the decider
reads the draft's modes from them (docs/gang.md, "JobSets"):

* ``jobset-decider.io/gang-policy: JobSetAsGang`` - the whole JobSet is one gang
  (``minCount`` = every pod); under sequenced startup one gang per replicated Job instead,
  since a single gang over Jobs created one after the other would deadlock;
* ``JobSetGangPerReplicatedJob`` - one gang per replicated Job;
* ``JobSetWorkloadTemplate`` - the Workload spec in ``jobset-decider.io/workload-template``
  (YAML or JSON); each template named after a replicated Job gangs that replicated Job.

minCount follows the upstream JobSet code, not Kueue: a replicated Job represents
``replicas x parallelism`` pods; ``pod_sets`` reports where Kueue's
``min(parallelism, completions)`` disagrees. These modes are not gated: they are ours.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from decider.core.errors import FieldError, InvalidInput
from decider.core.gang import names
from decider.core.gang.blocks import Blocks, check_basic_with_all, parse_blocks
from decider.core.gang.jobset_facts import (
    GANG_POLICY_ANNOTATION,
    WORKLOAD_TEMPLATE_ANNOTATION,
    JobSetFacts,
    Naming,
    RJob,
)
from decider.core.gang.model import Group

AS_GANG = "JobSetAsGang"
PER_RJOB = "JobSetGangPerReplicatedJob"
TEMPLATE = "JobSetWorkloadTemplate"
MODES = (AS_GANG, PER_RJOB, TEMPLATE)
MAX_TEMPLATES = 8
_INT32_MAX = 2**31 - 1
_TEMPLATE_FIELD = f"metadata.annotations[{WORKLOAD_TEMPLATE_ANNOTATION}]"
_MODE_FIELD = f"metadata.annotations[{GANG_POLICY_ANNOTATION}]"


def parse_template(text: str, errors: list[FieldError]) -> dict[str, Any] | None:
    if not text.strip():
        errors.append(FieldError(_TEMPLATE_FIELD,
                                 f"Required value when the gang policy is {TEMPLATE}"))
        return None
    try:
        # YAML is a superset of JSON, but JSON's error messages are clearer for JSON input.
        data = json.loads(text) if text.lstrip().startswith("{") else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        errors.append(FieldError(_TEMPLATE_FIELD,
                                 f"is not valid YAML or JSON: {str(exc).splitlines()[0]}"))
        return None
    except RecursionError:
        # The annotation is a string: --max-json-depth bounded the request, not this text.
        errors.append(FieldError(_TEMPLATE_FIELD, "is not valid YAML or JSON: nested too deeply"))
        return None
    if not isinstance(data, dict):
        errors.append(FieldError(_TEMPLATE_FIELD, "must be a Workload spec object"))
        return None
    # Accept a whole Workload manifest as well as just its spec.
    if isinstance(data.get("spec"), dict) and "kind" in data:
        data = data["spec"]
    return data


def template_groups(f: JobSetFacts, spec: dict[str, Any],
                    errors: list[FieldError]) -> list[tuple[str, Blocks]]:
    key = "podGroupTemplates" if "podGroupTemplates" in spec else "podGroups"
    raw = spec.get(key)
    if not isinstance(raw, list) or not raw:
        errors.append(FieldError(f"{_TEMPLATE_FIELD}.{key}", "must have at least one item"))
        return []
    if len(raw) > MAX_TEMPLATES:
        errors.append(FieldError(f"{_TEMPLATE_FIELD}.{key}",
                                 f"must have at most {MAX_TEMPLATES} items"))
    out: list[tuple[str, Blocks]] = []
    seen: set[str] = set()
    for i, item in enumerate(raw):
        ipath = f"{_TEMPLATE_FIELD}.{key}[{i}]"
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


def validate(f: JobSetFacts) -> list[FieldError]:
    """Admission rules of the annotations (empty when the JobSet sets none)."""
    errors: list[FieldError] = []
    if f.scheduling is not None and f.mode is not None:
        errors.append(FieldError(_MODE_FIELD, "cannot be combined with spec.scheduling"))
        return errors
    if f.mode is None:
        if f.template_text:
            errors.append(FieldError(_TEMPLATE_FIELD,
                                     f"is only allowed with {GANG_POLICY_ANNOTATION}: {TEMPLATE}"))
        return errors
    if f.mode not in MODES:
        errors.append(
            FieldError(_MODE_FIELD, f"Unsupported value: {f.mode!r}: supported {', '.join(MODES)}")
        )
        return errors
    if f.mode != TEMPLATE and f.template_text:
        errors.append(FieldError(_TEMPLATE_FIELD,
                                 f"is only allowed with {GANG_POLICY_ANNOTATION}: {TEMPLATE}"))
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
            template_groups(f, spec, errors)
        return errors
    if f.mode == AS_GANG and not f.sequenced and len(f.rjobs) > 1:
        expected = f.rjobs[0].priority_class
        for r in f.rjobs[1:]:
            if r.priority_class != expected:
                errors.append(
                    FieldError(
                        f"spec.replicatedJobs[{r.index}].template.spec.template.spec."
                        "priorityClassName",
                        f"must match {expected!r} when top-level gang scheduling is used",
                    )
                )
    return errors


def _group(template: str, podgroup: str, blocks: Blocks, default_min: int, members: list[str],
           rjobs: list[str], pods: int, priority: str) -> Group:
    policy = blocks.policy or "gang"
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


def _per_rjob(f: JobSetFacts, naming: Naming, r: RJob) -> Group:
    tpl = naming.per_rjob(f, r.name)
    return _group(tpl, names.jobset_podgroup_name(f.name, tpl), Blocks(), r.pods,
                  r.child_jobs(f.name), [r.name], r.pods, r.priority_class)


def design(f: JobSetFacts, naming: Naming) -> tuple[str, list[Group], list[str], list[str]]:
    """(mode, groups, explanation, warnings) of a validated annotation mode."""
    say: list[str] = []
    warnings: list[str] = []
    if f.mode == TEMPLATE:
        spec = parse_template(f.template_text, [])
        assert spec is not None
        groups, covered = [], set()
        for name, blocks in template_groups(f, spec, []):
            r = f.rjob(name)
            assert r is not None
            covered.add(name)
            groups.append(_group(name, names.jobset_podgroup_name(f.name, name), blocks, r.pods,
                                 r.child_jobs(f.name), [name], r.pods, r.priority_class))
        for r in f.rjobs:
            if r.name not in covered:
                warnings.append(
                    f"replicatedJob {r.name} is in no template of the Workload: not gang scheduled"
                )
        say.append(
            f"JobSet {f.name}: {TEMPLATE}, {len(groups)} group(s) from the user's Workload template"
        )
        return "workloadTemplate", groups, say, warnings
    if f.mode == AS_GANG and not f.sequenced:
        tpl = naming.top_level(f)
        total = min(_INT32_MAX, sum(r.pods for r in f.rjobs))
        group = _group(tpl, tpl, Blocks(), total,
                       [j for r in f.rjobs for j in r.child_jobs(f.name)],
                       [r.name for r in f.rjobs], total, f.rjobs[0].priority_class)
        say.append(f"JobSet {f.name} is one gang of {group.min_count} of its {total} pods")
        return "topLevel", [group], say, warnings
    if f.mode == AS_GANG:
        say.append(
            f"JobSet {f.name} starts its replicated Jobs in sequence (InOrder or "
            "DependsOn): one gang per replicated Job, since a single gang would deadlock"
        )
    groups = [_per_rjob(f, naming, r) for r in f.rjobs]
    for g in groups:
        policy = f"gang of {g.min_count}" if g.is_gang else "basic"
        say.append(f"group {g.template} covers {', '.join(g.rjobs)}: {policy}")
    return "perReplicatedJob", groups, say, warnings


__all__ = ["AS_GANG", "MODES", "PER_RJOB", "TEMPLATE", "design", "parse_template",
           "template_groups", "validate"]
