"""Admission rules of ``spec.scheduling``, as upstream enforces them, in three tiers:

* ``cel_errors``: the CRD's validation rules, which the API server applies before any webhook
  and whatever the feature gates (jobset test/integration/scheduling@4f0cbded quotes them:
  sequenced startup, ``minGroupCount``, unions, positive ``minCount``, ``job``'s shape);
* ``webhook_errors``: ``validateScheduling`` (pkg/webhooks/jobset_webhook.go@4f0cbded),
  including what the workload builder's ``Validate`` checks on the building blocks;
* ``min_count_errors``: ``validateSchedulingGangMinCounts``, re-run on ElasticJobSet updates.

Messages follow this project's admission convention for upstream's ``field.Error``s: an
Invalid is its detail alone (as spec.network.subdomain's are), a Forbidden keeps its
"Forbidden: " and a TooMany its "Too many: 16: must have at most 8 items", so each reads as the
tail of what kubectl prints after the field. The CRD's
rule texts are not published in what upstream ships beside the tests; ours contain every
phrase upstream's tests look for. JobSetGangOfGangs lifts three alpha rules (top-level fields
with entries, ``minGroupCount``, an entry's composite fields beside ``job``: in the tree they
configure the entry's CompositePodGroup and ``job`` its leaves, as KEP-969's example has it) and
replaces the flat template count by the tree's limits. Those three are the webhook's in this
project's CRD (deploy/crd), which cannot know a gate.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from decider.core import k8s_names
from decider.core.constants import GATE_GANG_OF_GANGS, GATE_WORKLOAD_AWARE_SCHEDULING
from decider.core.errors import FieldError, InvalidInput
from decider.core.gang import was_builder as wb
from decider.core.gang.jobset_facts import JobSetFacts
from decider.core.gang.was_spec import (
    ALL,
    BASIC,
    GANG,
    Composite,
    Leaf,
    Scheduling,
    read_scheduling,
    use_top_level,
)

WORKLOAD_MAX_TEMPLATES = 8  # scheduling/v1beta1 WorkloadMaxPodGroupTemplates
WORKLOAD_MAX_TREE_DEPTH = 4  # scheduling/v1beta1 WorkloadMaxTreeDepth
MAX_CLAIMS = 4
MAX_TOPOLOGY = 1
_INT32_MAX = 2**31 - 1

SEQUENCED = (
    "top-level scheduling (schedulingPolicy, schedulingConstraints, disruptionMode, or an empty "
    "scheduling: {}) cannot be set with DependsOn or InOrder startup, since a single PodGroup "
    "over Jobs created one after the other would never fill; use spec.scheduling.replicatedJobs "
    "entries instead"
)
TOP_WITH_ENTRIES = (
    "schedulingPolicy, schedulingConstraints, and disruptionMode cannot be set together with "
    "replicatedJobs"
)
MIN_GROUP_COUNT = "minGroupCount is not supported"
ONE_POLICY = "exactly one of basic or gang must be set"
ONE_DISRUPTION = "exactly one of single or all must be set"
ONE_CLAIM_SOURCE = "exactly one of resourceClaimName or resourceClaimTemplateName must be set"
POSITIVE_MIN_COUNT = "minCount must be a positive integer"
POSITIVE_MIN_GROUP_COUNT = "minGroupCount must be a positive integer"
JOB_ONE_TARGET = "must target exactly one replicatedJob when job is set"
JOB_EXCLUSIVE = (
    "schedulingPolicy, schedulingConstraints, and disruptionMode cannot be set when job is set: "
    "job cannot be set together with schedulingPolicy, schedulingConstraints, or disruptionMode "
    "on the same replicatedJobs entry; job replaces the single shared PodGroup those fields "
    "configure with one PodGroup per Job"
)
BASIC_WITH_ALL = "the disruptionMode `all` is not supported with the Basic scheduling policy"


# --- field.Error bodies ------------------------------------------------------------------------

def _go(value: Any) -> str:
    """How field.Error prints a bad value: %q for strings, %v for numbers and booleans, %#v for
    a []string."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list):
        return "[]string{" + ", ".join(_quote(str(v)) for v in value) + "}"
    return _quote(str(value))


def _quote(value: str) -> str:
    """Go's %q for the names these messages carry (JSON's escaping is the same for them)."""
    import json

    return json.dumps(value, ensure_ascii=False)


def invalid(path: str, value: Any, detail: str) -> FieldError:
    """field.Invalid, said as the project says it: the detail (the value is in the input)."""
    del value
    return FieldError(path, detail)


def forbidden(path: str, detail: str) -> FieldError:
    return FieldError(path, f"Forbidden: {detail}")


def too_many(path: str, actual: int, limit: int) -> FieldError:
    item = "item" if limit == 1 else "items"
    return FieldError(path, f"Too many: {actual}: must have at most {limit} {item}")


