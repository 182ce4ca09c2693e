"""Compile ``spec.scheduling`` into gangs, as upstream's workload builder does
(jobset pkg/controllers/workload_builder.go@4f0cbded, names from scheduling.go@51c2c13c).

Flat (JobSetWorkloadAwareSchedulingAPI): one WorkloadItem, compiled to one PodGroupTemplate
and one PodGroup, per
- the whole JobSet, when there are no ``replicatedJobs`` entries (top-level mode: its policy,
  nil, ``basic`` or ``gang``, makes one PodGroup; Gang's minCount is Σ parallelism × replicas);
- each entry (its targets share one PodGroup, minCount the sum of their pods), or, when the
  entry sets ``job``, each Job of its one target (minCount the Job's parallelism, or the
  user's ``job.schedulingPolicy.gang.minCount``);
- each ReplicatedJob no entry targets (only reachable past admission: its own pods).
Composite policies carry no pod minCount: only the variant (gang or basic) is kept and the
minCount is derived from the represented pods on every pass, so ElasticJobSet scaling patches
it in place. An unset block of an entry or Job falls back to the top level's, block by block.

Tree (JobSetGangOfGangs, this project's reading of KEP-969 "Alpha 2", docs/gang.md): the top
level is the root CompositePodGroup, each entry (or untargeted ReplicatedJob) a
CompositePodGroup under it, and every Job a leaf PodGroup; see ``build_tree``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from decider.core.gang import names
from decider.core.gang.jobset_facts import JobSetFacts, RJob
from decider.core.gang.model import CompositeGroup, Group
from decider.core.gang.was_spec import (
    BASIC,
    GANG,
    Composite,
    Entry,
    Leaf,
    Scheduling,
    use_top_level,
)

_INT32_MAX = 2**31 - 1


class DuplicateName(Exception):
    """Two inputs produced one generated template name (upstream's
    duplicateSchedulingGroupNameError, in its words)."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(
            f'generated scheduling group name "{name}" is not unique: rename the colliding '
            "ReplicatedJob or replicatedJobs targetReplicatedJobs grouping so generated "
            "PodGroupTemplate names don't collide"
        )


@dataclass
class Blocks:
    """One item's leaf blocks after fallback: what its PodGroupTemplate carries."""

    policy: str | None  # BASIC | GANG; None: the member count of a union was not 1
    min_count: int | None = None  # the user's quorum (job only); None: derived
    constraints_set: bool = False
    topology: list[dict[str, object]] = field(default_factory=list)
    disruption: str | None = None
    claims: list[dict[str, object]] = field(default_factory=list)


@dataclass
class Item:
    """A WorkloadItem: the source of one PodGroupTemplate (and, flat, of one PodGroup)."""

    template: str
    kind: str  # "JobSet" | "ReplicatedJobGroup" | "Job" | "ReplicatedJob"
    blocks: Blocks
    derived_min: int  # the represented pods, when the gang's minCount is left to us
    members: list[str]
    rjobs: list[str]
    pods: int
    priority_class: str
    path: str  # where its blocks were written, for validation messages


def _saturating_sum(values: list[int]) -> int:
    return min(_INT32_MAX, sum(values))


def _from_composite(c: Composite) -> Blocks:
    """mapCompositePolicyInput & co.: the variant only (minGroupCount is not a pod count)."""
    return Blocks(policy=c.policy if c.policy_set else None,
                  constraints_set=c.constraints_set, topology=list(c.topology),
                  disruption=c.disruption if c.disruption_set else None)


def _resolve(own: Blocks, own_policy_set: bool, fallback: Composite | None) -> Blocks:
    """Each block falls back on its own to the top level's (globalSchedulingInput); a policy
    still unset is the builder's default, Gang."""
    out = Blocks(policy=own.policy, min_count=own.min_count, constraints_set=own.constraints_set,
                 topology=own.topology, disruption=own.disruption, claims=own.claims)
    if not own_policy_set:
        out.policy = GANG
        if fallback is not None and fallback.policy_set:
            out.policy = fallback.policy
    if not own.constraints_set and fallback is not None and fallback.constraints_set:
        out.constraints_set, out.topology = True, list(fallback.topology)
    if own.disruption is None and fallback is not None and fallback.disruption_set:
        out.disruption = fallback.disruption
    return out


