"""The workload-aware scheduling building blocks shared by Job and JobSet ``spec.scheduling``.

Both embed the same four blocks (policy, constraints, disruption mode, resource claims); this
module parses them once, with the declarative limits the API server applies and the one
cross-field rule of ``workloadbuilder`` (Basic cannot be combined with ``disruptionMode.all``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from decider.core import access as acc
from decider.core.errors import FieldError

MAX_TOPOLOGY = 1
MAX_CLAIMS = 4


@dataclass
class Blocks:
    policy: str | None = None  # "gang" | "basic" | None (unset)
    # An explicit minCount; 0 in JobSet's API means "unset", so callers pass that through.
    min_count: int | None = None
    topology: list[dict[str, Any]] = field(default_factory=list)
    disruption: str | None = None
    claims: list[dict[str, Any]] = field(default_factory=list)

    @property
    def has_leaf_fields(self) -> bool:
        return bool(self.policy or self.topology or self.disruption or self.claims)


def _one_of(
    obj: dict[str, Any], keys: tuple[str, ...], path: str, errors: list[FieldError]
) -> str | None:
    present = [k for k in keys if obj.get(k) is not None]
    if len(present) > 1:
        errors.append(FieldError(path, f"may not set more than one of {', '.join(present)}"))
        return None
    if not present:
        errors.append(FieldError(path, f"must set exactly one of {', '.join(keys)}"))
        return None
    acc.as_map(obj[present[0]], f"{path}.{present[0]}")
    return present[0]


def parse_blocks(
    obj: dict[str, Any],
    path: str,
    errors: list[FieldError],
    *,
    zero_min_is_unset: bool = False,
    claims_allowed: bool = True,
) -> Blocks:
    """Read the four blocks of ``obj``; structural problems are appended to ``errors``.

    Type errors (a string where an object belongs) raise ``InvalidInput`` at once, because
    nothing sensible can be planned from them; rule violations are collected so a validator
    can report all of them together.
    """
    out = Blocks()
    policy = acc.child(obj, "schedulingPolicy", path)
    if "schedulingPolicy" in obj and obj["schedulingPolicy"] is not None:
        ppath = f"{path}.schedulingPolicy"
        out.policy = _one_of(policy, ("basic", "gang"), ppath, errors)
        if out.policy == "gang":
            gang = acc.child(policy, "gang", ppath)
            gpath = f"{ppath}.gang"
            minimum = 0 if zero_min_is_unset else 1
            mc = acc.integer(gang, "minCount", gpath, minimum=minimum)
            out.min_count = None if (mc == 0 and zero_min_is_unset) else mc
    cons = acc.child(obj, "schedulingConstraints", path)
    topo = acc.items(cons, "topology", f"{path}.schedulingConstraints")
    tpath = f"{path}.schedulingConstraints.topology"
    if len(topo) > MAX_TOPOLOGY:
        errors.append(FieldError(tpath, f"must have at most {MAX_TOPOLOGY} item"))
    for i, item in enumerate(topo):
        item = acc.as_map(item, f"{tpath}[{i}]")
        key = acc.string(item, "key", f"{tpath}[{i}]")
        if not key:
            errors.append(FieldError(f"{tpath}[{i}].key", "Required value"))
        out.topology.append({"key": key})
    if obj.get("disruptionMode") is not None:
        dm = acc.child(obj, "disruptionMode", path)
        out.disruption = _one_of(dm, ("single", "all"), f"{path}.disruptionMode", errors)
    claims = acc.items(obj, "resourceClaims", path)
    cpath = f"{path}.resourceClaims"
    if claims and not claims_allowed:
        errors.append(FieldError(cpath, "Forbidden: not supported at this level"))
    if len(claims) > MAX_CLAIMS:
        errors.append(FieldError(cpath, f"must have at most {MAX_CLAIMS} items"))
    seen: set[str] = set()
    for i, claim in enumerate(claims):
        ipath = f"{cpath}[{i}]"
        claim = acc.as_map(claim, ipath)
        name = acc.string(claim, "name", ipath)
        if not name:
            errors.append(FieldError(f"{ipath}.name", "Required value"))
        elif name in seen:
            errors.append(FieldError(f"{ipath}.name", f'Duplicate value: "{name}"'))
        seen.add(name)
        ref = acc.string(claim, "resourceClaimName", ipath)
        tmpl = acc.string(claim, "resourceClaimTemplateName", ipath)
        if bool(ref) == bool(tmpl):
            errors.append(
                FieldError(
                    ipath, "must set exactly one of resourceClaimName, resourceClaimTemplateName"
                )
            )
        entry: dict[str, Any] = {"name": name}
        if ref:
            entry["resourceClaimName"] = ref
        if tmpl:
            entry["resourceClaimTemplateName"] = tmpl
        out.claims.append(entry)
    return out


def check_basic_with_all(
    policy: str | None, disruption: str | None, path: str, errors: list[FieldError]
) -> None:
    if policy == "basic" and disruption == "all":
        errors.append(
            FieldError(
                f"{path}.disruptionMode",
                "the disruptionMode `all` is not supported with the Basic scheduling policy",
            )
        )