def _gates(gates: Mapping[str, bool] | None) -> tuple[bool, bool]:
    gates = gates or {}
    was = bool(gates.get(GATE_WORKLOAD_AWARE_SCHEDULING))
    return was, was and bool(gates.get(GATE_GANG_OF_GANGS))


def sequenced_startup(spec: dict[str, Any]) -> bool:
    """HasSequencedStartup: InOrder, or any ReplicatedJob with a non-empty dependsOn."""
    startup = spec.get("startupPolicy")
    if isinstance(startup, dict) and startup.get("startupPolicyOrder") == "InOrder":
        return True
    for rjob in spec.get("replicatedJobs") or []:
        if isinstance(rjob, dict) and isinstance(rjob.get("dependsOn"), list) \
                and rjob["dependsOn"]:
            return True
    return False


# --- the CRD's rules ---------------------------------------------------------------------------

def _composite_rules(c: Composite, path: str, tree: bool, errs: list[FieldError]) -> None:
    if c.policy_set:
        if c.policy_members != 1:
            errs.append(FieldError(f"{path}.schedulingPolicy", ONE_POLICY))
        if c.min_group_count_set:
            gpath = f"{path}.schedulingPolicy.gang"
            if not tree:
                errs.append(FieldError(gpath, MIN_GROUP_COUNT))
            elif (c.min_group_count or 0) < 1:
                errs.append(FieldError(gpath, POSITIVE_MIN_GROUP_COUNT))
    if c.disruption_set and c.disruption_members != 1:
        errs.append(FieldError(f"{path}.disruptionMode", ONE_DISRUPTION))


def _leaf_rules(leaf: Leaf, path: str, errs: list[FieldError]) -> None:
    if leaf.policy_set:
        if leaf.policy_members != 1:
            errs.append(FieldError(f"{path}.schedulingPolicy", ONE_POLICY))
        if leaf.min_count is not None and leaf.min_count < 1:
            errs.append(FieldError(f"{path}.schedulingPolicy.gang", POSITIVE_MIN_COUNT))
    if leaf.disruption_set and leaf.disruption_members != 1:
        errs.append(FieldError(f"{path}.disruptionMode", ONE_DISRUPTION))
    for i, claim in enumerate(leaf.claims):
        sources = [k for k in ("resourceClaimName", "resourceClaimTemplateName") if k in claim]
        if len(sources) != 1:
            errs.append(FieldError(f"{path}.resourceClaims[{i}]", ONE_CLAIM_SOURCE))


def cel_errors(spec: Any, gates: Mapping[str, bool] | None = None) -> list[FieldError]:
    """The CRD's validation rules on ``spec.scheduling`` (none when it is absent)."""
    if not isinstance(spec, dict) or spec.get("scheduling") is None:
        return []
    return scheduling_cel_errors(spec["scheduling"], sequenced_startup(spec), gates)


def scheduling_cel_errors(raw: Any, sequenced: bool,
                          gates: Mapping[str, bool] | None = None) -> list[FieldError]:
    try:
        s = read_scheduling(raw)
    except InvalidInput:
        return []  # a type error: the schema reported it, and CEL does not run on it
    _, tree = _gates(gates)
    errs: list[FieldError] = []
    path = "spec.scheduling"
    if sequenced and (s.top.any_set or not s.entries):
        errs.append(FieldError(path, SEQUENCED))
    if s.top.any_set and s.entries and not tree:
        errs.append(FieldError(path, TOP_WITH_ENTRIES))
    _composite_rules(s.top, path, tree, errs)
    for e in s.entries:
        _composite_rules(e.composite, e.path, tree, errs)
        if e.job is not None:
            if len(e.targets) != 1:
                errs.append(FieldError(f"{e.path}.targetReplicatedJobs", JOB_ONE_TARGET))
            if e.composite.any_set and not tree:
                errs.append(FieldError(f"{e.path}.job", JOB_EXCLUSIVE))
            _leaf_rules(e.job, f"{e.path}.job", errs)
    return errs


# --- the webhook's rules -----------------------------------------------------------------------