def _leaf_blocks(job: Leaf) -> tuple[Blocks, bool]:
    return (Blocks(policy=job.policy if job.policy_set else None, min_count=job.min_count,
                   constraints_set=job.constraints_set, topology=list(job.topology),
                   disruption=job.disruption if job.disruption_set else None,
                   claims=list(job.claims)), job.policy_set)


def members_of(f: JobSetFacts, entry: Entry) -> list[RJob]:
    """The ReplicatedJobs an entry targets that exist (an unknown name is admission's error)."""
    out = []
    for name in entry.targets:
        r = f.rjob(name)
        if r is not None:
            out.append(r)
    return out


def _top_item(f: JobSetFacts, s: Scheduling) -> Item:
    blocks = _resolve(_from_composite(s.top), s.top.policy_set, None)
    pods = _saturating_sum([r.pods for r in f.rjobs])
    return Item(names.jobset_top_level_template(f.namespace, f.name), "JobSet", blocks, pods,
                [j for r in f.rjobs for j in r.child_jobs(f.name)], [r.name for r in f.rjobs],
                pods, f.rjobs[0].priority_class if f.rjobs else "", "spec.scheduling")


def _group_item(f: JobSetFacts, s: Scheduling, entry: Entry, members: list[RJob]) -> Item:
    own = _from_composite(entry.composite)
    blocks = _resolve(own, entry.composite.policy_set, s.top)
    pods = _saturating_sum([r.pods for r in members])
    return Item(names.jobset_group_template(f.namespace, f.name, entry.targets),
                "ReplicatedJobGroup", blocks, pods,
                [j for r in members for j in r.child_jobs(f.name)], [r.name for r in members],
                pods, members[0].priority_class, entry.path)


def _job_items(f: JobSetFacts, s: Scheduling, entry: Entry, r: RJob) -> list[Item]:
    assert entry.job is not None
    own, policy_set = _leaf_blocks(entry.job)
    blocks = _resolve(own, policy_set, s.top)
    return [Item(names.jobset_job_template(f.namespace, f.name, r.name, idx), "Job", blocks,
                 r.parallelism, [child], [r.name], r.parallelism, r.priority_class,
                 f"{entry.path}.job")
            for idx, child in enumerate(r.child_jobs(f.name))]


def _rjob_item(f: JobSetFacts, s: Scheduling, r: RJob) -> Item:
    blocks = _resolve(Blocks(policy=None), False, s.top)
    return Item(names.jobset_rjob_template(f.namespace, f.name, r.name), "ReplicatedJob",
                blocks, r.pods, r.child_jobs(f.name), [r.name], r.pods, r.priority_class,
                "spec.scheduling")


def items(f: JobSetFacts, s: Scheduling) -> list[Item]:
    """newBuildersForJobSet: the WorkloadItems, in upstream's order. Raises DuplicateName."""
    if use_top_level(s):
        return [_top_item(f, s)]
    out: list[Item] = []
    seen: set[str] = set()

    def add(item: Item) -> None:
        if item.template in seen:
            raise DuplicateName(item.template)
        seen.add(item.template)
        out.append(item)

    grouped: set[str] = set()
    for entry in s.entries:
        members = members_of(f, entry)
        grouped.update(r.name for r in members)
        if not members:
            continue
        if entry.job is not None:
            for item in _job_items(f, s, entry, members[0]):
                add(item)
            continue
        add(_group_item(f, s, entry, members))
    for r in f.rjobs:
        if r.name not in grouped:
            add(_rjob_item(f, s, r))
    return out


def podgroup_name(f: JobSetFacts, s: Scheduling, template: str) -> str:
    """schedulingPodGroupName: the template's own name in top-level mode (without sequenced
    startup), ``<jobset>-<template>`` (hashed past 63 characters) otherwise."""
    if use_top_level(s) and not f.sequenced:
        return template
    return names.jobset_podgroup_name(f.name, template)


