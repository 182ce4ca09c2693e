"""A JobSet's scheduling objects against what exists: create, patch minCount in place, delete
on suspend, finish or drift, wait for what is still terminating, refuse what is not ours.

Two ways of judging drift, one per source of the design (``DriftJudge``):

* ``ProjectDrift`` (this project's annotations): only the fields the decider writes are
  compared, whatever a server or webhook adds is ignored;
* ``UpstreamDrift`` (``spec.scheduling``, jobset scheduling.go@51c2c13c): upstream's
  normalization list. A Workload template drifts on anything but ``gang.minCount``, except a
  ``schedulingConstraints`` or ``resourceClaims`` the server dropped (their gates off); a
  PodGroup also ignores what the server fills where the controller left it unset:
  ``priority``, ``preemptionPolicy``, ``disruptionMode`` and an empty ``priorityClassName``.
  Lists compare as Kubernetes' semantic equality does: empty and absent are the same.

What is "ours" also follows the source: upstream deletes the PodGroups labelled
``jobset.sigs.k8s.io/jobset-name`` that the JobSet controls, and the Workload of its name it
controls; this project deletes every gang object the JobSet controls.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Protocol

from decider.core.errors import FieldError
from decider.core.gang.jobset_facts import JOBSET_NAME_LABEL, JobSetFacts
from decider.core.gang.model import GangPlan, OwnershipConflict, Rendered
from decider.core.gang.targets import GangTarget

# Observed objects reach the core through one check of their metadata's types
# (clients/python/decider_api/observed_shape.py): what is read here is an object, a string,
# a list of objects, or absent.

def meta(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or {}


def controller_uid(obj: dict[str, Any]) -> str | None:
    for ref in meta(obj).get("ownerReferences") or []:
        if ref.get("controller") is True:
            return ref.get("uid") or ""
    return None


def ref(obj: dict[str, Any]) -> dict[str, Any]:
    m = meta(obj)
    return {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"), "name": m.get("name"),
            "uid": m.get("uid", "")}


def terminating(obj: dict[str, Any]) -> bool:
    """Already being deleted: a protection finalizer keeps it until no pod uses the group."""
    return bool(meta(obj).get("deletionTimestamp"))


# --- drift -------------------------------------------------------------------------------------

def _drifted(current: Any, desired: Any) -> bool:
    """Whether ``current`` differs from ``desired`` in a field the decider sets.

    Only the fields of ``desired`` are compared. Whatever else the existing object carries was
    put there by the server or someone else and is never ours to undo: the Priority admission
    plugin (``priority``, a global default ``priorityClassName``, ``preemptionPolicy``), API
    defaults (``disruptionMode``), Volcano's webhook (``queue: default``), scheduler-plugins
    (``scheduleTimeoutSeconds``, ``minResources``), and whatever a newer server or another
    webhook adds. ``minCount``/``minMember`` are patched in place instead. An explicit ``null``
    in ``desired`` is a value the decider sets: the existing field must be absent or null.
    """
    if isinstance(desired, dict):
        if not isinstance(current, dict):
            return True
        for key, want in desired.items():
            if key in ("minCount", "minMember"):
                continue
            have = current.get(key)
            if want is None:
                if have is not None:
                    return True
            elif _drifted(have, want):
                return True
        return False
    if isinstance(desired, list):
        if not isinstance(current, list) or len(current) != len(desired):
            return True
        return any(_drifted(c, d) for c, d in zip(current, desired, strict=True))
    # A bool is not the number it equals in Python (True == 1); numbers compare by value.
    return isinstance(current, bool) != isinstance(desired, bool) or current != desired


def _canon(value: Any) -> Any:
    """apiequality.Semantic over decoded JSON: nulls and empty lists are absent (nil and empty
    slices compare equal); an empty object stays, a pointer to an empty struct is not nil."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            v = _canon(v)
            if v is None or v == []:
                continue
            out[k] = v
        return out
    if isinstance(value, list):
        return [_canon(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _without_min(policy: Any) -> Any:
    if isinstance(policy, dict) and isinstance(policy.get("gang"), dict):
        gang = dict(policy["gang"])
        gang.pop("minCount", None)
        return {**policy, "gang": gang}
    return policy


def _template_equal(existing: Any, desired: Any) -> bool:
    """podGroupTemplatesEqualIgnoringMinCount (and, for our trees, its composite analogue)."""
    if not isinstance(existing, dict) or not isinstance(desired, dict):
        return existing == desired
    e, d = dict(existing), dict(desired)
    e["schedulingPolicy"] = _without_min(e.get("schedulingPolicy"))
    d["schedulingPolicy"] = _without_min(d.get("schedulingPolicy"))
    if e.get("schedulingConstraints") is None:
        d.pop("schedulingConstraints", None)
        e.pop("schedulingConstraints", None)
    if not e.get("resourceClaims"):
        d.pop("resourceClaims", None)
    for key in ("podGroupTemplates", "compositePodGroupTemplates"):
        el, dl = e.pop(key, None) or [], d.pop(key, None) or []
        # A nested list the server holds as something else (no API server serves that, a
        # careless client may send it) differs from ours: drift, as a spec that is not an
        # object is (_workload_drifted), not a TypeError.
        if not isinstance(el, list) or len(el) != len(dl) or not all(
                _template_equal(x, y) for x, y in zip(el, dl, strict=True)):
            return False
    return _canon(e) == _canon(d)


def _workload_drifted(current: dict[str, Any], desired: dict[str, Any]) -> bool:
    """workloadNeedsRecreation: templates compared in order, by name, minCount aside."""
    cs, ds = current.get("spec"), desired["spec"]
    if not isinstance(cs, dict):
        return True
    for key in ("podGroupTemplates", "compositePodGroupTemplates"):
        have, want = cs.get(key) or [], ds.get(key) or []
        if not isinstance(have, list) or len(have) != len(want):
            return True
        for e, d in zip(have, want, strict=True):
            if not isinstance(e, dict) or e.get("name") != d.get("name"):
                return True
            if not _template_equal(e, d):
                return True
    return False


def _podgroup_drifted(current: dict[str, Any], desired: dict[str, Any]) -> bool:
    """podGroupSpecsEqualIgnoringMinCount: what the server decides is not drift."""
    e = dict(current.get("spec") or {}) if isinstance(current.get("spec"), dict) else None
    if e is None:
        return True
    d = dict(desired["spec"])
    e["schedulingPolicy"] = _without_min(e.get("schedulingPolicy"))
    d["schedulingPolicy"] = _without_min(d.get("schedulingPolicy"))
    for key in ("priority", "preemptionPolicy", "disruptionMode"):
        if d.get(key) is None:
            e.pop(key, None)
    if not d.get("priorityClassName"):
        e.pop("priorityClassName", None)
    if e.get("schedulingConstraints") is None:
        d.pop("schedulingConstraints", None)
    if not e.get("resourceClaims"):
        d.pop("resourceClaims", None)
    return _canon(e) != _canon(d)


class DriftJudge(Protocol):
    def drifted(self, kind: str, current: dict[str, Any], desired: dict[str, Any]) -> bool: ...

    def deletable(self, obj: dict[str, Any], f: JobSetFacts, workload: str) -> bool: ...


class ProjectDrift:
    """The annotations' objects: only the decider's own fields count."""

    def drifted(self, kind: str, current: dict[str, Any], desired: dict[str, Any]) -> bool:
        return _drifted(current.get("spec"), desired["spec"])

    def deletable(self, obj: dict[str, Any], f: JobSetFacts, workload: str) -> bool:
        return controller_uid(obj) == f.uid


class UpstreamDrift:
    """``spec.scheduling``'s objects: upstream's normalization list, upstream's deletion set."""

    def drifted(self, kind: str, current: dict[str, Any], desired: dict[str, Any]) -> bool:
        if kind == "Workload":
            return _workload_drifted(current, desired)
        return _podgroup_drifted(current, desired)

    def deletable(self, obj: dict[str, Any], f: JobSetFacts, workload: str) -> bool:
        if controller_uid(obj) != f.uid:
            return False
        if obj.get("kind") == "Workload":
            return meta(obj).get("name") == workload
        return (meta(obj).get("labels") or {}).get(JOBSET_NAME_LABEL) == f.name


# --- minCount in place --------------------------------------------------------------------------

def _gang_min(policy: Any) -> int | None:
    gang = policy.get("gang") if isinstance(policy, dict) else None
    mc = gang.get("minCount") if isinstance(gang, dict) else None
    return mc if isinstance(mc, int) and not isinstance(mc, bool) else None


def _template_mins(templates: Any, key: str = "schedulingPolicy") -> dict[str, int | None]:
    out: dict[str, int | None] = {}
    for t in templates if isinstance(templates, list) else []:
        if isinstance(t, dict) and isinstance(t.get("name"), str):
            out[t["name"]] = _gang_min(t.get(key))
            out.update(_template_mins(t.get("podGroupTemplates")))
            out.update(_template_mins(t.get("compositePodGroupTemplates")))
    return out


def min_counts(obj: dict[str, Any]) -> dict[str, int | None]:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return {}
    if "minMember" in spec:
        mm = spec.get("minMember")
        return {"": mm if isinstance(mm, int) and not isinstance(mm, bool) else None}
    if "schedulingPolicy" in spec:
        return {"": _gang_min(spec.get("schedulingPolicy"))}
    out = _template_mins(spec.get("podGroupTemplates"))
    out.update(_template_mins(spec.get("podGroups"), "policy"))
    out.update(_template_mins(spec.get("compositePodGroupTemplates")))
    return out


def _with_mins(templates: list[Any], mins: dict[str, int | None], key: str) -> list[Any]:
    out = []
    for t in templates:
        t = copy.deepcopy(t)
        if isinstance(t, dict):
            gang = (t.get(key) or {}).get("gang") if isinstance(t.get(key), dict) else None
            if isinstance(gang, dict) and mins.get(t.get("name")) is not None:
                gang["minCount"] = mins[t["name"]]
            for sub in ("podGroupTemplates", "compositePodGroupTemplates"):
                if isinstance(t.get(sub), list):
                    t[sub] = _with_mins(t[sub], mins, "schedulingPolicy")
        out.append(t)
    return out


def min_count_patch(current: dict[str, Any], desired: dict[str, Any]) -> dict[str, Any]:
    """A JSON merge patch that changes only gang minCounts. A merge patch replaces a list
    whole, so a Workload's template list is sent back as the server holds it, minCounts
    changed (upstream Updates the whole object for the same reason)."""
    spec = desired["spec"]
    if "minMember" in spec:
        return {"spec": {"minMember": spec["minMember"]}}
    if "schedulingPolicy" in spec:
        return {"spec": {"schedulingPolicy": copy.deepcopy(spec["schedulingPolicy"])}}
    mins = min_counts(desired)
    have = current.get("spec") if isinstance(current.get("spec"), dict) else {}
    out: dict[str, Any] = {}
    for key, pkey in (("podGroupTemplates", "schedulingPolicy"), ("podGroups", "policy"),
                      ("compositePodGroupTemplates", "schedulingPolicy")):
        if isinstance(have.get(key), list) and key in spec:
            out[key] = _with_mins(have[key], mins, pkey)
    return {"spec": out}


# --- reconcile ---------------------------------------------------------------------------------

@dataclass
class Conflict:
    """A same-named object someone else controls: upstream's reconcile error."""

    index: int
    kind: str
    name: str

    def error(self, f: JobSetFacts) -> OwnershipConflict:
        exc = OwnershipConflict(FieldError(
            f"existing[{self.index}].metadata.ownerReferences",
            f"{self.kind} {self.name} already exists and is not controlled by JobSet {f.name}; "
            "refusing to adopt it"))
        exc.upstream_message = (  # type: ignore[attr-defined]
            f"{self.kind.lower()} {f.namespace}/{self.name} already exists and is not "
            f"controlled by JobSet {f.namespace}/{f.name}")
        return exc


def reconcile(plan: GangPlan, f: JobSetFacts, rendered: Rendered, found: list[dict[str, Any]],
              renderer: GangTarget, judge: DriftJudge, workload_name: str) -> GangPlan:
    """Fill ``plan`` with what to do about ``rendered`` given ``found``.

    Suspended or finished: delete (PodGroups first, then CompositePodGroups leaves first, the
    Workload last), never twice. Otherwise, in creation order: create what is missing, refuse
    (OwnershipConflict) a same-named object not ours, wait for one of ours still terminating
    (nothing is created and no Job may run meanwhile), delete everything on drift (recreated
    on the next pass), and patch minCount in place. ``plan.ready`` says whether every object
    the JobSet needs exists, is live, and matches: upstream creates no Job before.
    """
    say = plan.explanation.append
    kinds = ("Workload", "CompositePodGroup", "PodGroup")
    owned = [o for o in found if o.get("kind") in kinds
             and (renderer.is_workload(o) or renderer.is_podgroup(o) or renderer.is_composite(o))
             and judge.deletable(o, f, workload_name)]
    # Leaves first: PodGroups, then CompositePodGroups deepest first, the Workload last.
    order = {"PodGroup": 0, "CompositePodGroup": 1, "Workload": 2}
    composite_depth = {c["metadata"]["name"]: i for i, c in enumerate(rendered.composites)}
    owned.sort(key=lambda o: (order.get(str(o.get("kind")), 3),
                              -composite_depth.get(meta(o).get("name"), 0)))
    live = [o for o in owned if not terminating(o)]
    going = len(owned) - len(live)
    if f.finished or f.suspended:
        plan.deletes = [ref(o) for o in live]
        why = "has finished" if f.finished else "is suspended"
        if live:
            say(f"JobSet {f.name} {why}: delete its {len(live)} scheduling object(s)")
        elif not going:
            say(f"JobSet {f.name} {why}: no scheduling objects are kept")
        if going:
            say(f"JobSet {f.name} {why}: {going} scheduling object(s) already being deleted "
                "are not deleted again")
        if f.suspended and not f.finished:
            say("they are recreated with the same names when the JobSet resumes")
        return plan
    by_key = {(o.get("apiVersion"), o.get("kind"), meta(o).get("name")): (i, o)
              for i, o in enumerate(found)}
    waiting: list[dict[str, Any]] = []
    ready = True
    for desired in rendered.objects:
        name = desired["metadata"]["name"]
        kind = desired["kind"]
        hit = by_key.get((desired["apiVersion"], kind, name))
        if hit is None:
            plan.objects.append(desired)
            say(f"create {kind} {name}")
            ready = False
            continue
        index, current = hit
        if controller_uid(current) != f.uid:
            plan.ready = False
            raise_with_partial(plan, Conflict(index, kind, name).error(f))
        if terminating(current):
            waiting.append(ref(current))
            say(f"{kind} {name} is still being deleted: wait until it is gone")
            ready = False
            continue
        if judge.drifted(kind, current, desired):
            plan.objects.clear()
            plan.updates.clear()
            plan.deletes = [ref(o) for o in live]
            plan.waiting = [ref(o) for o in owned if terminating(o)]
            plan.ready = False
            say(f"{kind} {name} differs from the JobSet in an immutable field: delete "
                "the scheduling objects; they are recreated on the next pass")
            return plan
        if min_counts(current) != min_counts(desired):
            plan.updates.append({**ref(current), "patchType": "merge",
                                 "patch": min_count_patch(current, desired)})
            say(f"{kind} {name}: update gang minCount in place")
        else:
            say(f"{kind} {name} exists and is controlled by the JobSet: kept")
    if waiting:
        # A PodGroup made now would name (and be owned by) the Workload that is going away, or
        # join a gang whose other half is: create none until the deletion wakes the JobSet.
        plan.waiting = waiting
        plan.objects.clear()
        say(f"JobSet {f.name}: {len(waiting)} scheduling object(s) still being deleted; "
            "nothing is created, and no Job is created or resumed, until they are gone")
    plan.ready = ready
    return plan


def raise_with_partial(plan: GangPlan, exc: OwnershipConflict) -> None:
    """Upstream stops at the object it cannot adopt; what it created before stands."""
    exc.partial = plan  # type: ignore[attr-defined]
    raise exc


__all__ = ["DriftJudge", "ProjectDrift", "UpstreamDrift", "controller_uid", "meta",
           "min_count_patch", "min_counts", "reconcile", "ref", "terminating"]