def _block_errors(blocks: wb.Blocks, path: str, errs: list[FieldError]) -> None:
    """What the workload builder's Validate checks on one item's blocks (declarative validation
    of the building blocks, the allow-lists, and Basic with disruptionMode all)."""
    if len(blocks.topology) > MAX_TOPOLOGY:
        errs.append(too_many(f"{path}.schedulingConstraints.topology", len(blocks.topology),
                             MAX_TOPOLOGY))
    for i, item in enumerate(blocks.topology):
        key = str(item.get("key") or "")
        kpath = f"{path}.schedulingConstraints.topology[{i}].key"
        if not key:
            errs.append(FieldError(kpath, "Required value"))
            continue
        errs.extend(invalid(kpath, key, m) for m in k8s_names.is_qualified_name(key))
    seen: set[str] = set()
    for i, claim in enumerate(blocks.claims):
        cpath = f"{path}.resourceClaims[{i}]"
        name = str(claim.get("name") or "")
        if not name:
            errs.append(FieldError(f"{cpath}.name", "Required value"))
        else:
            errs.extend(invalid(f"{cpath}.name", name, m)
                        for m in k8s_names.is_dns1123_label(name))
            if name in seen:
                errs.append(FieldError(f"{cpath}.name", f"Duplicate value: {_go(name)}"))
            seen.add(name)
        for key in ("resourceClaimName", "resourceClaimTemplateName"):
            if key in claim:
                value = str(claim[key])
                errs.extend(invalid(f"{cpath}.{key}", value, m)
                            for m in k8s_names.is_dns1123_subdomain(value))
    if blocks.policy == BASIC and blocks.disruption == ALL:
        errs.append(FieldError(f"{path}.disruptionMode", BASIC_WITH_ALL))


def builder_errors(f: JobSetFacts, s: Scheduling, tree: bool) -> list[FieldError]:
    """ValidateSchedulingWithBuilder: a duplicate generated name, too many templates, then each
    item's blocks. With JobSetGangOfGangs the tree's limits apply instead of the flat count.

    The tree is checked on its skeleton (wb.tree_skeleton): every rule here is decided by the
    CompositePodGroups and the leaf templates, which it holds, and none by a Job's own leaf
    PodGroup, so validation costs the same for 10 Jobs as for 100,000, where building each
    Job's leaf (a hashed name, a group) took over a second on every pass."""
    root = "spec.scheduling"
    try:
        if tree:
            skeleton = wb.tree_skeleton(f, s)
        else:
            flat = wb.items(f, s)
    except wb.DuplicateName as exc:
        return [invalid(f"{root}.replicatedJobs", exc.name, str(exc))]
    errs: list[FieldError] = []
    if tree:
        composites = skeleton.composites
        nodes = len(composites) - 1
        if nodes > WORKLOAD_MAX_TEMPLATES:
            errs.append(too_many(root, nodes, WORKLOAD_MAX_TEMPLATES))
        for node in (b.node for b in skeleton.branches):
            if len(node.members) > WORKLOAD_MAX_TEMPLATES:
                errs.append(too_many(f"{node.path}.targetReplicatedJobs", len(node.members),
                                     WORKLOAD_MAX_TEMPLATES))
            if node.job is not None:
                own, _ = wb._leaf_blocks(node.job)
                _block_errors(own, f"{node.path}.job", errs)
            _block_errors(wb._from_composite(node.composite), node.path, errs)
        depth = wb.tree_depth(composites, skeleton.leaf_parents())
        if depth > WORKLOAD_MAX_TREE_DEPTH:
            errs.append(FieldError(root, f"the scheduling tree is {depth} levels deep; at most "
                                         f"{WORKLOAD_MAX_TREE_DEPTH} are allowed"))
        _block_errors(wb._from_composite(s.top), root, errs)
        errs.extend(_min_group_count_errors(s, composites))
        return errs
    if len(flat) > WORKLOAD_MAX_TEMPLATES:
        return [too_many(root, len(flat), WORKLOAD_MAX_TEMPLATES)]
    reported: set[str] = set()
    for item in flat:
        if item.path in reported:
            continue  # the Jobs of one entry share its blocks: report them once
        reported.add(item.path)
        _block_errors(item.blocks, item.path, errs)
    return errs


def _min_group_count_errors(s: Scheduling, composites: list[Any]) -> list[FieldError]:
    """Ours: an explicit minGroupCount above the CompositePodGroup's children never fills."""
    errs = []
    pairs = [(s.top, "spec.scheduling", composites[0])]
    nodes = composites[1:]
    for e, node in zip(s.entries, nodes, strict=False):
        pairs.append((e.composite, e.path, node))
    for c, path, node in pairs:
        if c.min_group_count_set and c.min_group_count and c.min_group_count > node.children:
            errs.append(invalid(f"{path}.schedulingPolicy.gang.minGroupCount", c.min_group_count,
                                f"cannot exceed the number of child groups ({node.children})"))
    return errs


def min_count_errors(f: JobSetFacts, s: Scheduling) -> list[FieldError]:
    """A Job's own quorum may not exceed its parallelism (validateSchedulingGangMinCounts)."""
    errs = []
    for e in s.entries:
        job = e.job
        if job is None or job.policy != GANG or job.min_count is None or len(e.targets) != 1:
            continue
        r = f.rjob(e.targets[0])
        if r is not None and job.min_count > r.parallelism:
            errs.append(invalid(
                f"{e.path}.job.schedulingPolicy.gang.minCount", job.min_count,
                f'cannot exceed the per-Job pod count (parallelism) of replicatedJob '
                f'"{r.name}" ({r.parallelism})'))
    return errs