def to_group(item: Item, podgroup: str) -> Group:
    b = item.blocks
    gang = b.policy == GANG
    return Group(
        template=item.template,
        podgroup=podgroup,
        min_count=(b.min_count if b.min_count is not None else item.derived_min) if gang
        else None,
        pods=item.pods,
        members=list(item.members),
        rjobs=list(item.rjobs),
        topology=list(b.topology),
        disruption=b.disruption,
        claims=[dict(c) for c in b.claims],
        priority_class=item.priority_class,
        constraints_set=b.constraints_set,
    )


def build_flat(f: JobSetFacts, s: Scheduling) -> list[Group]:
    return [to_group(item, podgroup_name(f, s, item.template)) for item in items(f, s)]


# --- JobSetGangOfGangs ------------------------------------------------------------------------


@dataclass
class Node:
    """A second-level CompositePodGroup: one entry, or one ReplicatedJob no entry targets."""

    composite: Composite
    members: list[RJob]
    job: Leaf | None
    path: str


def tree_nodes(f: JobSetFacts, s: Scheduling) -> list[Node]:
    nodes: list[Node] = []
    grouped: set[str] = set()
    for entry in s.entries:
        members = members_of(f, entry)
        grouped.update(r.name for r in members)
        if members:
            nodes.append(Node(entry.composite, members, entry.job, entry.path))
    for r in f.rjobs:
        if r.name not in grouped:
            nodes.append(Node(Composite(), [r], None, "spec.scheduling"))
    return nodes


def _composite_policy(c: Composite, default: str) -> tuple[str | None, int | None]:
    if not c.policy_set:
        return default, None
    return c.policy, c.min_group_count if c.min_group_count_set else None


@dataclass
class Branch:
    """A second-level CompositePodGroup and what its leaves share: built once per entry, so
    that validation, which needs no per-Job leaf, never walks the Jobs."""

    node: Node
    composite: CompositeGroup
    policy: str | None  # the CompositePodGroup's variant, the default of its leaves
    leaf_templates: list[str]  # per member ReplicatedJob, in order


@dataclass
class Skeleton:
    """The tree without its leaf PodGroups: the root, then one Branch per Node."""

    root: CompositeGroup
    branches: list[Branch]

    @property
    def composites(self) -> list[CompositeGroup]:
        return [self.root, *(b.composite for b in self.branches)]

    def leaf_parents(self) -> list[str]:
        """The CompositePodGroups that have at least one leaf (one per Job of a member):
        the only parents ``tree_depth`` looks up."""
        return [b.composite.name for b in self.branches
                if any(r.replicas > 0 for r in b.node.members)]


