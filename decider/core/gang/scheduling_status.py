"""What the scheduler says about a JobSet's groups, read back from observed objects.

kube-scheduler writes conditions on the groups it places (scheduling/v1alpha3 and v1beta1 at
kubernetes/api 10b39a39):

* CompositePodGroup: ``CompositePodGroupInitiallyScheduled`` (terminal once True). Reasons
  ``Unschedulable`` and ``SchedulerError`` come with False; ``Invalid`` is set with True when
  the scheduler finds the layout invalid at run time (a cycle, a tree deeper than 4, children
  of more than one Workload), its message naming the violation; ``DisruptionTarget`` with
  ``PreemptionByScheduler``.
* PodGroup: ``PodGroupInitiallyScheduled`` (``Unschedulable``, ``SchedulerError``) and the same
  ``DisruptionTarget``.

Each becomes one sentence of the plan's explanation, and a CompositePodGroup's lands on its
``CompositeGroup`` so PodSets can hand it to a scheduler too.
"""

from __future__ import annotations

from typing import Any

from decider.core.gang.jobset_objects import meta
from decider.core.gang.model import Design
from decider.core.gang.targets import GangTarget

CPG_SCHEDULED = "CompositePodGroupInitiallyScheduled"
PG_SCHEDULED = "PodGroupInitiallyScheduled"
DISRUPTION_TARGET = "DisruptionTarget"
REASON_INVALID = "Invalid"


def _conditions(obj: dict[str, Any]) -> list[dict[str, Any]]:
    # Typed at the contract's edge (clients/python/decider_api/observed_shape.py): a list of
    # objects, or absent.
    return (obj.get("status") or {}).get("conditions") or []


def _tail(cond: dict[str, Any]) -> str:
    message = cond.get("message")
    return f": {message}" if message else ""


def sentence(kind: str, name: str, cond: dict[str, Any]) -> str | None:
    ctype, status, reason = cond.get("type"), cond.get("status"), cond.get("reason")
    if ctype in (CPG_SCHEDULED, PG_SCHEDULED):
        if status == "True" and reason == REASON_INVALID:
            return (f"{kind} {name}: the scheduler found its group layout invalid and will not "
                    f"place it ({ctype}=True, reason Invalid){_tail(cond)}; the JobSet's "
                    "scheduling objects must be fixed, not waited for")
        if status == "True":
            return f"{kind} {name} has been scheduled ({ctype}=True)"
        if status == "False" and reason == "SchedulerError":
            return f"{kind} {name} hit a scheduler error ({ctype}=False){_tail(cond)}"
        if status == "False":
            return f"{kind} {name} cannot be placed yet ({ctype}=False, reason " \
                   f"{reason or 'Unschedulable'}){_tail(cond)}"
    if ctype == DISRUPTION_TARGET and status == "True":
        return f"{kind} {name} is being disrupted ({reason or 'DisruptionTarget'}){_tail(cond)}"
    return None


def explain(found: list[dict[str, Any]], design: Design, target: GangTarget) -> list[str]:
    """Sentences for the observed status of the design's own CompositePodGroups and
    PodGroups (objects of other names or owners say nothing about this JobSet)."""
    uid = design.owner.get("uid")
    composites = {c.name: c for c in design.composites}
    podgroups = {g.podgroup for g in design.groups}
    out = []
    for obj in found:
        name = meta(obj).get("name")
        owners = meta(obj).get("ownerReferences") or []
        if not any(r.get("controller") is True and r.get("uid") == uid for r in owners):
            continue
        if target.is_composite(obj) and name in composites:
            kind = "CompositePodGroup"
        elif target.is_podgroup(obj) and name in podgroups:
            kind = "PodGroup"
        else:
            continue
        for cond in _conditions(obj):
            said = sentence(kind, str(name), cond)
            if said is None:
                continue
            out.append(said)
            if kind == "CompositePodGroup" and cond.get("type") == CPG_SCHEDULED:
                composites[str(name)].explanation = said
    return out


__all__ = ["CPG_SCHEDULED", "PG_SCHEDULED", "REASON_INVALID", "explain", "sentence"]