def webhook_errors(f: JobSetFacts, rjobs_raw: Any,
                   gates: Mapping[str, bool] | None = None) -> list[FieldError]:
    """validateScheduling, in upstream's order. ``rjobs_raw`` is spec.replicatedJobs as sent
    (its Go rendering is part of one message)."""
    was, tree = _gates(gates)
    if f.scheduling is None:
        return []
    if not was:
        return [forbidden("spec.scheduling", "cannot be set when JobSetWorkloadAwareSchedulingAPI"
                                             " feature gate is disabled")]
    if not f.rjobs:
        return [invalid("spec.replicatedJobs", rjobs_raw, "must contain at least one "
                                                         "replicatedJob when scheduling is "
                                                         "configured")]
    errs: list[FieldError] = []
    for r in f.rjobs:
        jpath = f"spec.replicatedJobs[{r.index}].template.spec"
        if r.job_scheduling:
            errs.append(forbidden(f"{jpath}.scheduling", "cannot be set when spec.scheduling is "
                                                         "configured; use spec.scheduling instead"))
        if r.scheduling_group:
            errs.append(forbidden(f"{jpath}.template.spec.schedulingGroup",
                                  "cannot be set directly when spec.scheduling is configured; "
                                  "the JobSet controller manages this field"))
    s = read_scheduling(f.scheduling)
    if not s.top.any_set and s.entries:
        targeted = {t for e in s.entries for t in e.targets}
        for r in f.rjobs:
            if r.name not in targeted:
                errs.append(invalid(f"spec.replicatedJobs[{r.index}].name", r.name,
                                    "must be targeted by a replicatedJobs entry when "
                                    "spec.scheduling does not set a top-level schedulingPolicy, "
                                    "schedulingConstraints, or disruptionMode"))
    errs.extend(builder_errors(f, s, tree))
    if use_top_level(s) and not tree:
        total = sum(r.parallelism * r.replicas for r in f.rjobs)
        if total > _INT32_MAX:
            errs.append(invalid("spec.replicatedJobs", total,
                                f"the total represented pod count across all replicatedJobs "
                                f"must not exceed {_INT32_MAX} when top-level gang scheduling "
                                "is used"))
        if len(f.rjobs) > 1:
            expected = f.rjobs[0].priority_class
            for r in f.rjobs[1:]:
                if r.priority_class != expected:
                    errs.append(invalid(
                        f"spec.replicatedJobs[{r.index}].template.spec.template.spec."
                        "priorityClassName", r.priority_class,
                        f"must match {_go(expected)} when top-level gang scheduling is used"))
    targeted_once: set[str] = set()
    for e in s.entries:
        tpath = f"{e.path}.targetReplicatedJobs"
        valid: list[tuple[int, str]] = []
        for j, name in enumerate(e.targets):
            if f.rjob(name) is None:
                errs.append(invalid(f"{tpath}[{j}]", name,
                                    "does not reference a valid replicatedJob name"))
            elif name in targeted_once:
                errs.append(invalid(f"{tpath}[{j}]", name,
                                    "is targeted by more than one replicatedJobs entry"))
            else:
                targeted_once.add(name)
                valid.append((j, name))
        if not valid:
            continue
        if e.job is not None:
            if len(e.targets) != 1:
                errs.append(invalid(tpath, list(e.targets), JOB_ONE_TARGET))
            if e.composite.any_set and not tree:
                errs.append(invalid(f"{e.path}.job", True,
                                    "cannot be set together with schedulingPolicy, "
                                    "schedulingConstraints, or disruptionMode on the same "
                                    "replicatedJobs entry; job replaces the single shared "
                                    "PodGroup those fields configure with one PodGroup per Job"))
            continue
        if len(valid) > 1 and not tree:
            expected = f.rjob(valid[0][1]).priority_class  # type: ignore[union-attr]
            for j, name in valid[1:]:
                actual = f.rjob(name).priority_class  # type: ignore[union-attr]
                if actual != expected:
                    errs.append(invalid(f"{tpath}[{j}]", name,
                                        f"priorityClassName {_go(actual)} must match "
                                        f"{_go(expected)} of the other ReplicatedJobs sharing "
                                        "this PodGroup"))
    errs.extend(min_count_errors(f, s))
    return errs


__all__ = ["BASIC_WITH_ALL", "JOB_EXCLUSIVE", "JOB_ONE_TARGET", "MIN_GROUP_COUNT", "ONE_POLICY",
           "SEQUENCED", "TOP_WITH_ENTRIES", "builder_errors", "cel_errors", "forbidden",
           "invalid", "min_count_errors", "scheduling_cel_errors", "sequenced_startup",
           "too_many", "webhook_errors"]