def tree_skeleton(f: JobSetFacts, s: Scheduling) -> Skeleton:
    """The CompositePodGroup tree, root first, with each member's leaf template.

    - root: the JobSet (template and object named as the Workload), the top level's blocks;
      its policy defaults to gang, or to basic under sequenced startup, where a gang over Jobs
      created one after the other would never fill;
    - level 2: each entry (template ``<targets>-<hash>`` as upstream names a group), or each
      ReplicatedJob no entry targets (as a one-target group), with the entry's composite blocks
      (no fallback: the top level's apply to the root); policy gang by default;
    - leaf templates: one PodGroupTemplate per ReplicatedJob (``<rjob>-<hash>``), instantiated
      by ``build_tree`` once per Job.
    ``minGroupCount`` left unset is the number of children, as the building block says
    ("the controller should inject a context-specific sane default, e.g. the number of child
    groups"). Raises DuplicateName: every template name is claimed here, in the order
    upstream's builder claims them (a Job's PodGroup is named, not claimed), so the skeleton
    finds the same first duplicate as the whole tree, without building a leaf.
    """
    seen: set[str] = set()

    def claim(name: str) -> str:
        if name in seen:
            raise DuplicateName(name)
        seen.add(name)
        return name

    root_template = claim(names.jobset_top_level_template(f.namespace, f.name))
    nodes = tree_nodes(f, s)
    default = BASIC if f.sequenced else GANG
    policy, explicit = _composite_policy(s.top, default)
    root = CompositeGroup(
        template=root_template, name=root_template,
        min_group_count=(explicit or len(nodes)) if policy == GANG else None,
        children=len(nodes), rjobs=[r.name for r in f.rjobs], topology=list(s.top.topology),
        constraints_set=s.top.constraints_set,
        disruption=s.top.disruption if s.top.disruption_set else None,
        priority_class=f.rjobs[0].priority_class if f.rjobs else "")
    branches: list[Branch] = []
    for node in nodes:
        targets = [r.name for r in node.members]
        template = claim(names.jobset_group_template(f.namespace, f.name, targets))
        jobs = sum(r.replicas for r in node.members)
        npolicy, nexplicit = _composite_policy(node.composite, GANG)
        composite = CompositeGroup(
            template=template, name=names.jobset_podgroup_name(f.name, template),
            min_group_count=(nexplicit or jobs) if npolicy == GANG else None, children=jobs,
            rjobs=targets, topology=list(node.composite.topology),
            constraints_set=node.composite.constraints_set,
            disruption=node.composite.disruption if node.composite.disruption_set else None,
            priority_class=node.members[0].priority_class, parent=root.name,
            parent_template=root.template)
        leaves = [claim(names.jobset_rjob_template(f.namespace, f.name, r.name))
                  for r in node.members]
        branches.append(Branch(node, composite, npolicy, leaves))
    return Skeleton(root, branches)


def build_tree(f: JobSetFacts, s: Scheduling) -> tuple[list[CompositeGroup], list[Group]]:
    """The CompositePodGroup tree (``tree_skeleton``), root first, and its leaf PodGroups, one
    per Job, ``<jobset>-<rjob>-<index>-<hash>``. A leaf's blocks come from the entry's ``job``;
    an unset policy takes the variant of its CompositePodGroup (a gang of Jobs is a gang of
    gangs of their pods), minCount the Job's parallelism. Raises DuplicateName."""
    tree = tree_skeleton(f, s)
    groups: list[Group] = []
    for branch in tree.branches:
        node, composite = branch.node, branch.composite
        for r, leaf_template in zip(node.members, branch.leaf_templates, strict=True):
            blocks = Blocks(policy=branch.policy if branch.policy in (GANG, BASIC) else GANG)
            if node.job is not None:
                own, policy_set = _leaf_blocks(node.job)
                if policy_set:
                    blocks.policy, blocks.min_count = own.policy, own.min_count
                blocks.constraints_set, blocks.topology = own.constraints_set, own.topology
                blocks.disruption, blocks.claims = own.disruption, own.claims
            for idx, child in enumerate(r.child_jobs(f.name)):
                item = Item(leaf_template, "ReplicatedJob", blocks, r.parallelism, [child],
                            [r.name], r.parallelism, r.priority_class, node.path)
                instance = names.jobset_podgroup_name(
                    f.name, names.jobset_job_template(f.namespace, f.name, r.name, idx))
                group = to_group(item, instance)
                group.parent, group.parent_template = composite.name, composite.template
                groups.append(group)
    return tree.composites, groups


def tree_depth(composites: list[CompositeGroup], leaf_parents: Iterable[str | None]) -> int:
    """Levels from the root to the deepest leaf (a leaf PodGroup counts as one), given the
    parent of each leaf; leaves of one parent are as deep as each other, so one of each
    (``Skeleton.leaf_parents``) gives the depth of the whole tree."""
    by_name = {c.name: c for c in composites}

    def depth(parent: str | None) -> int:
        d = 0
        while parent is not None:
            d += 1
            node = by_name.get(parent)
            parent = node.parent if node else None
        return d

    return max([depth(parent) + 1 for parent in leaf_parents] or [1])


__all__ = ["Blocks", "Branch", "DuplicateName", "Item", "Node", "Skeleton", "build_flat",
           "build_tree", "items", "members_of", "podgroup_name", "tree_depth", "tree_nodes",
           "tree_skeleton"]
