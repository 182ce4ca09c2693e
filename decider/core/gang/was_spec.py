"""``spec.scheduling`` of a JobSet as upstream's newest API has it (jobset types@51c2c13c).

The top level and each ``replicatedJobs`` entry embed the *composite* building blocks of
``scheduling.k8s.io/v1alpha3`` (``WorkloadCompositePodGroup*``: a policy ``basic{}`` |
``gang{minGroupCount?}``, ``topology[<=1]{key}``, a disruption mode ``single{}`` | ``all{}``);
``replicatedJobs[].job`` embeds the *leaf* blocks (``WorkloadPodGroup*``: ``gang.minCount?``,
constraints, disruption mode, ``resourceClaims[<=4]``).

Reading keeps what the Go decoder keeps: a pointer that is present (even ``{}``) is "set", so
``schedulingConstraints: {}`` counts as a top-level field exactly as upstream's ``!= nil`` does.
Only JSON type errors raise (``InvalidInput``): the rules are admission's (admission/scheduling)
and the builder's (was_builder), which report them all together.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from decider.core import access as acc
from decider.core.errors import InvalidInput

BASIC, GANG = "basic", "gang"
SINGLE, ALL = "single", "all"


def _variant(obj: Any, keys: tuple[str, str], path: str) -> tuple[str | None, int]:
    """The one member of a two-member union that is set, and how many are (0, 1 or 2)."""
    if obj is None:
        return None, 0
    obj = acc.as_map(obj, path)
    present = [k for k in keys if obj.get(k) is not None]
    for k in present:
        acc.as_map(obj[k], f"{path}.{k}")
    return (present[0] if len(present) == 1 else None), len(present)


def _topology(obj: dict[str, Any], path: str) -> tuple[bool, list[dict[str, Any]]]:
    raw = obj.get("schedulingConstraints")
    if raw is None:
        return False, []
    cpath = f"{path}.schedulingConstraints"
    cons = acc.as_map(raw, cpath)
    out = []
    for i, item in enumerate(acc.items(cons, "topology", cpath)):
        ipath = f"{cpath}.topology[{i}]"
        out.append({"key": acc.string(acc.as_map(item, ipath), "key", ipath)})
    return True, out


@dataclass
class Blocks:
    """What the composite and the leaf levels share: a policy union, constraints and a
    disruption-mode union, each "set" when present (a Go pointer that is not nil)."""

    policy_set: bool = False
    policy: str | None = None  # BASIC | GANG | None (unset, or not exactly one member)
    policy_members: int = 0
    constraints_set: bool = False
    topology: list[dict[str, Any]] = field(default_factory=list)
    disruption_set: bool = False
    disruption: str | None = None
    disruption_members: int = 0


def _read_policy(obj: dict[str, Any], path: str,
                 out: Blocks) -> tuple[dict[str, Any], str] | None:
    """The policy union; returns its ``gang`` member and that member's path, whose count each
    level reads under its own name before the other blocks (the order errors are found in)."""
    raw = obj.get("schedulingPolicy")
    if raw is None:
        return None
    out.policy_set = True
    ppath = f"{path}.schedulingPolicy"
    out.policy, out.policy_members = _variant(raw, (BASIC, GANG), ppath)
    gang = acc.as_map(raw, ppath).get(GANG)
    if gang is None:
        return None
    gpath = f"{ppath}.gang"
    return acc.as_map(gang, gpath), gpath


def _read_rest(obj: dict[str, Any], path: str, out: Blocks) -> None:
    """The constraints and the disruption-mode union."""
    out.constraints_set, out.topology = _topology(obj, path)
    raw = obj.get("disruptionMode")
    if raw is not None:
        out.disruption_set = True
        out.disruption, out.disruption_members = _variant(raw, (SINGLE, ALL),
                                                          f"{path}.disruptionMode")


@dataclass
class Composite(Blocks):
    """The composite blocks of the top level or of one ``replicatedJobs`` entry."""

    min_group_count_set: bool = False
    min_group_count: int | None = None

    @property
    def any_set(self) -> bool:
        """Upstream's ``usesTopLevelAPI``: any of the three pointers non-nil."""
        return self.policy_set or self.constraints_set or self.disruption_set


def read_composite(obj: dict[str, Any], path: str) -> Composite:
    out = Composite()
    gang_at = _read_policy(obj, path, out)
    if gang_at is not None and gang_at[0].get("minGroupCount") is not None:
        out.min_group_count_set = True
        out.min_group_count = acc.integer(gang_at[0], "minGroupCount", gang_at[1],
                                          minimum=-(2**31))
    _read_rest(obj, path, out)
    return out


@dataclass
class Leaf(Blocks):
    """The leaf blocks of ``replicatedJobs[].job`` (``JobScheduling``)."""

    min_count: int | None = None  # the user's quorum; None: derived (the Job's parallelism)
    claims: list[dict[str, Any]] = field(default_factory=list)


def read_leaf(obj: dict[str, Any], path: str) -> Leaf:
    out = Leaf()
    gang_at = _read_policy(obj, path, out)
    if gang_at is not None:
        out.min_count = acc.integer(gang_at[0], "minCount", gang_at[1], minimum=-(2**31))
    _read_rest(obj, path, out)
    for i, claim in enumerate(acc.items(obj, "resourceClaims", path)):
        cpath = f"{path}.resourceClaims[{i}]"
        claim = acc.as_map(claim, cpath)
        entry: dict[str, Any] = {"name": acc.string(claim, "name", cpath)}
        for key in ("resourceClaimName", "resourceClaimTemplateName"):
            if claim.get(key) is not None:
                entry[key] = acc.string(claim, key, cpath)
        out.claims.append(entry)
    return out


@dataclass
class Entry:
    """One ``replicatedJobs`` entry (``ReplicatedJobScheduling``)."""

    index: int
    targets: list[str]  # as written: validation names the ones that are not ReplicatedJobs
    composite: Composite
    job: Leaf | None

    @property
    def path(self) -> str:
        return f"spec.scheduling.replicatedJobs[{self.index}]"


@dataclass
class Scheduling:
    top: Composite
    entries: list[Entry]


def read_scheduling(raw: Any, path: str = "spec.scheduling") -> Scheduling:
    obj = acc.as_map(raw, path)
    entries = []
    for i, item in enumerate(acc.items(obj, "replicatedJobs", path)):
        epath = f"{path}.replicatedJobs[{i}]"
        item = acc.as_map(item, epath)
        targets = [acc.as_str(t, f"{epath}.targetReplicatedJobs[{j}]")
                   for j, t in enumerate(acc.items(item, "targetReplicatedJobs", epath))]
        job = item.get("job")
        entries.append(Entry(
            index=i,
            targets=list(targets),
            composite=read_composite(item, epath),
            job=None if job is None else read_leaf(acc.as_map(job, f"{epath}.job"),
                                                    f"{epath}.job"),
        ))
    return Scheduling(top=read_composite(obj, path), entries=entries)


def use_top_level(s: Scheduling) -> bool:
    """Upstream's ``UseTopLevelGang``: no entries, and a top-level policy that is unset (the
    default Gang), Basic or Gang. An explicit top-level Basic makes one Basic PodGroup too."""
    if s.entries:
        return False
    return not s.top.policy_set or s.top.policy_members >= 1


__all__ = ["ALL", "BASIC", "GANG", "SINGLE", "Composite", "Entry", "InvalidInput", "Leaf",
           "Scheduling", "read_scheduling", "use_top_level"]
