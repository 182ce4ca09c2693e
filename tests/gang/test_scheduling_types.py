"""Every object the decider emits for spec.scheduling, held field for field to the Go types of
kubernetes/api v0.37 (tests/gang/scheduling_api_facts.py says which commit and files): no field
the type lacks, every required field, JSON types, int32 ranges, minimums and maximums, list
limits and map keys, formats, enums, one-of rules, a PodGroup's parent needing its workloadRef,
the tree no deeper than WorkloadMaxTreeDepth; and across objects: each PodGroup and
CompositePodGroup names a template of its Workload, at the place its parent's template holds it.

The objects come from PlanGang (`decider gang`) and Decide over a table of JobSets: the flat
shape (JobSetWorkloadAwareSchedulingAPI) and the CompositePodGroup tree (JobSetGangOfGangs),
each block of spec.scheduling at each level, and sequenced startup; a minCount patch is
checked on the object it produces. The CRD's building blocks are checked against the
v1alpha3 Workload* types they are made of.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest

from decider.core.decide import decide
from decider.core.gang import plan_gang
from decider.core.model import Observed, ObservedObject, Options
from support.builders import NOW, service
from tests.gang import scheduling_api_facts as facts
from tests.gang.gang_fixtures import jobset, rjob

ROOT = Path(__file__).resolve().parents[2]
WAS = {"JobSetWorkloadAwareSchedulingAPI": True}
TREE = {**WAS, "JobSetGangOfGangs": True}
INT32 = (-(2**31), 2**31 - 1)
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_QUALIFIED = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_FORMATS = {
    # k8s-short-name: a DNS-1123 label.
    "short-name": lambda s: len(s) <= 63 and bool(_LABEL.match(s)),
    # k8s-long-name: a DNS-1123 subdomain.
    "long-name": lambda s: len(s) <= 253 and all(_LABEL.match(p) for p in s.split(".")),
    # k8s-label-key: an optional DNS subdomain prefix and '/', then a qualified name.
    "label-key": lambda s: _label_key(s),
    # k8s-path-segment-name: not '.' or '..', no '/' or '%'.
    "path-segment": lambda s: s not in (".", "..") and "/" not in s and "%" not in s,
}


def _label_key(s: str) -> bool:
    prefix, _, name = s.rpartition("/")
    if prefix and not _FORMATS["long-name"](prefix):
        return False
    return 0 < len(name) <= 63 and bool(_QUALIFIED.match(name))


# --- the checker -------------------------------------------------------------------------------


def violations(obj: dict[str, Any]) -> list[str]:
    """What in one emitted object the Go types would not have."""
    key = (obj.get("apiVersion"), obj.get("kind"))
    types = facts.KINDS.get(key)  # type: ignore[arg-type]
    if types is None:
        return [f"{key}: not a kind of {facts.SOURCE}"]
    body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
    out: list[str] = []
    _struct(body, str(obj["kind"]), types, obj["kind"], out)
    return out


def _struct(value: Any, name: str, types: dict[str, facts.Struct], path: str,
            out: list[str]) -> None:
    if not isinstance(value, dict):
        out.append(f"{path}: {name} must be an object, got {value!r}")
        return
    st = types[name]
    for key in sorted(set(value) - set(st.fields)):
        out.append(f"{path}.{key}: {name} has no such field")
    for key, f in st.fields.items():
        v = value.get(key)
        if v is None:
            if key in value and not f.nullable:
                out.append(f"{path}.{key}: null, but the Go field is a value")
            if f.required:
                out.append(f"{path}.{key}: required")
            continue
        _field(v, f, types, f"{path}.{key}", out)
    set_members = lambda names: [n for n in names if value.get(n) is not None]  # noqa: E731
    if st.exactly_one and len(set_members(st.exactly_one)) != 1:
        out.append(f"{path}: exactly one of {', '.join(st.exactly_one)} must be set, "
                   f"got {set_members(st.exactly_one)}")
    if st.at_least_one and not set_members(st.at_least_one):
        out.append(f"{path}: at least one of {', '.join(st.at_least_one)} must be set")
    for key, needs in st.depends.items():
        if value.get(key) is not None and value.get(needs) is None:
            out.append(f"{path}: {key} needs {needs}")


def _field(v: Any, f: facts.F, types: dict[str, facts.Struct], path: str,
           out: list[str]) -> None:
    if f.type.startswith("[]"):
        if not isinstance(v, list):
            out.append(f"{path}: must be a list")
            return
        if f.max_items is not None and len(v) > f.max_items:
            out.append(f"{path}: {len(v)} items, at most {f.max_items}")
        if f.list_map_key:
            keys = [i.get(f.list_map_key) for i in v if isinstance(i, dict)]
            if len(keys) != len(set(keys)):
                out.append(f"{path}: duplicate {f.list_map_key} in a map list")
        item = facts.F(f.type[2:])
        for i, x in enumerate(v):
            _field(x, item, types, f"{path}[{i}]", out)
        return
    if f.type == "string":
        if not isinstance(v, str):
            out.append(f"{path}: must be a string")
            return
        if f.required and not v:
            out.append(f"{path}: required (empty)")
        if v and f.fmt and not _FORMATS[f.fmt](v):
            out.append(f"{path}: {v!r} is not a {f.fmt}")
        if f.enum and v not in facts.ENUMS[f.enum]:
            out.append(f"{path}: {v!r} is not one of {sorted(facts.ENUMS[f.enum])}")
    elif f.type == "int32":
        if not isinstance(v, int) or isinstance(v, bool) or not INT32[0] <= v <= INT32[1]:
            out.append(f"{path}: {v!r} is not an int32")
            return
        if f.minimum is not None and v < f.minimum:
            out.append(f"{path}: {v} below {f.minimum}")
        if f.maximum is not None and v > f.maximum:
            out.append(f"{path}: {v} above {f.maximum}")
    elif f.type == "bool":
        if not isinstance(v, bool):
            out.append(f"{path}: must be a bool")
    elif f.type == "map":
        if not isinstance(v, dict) or not all(isinstance(x, str) for x in v.values()):
            out.append(f"{path}: must be a map of strings")
    else:
        _struct(v, f.type, types, path, out)


def _depth(template: dict[str, Any]) -> int:
    """Levels of a (composite) template tree, a PodGroupTemplate counting one."""
    children = [*(template.get("compositePodGroupTemplates") or []),
                *(template.get("podGroupTemplates") or [])]
    return 1 + max((_depth(c) for c in children), default=0)


def tree_violations(objects: list[dict[str, Any]]) -> list[str]:
    """Across one JobSet's objects: depth, and every reference to a template or a parent."""
    out: list[str] = []
    workloads = [o for o in objects if o["kind"] == "Workload"]
    if len(workloads) != 1:
        return [f"{len(workloads)} Workloads"]
    wl = workloads[0]
    spec = wl["spec"]
    roots = spec.get("compositePodGroupTemplates") or []
    for root in roots:
        if _depth(root) > facts.WORKLOAD_MAX_TREE_DEPTH:
            out.append(f"template {root['name']}: deeper than {facts.WORKLOAD_MAX_TREE_DEPTH}")
    # template name -> (kind, parent template name or None)
    where: dict[str, tuple[str, str | None]] = {}

    def walk(t: dict[str, Any], kind: str, parent: str | None) -> None:
        where[t["name"]] = (kind, parent)
        for c in t.get("compositePodGroupTemplates") or []:
            walk(c, "composite", t["name"])
        for c in t.get("podGroupTemplates") or []:
            walk(c, "leaf", t["name"])

    for t in roots:
        walk(t, "composite", None)
    for t in spec.get("podGroupTemplates") or []:
        walk(t, "leaf", None)
    by_name = {o["metadata"]["name"]: o for o in objects if o["kind"] == "CompositePodGroup"}
    for o in objects:
        if o["kind"] == "Workload":
            continue
        name, s = o["metadata"]["name"], o["spec"]
        ref = s.get("workloadRef") or {}
        if ref.get("workloadName") != wl["metadata"]["name"]:
            out.append(f"{name}: workloadRef names {ref.get('workloadName')!r}")
            continue
        want = "composite" if o["kind"] == "CompositePodGroup" else "leaf"
        kind, parent_template = where.get(ref.get("templateName"), (None, None))
        if kind != want:
            out.append(f"{name}: template {ref.get('templateName')!r} is no {want} template")
            continue
        parent = s.get("parentCompositePodGroupName")
        if parent is None:
            if parent_template is not None:
                out.append(f"{name}: its template sits under {parent_template}, it has no parent")
            continue
        up = by_name.get(parent)
        if up is None:
            out.append(f"{name}: parent {parent!r} is not one of the JobSet's CompositePodGroups")
        elif up["spec"]["workloadRef"]["templateName"] != parent_template:
            out.append(f"{name}: parent {parent!r} is not of the template above its own")
    return out


# --- the objects -------------------------------------------------------------------------------


def entry(*targets: str, **fields: Any) -> dict[str, Any]:
    return {"targetReplicatedJobs": list(targets), **fields}


TOPO = {"topology": [{"key": "topology.kubernetes.io/rack"}]}
CLAIMS = [{"name": "gpus", "resourceClaimTemplateName": "gpu-template"},
          {"name": "shared", "resourceClaimName": "shared-claim"}]
TWO = (rjob("driver", 1, 1, priority="high"), rjob("workers", 3, 2, priority="high"))
SPECS: list[Any] = [
    pytest.param(TWO, {}, {}, id="default-gang"),
    pytest.param(TWO, {"schedulingPolicy": {"basic": {}}}, {}, id="top-level-basic"),
    pytest.param(TWO, {"schedulingPolicy": {"gang": {}}, "schedulingConstraints": TOPO,
                       "disruptionMode": {"all": {}}}, {}, id="top-level-every-block"),
    pytest.param(TWO, {"replicatedJobs": [
        entry("driver", schedulingPolicy={"basic": {}}),
        entry("workers", schedulingPolicy={"gang": {}}, schedulingConstraints=TOPO,
              disruptionMode={"single": {}})]}, {}, id="entries-with-blocks"),
    pytest.param(TWO, {"replicatedJobs": [entry("driver", "workers")]}, {},
                 id="one-entry-two-targets"),
    pytest.param(TWO, {"replicatedJobs": [entry("driver"),
        entry("workers", job={"schedulingPolicy": {"gang": {"minCount": 1}},
                              "schedulingConstraints": TOPO, "disruptionMode": {"all": {}},
                              "resourceClaims": CLAIMS})]}, {}, id="job-entry-every-block"),
    pytest.param(TWO, {"schedulingPolicy": {"gang": {}}, "replicatedJobs": [
        entry("workers", schedulingPolicy={"basic": {}},
              job={"schedulingPolicy": {"basic": {}}})]}, {"tree_only": True},
        id="tree-root-blocks-and-job-beside-entry-blocks"),
    pytest.param((rjob("driver", 1, 1), rjob("workers", 2, 2, depends_on="driver")),
                 {"replicatedJobs": [entry("driver"), entry("workers")]}, {},
                 id="sequenced-startup-per-entry"),
    pytest.param((rjob("a", 1, 1), rjob("b", 1, 1)),
                 {"replicatedJobs": [entry("a"), entry("b", job={})]},
                 {"in_order": True}, id="in-order-startup"),
    pytest.param(tuple(rjob(f"r{i}", 1, 1) for i in range(8)), {}, {},
                 id="eight-replicated-jobs"),
]


def _planned(rjobs: tuple[Any, ...], scheduling: dict[str, Any], kw: dict[str, Any],
             gates: dict[str, bool]) -> list[dict[str, Any]]:
    return plan_gang(jobset(*rjobs, scheduling=copy.deepcopy(scheduling), **kw),
                     gates=gates).objects


def _decided(rjobs: tuple[Any, ...], scheduling: dict[str, Any], kw: dict[str, Any],
             gates: dict[str, bool]) -> list[dict[str, Any]]:
    js = jobset(*rjobs, scheduling=copy.deepcopy(scheduling), **kw)
    plan = decide(Observed(jobset=js, now=NOW, objects=[service()],
                           options=Options(feature_gates=gates)))
    return [a.object for a in plan.actions
            if a.type in ("CreateWorkload", "CreatePodGroup", "CreateCompositePodGroup")
            and a.object is not None]


@pytest.mark.parametrize("gates", [pytest.param(WAS, id="flat"), pytest.param(TREE, id="tree")])
@pytest.mark.parametrize("source", [pytest.param(_planned, id="PlanGang"),
                                    pytest.param(_decided, id="Decide")])
@pytest.mark.parametrize(("rjobs", "scheduling", "kw"), SPECS)
def test_every_emitted_object_fits_the_go_types(rjobs: tuple[Any, ...],
                                                scheduling: dict[str, Any],
                                                kw: dict[str, Any], source: Any,
                                                gates: dict[str, bool]) -> None:
    if kw.get("tree_only") and gates is not TREE:
        pytest.skip("the flat shape refuses these blocks together (CRD rules)")
    objects = source(rjobs, scheduling, {k: v for k, v in kw.items() if k != "tree_only"},
                     gates)
    assert objects, "nothing emitted"
    kinds = {(o["apiVersion"], o["kind"]) for o in objects}
    if gates is TREE:
        assert (facts.V1ALPHA3, "CompositePodGroup") in kinds
    else:
        assert kinds == {(facts.V1BETA1, "Workload"), (facts.V1BETA1, "PodGroup")}
    problems = [p for o in objects for p in violations(o)] + tree_violations(objects)
    assert problems == []


def _served(objects: list[dict[str, Any]]) -> list[ObservedObject]:
    out = []
    for i, o in enumerate(objects):
        o = copy.deepcopy(o)
        o["metadata"]["uid"] = f"u{i}"
        ref = o["metadata"]["ownerReferences"][0]
        out.append(ObservedObject(api_version=o["apiVersion"], kind=o["kind"],
                                  name=o["metadata"]["name"], uid=f"u{i}",
                                  controller_uid=ref["uid"], obj=o))
    return out


def _merge(target: Any, patch: Any) -> Any:
    """RFC 7386, as the API server applies a JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = _merge(out.get(k), v)
    return out


@pytest.mark.parametrize("gates", [pytest.param(WAS, id="flat"), pytest.param(TREE, id="tree")])
def test_a_patched_min_count_leaves_objects_that_fit(gates: dict[str, bool]) -> None:
    """Scaled under ElasticJobSet: the patches, applied as the API server would, still fit."""
    rjobs = (rjob("driver", 1, 1), rjob("workers", 3, 2))
    scheduling = {"replicatedJobs": [entry("driver"),
                                     entry("workers", job={"schedulingPolicy": {"gang": {}}})]}
    made = _served(_decided(rjobs, scheduling, {}, gates))
    scaled = jobset(rjob("driver", 1, 1), rjob("workers", 3, 3), scheduling=scheduling)
    plan = decide(Observed(jobset=scaled, now=NOW, objects=[service(), *made],
                           options=Options(feature_gates={**gates, "ElasticJobSet": True})))
    # By kind too: the root CompositePodGroup is named as the Workload.
    patches = {(a.kind, a.name): a.patch for a in plan.actions if a.type.startswith("Patch")
               and a.kind in ("Workload", "PodGroup", "CompositePodGroup")}
    assert patches
    after = [_merge(o.obj, patches[(o.kind, o.name)]) if (o.kind, o.name) in patches else o.obj
             for o in made]
    for o in after:
        o["metadata"].pop("uid")  # the server's, not the decider's
    problems = [p for o in after for p in violations(o)] + tree_violations(after)
    assert problems == []


# --- the checker itself ------------------------------------------------------------------------

_PG = {"apiVersion": facts.V1BETA1, "kind": "PodGroup",
       "metadata": {"name": "pg", "namespace": "default"},
       "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}}


@pytest.mark.parametrize(("change", "says"), [
    pytest.param(lambda s: s.pop("schedulingPolicy"), "required", id="required"),
    pytest.param(lambda s: s.update(minCount=2), "no such field", id="unknown-field"),
    pytest.param(lambda s: s.update(schedulingPolicy={"gang": {"minCount": 0}}), "below 1",
                 id="minimum"),
    pytest.param(lambda s: s.update(schedulingPolicy={"gang": {"minCount": 2**31}}),
                 "not an int32", id="int32"),
    pytest.param(lambda s: s.update(schedulingPolicy={"basic": {}, "gang": {"minCount": 1}}),
                 "exactly one", id="union"),
    pytest.param(lambda s: s.update(preemptionPolicy="Sometimes"), "is not one of", id="enum"),
    pytest.param(lambda s: s.update(schedulingConstraints={"topology": [{"key": "a"},
                                                                        {"key": "b"}]}),
                 "at most 1", id="max-items"),
    pytest.param(lambda s: s.update(parentCompositePodGroupName="root"), "needs workloadRef",
                 id="dependent-required"),
    pytest.param(lambda s: s.update(priority=2_000_000_000), "above", id="maximum"),
    pytest.param(lambda s: s.update(workloadRef={"workloadName": "Wl", "templateName": "t"}),
                 "not a long-name", id="format"),
])
def test_the_checker_finds_what_the_types_forbid(change: Any, says: str) -> None:
    pg = copy.deepcopy(_PG)
    change(pg["spec"])
    assert any(says in p for p in violations(pg)), violations(pg)


def test_the_checker_finds_a_broken_tree() -> None:
    objects = _planned(TWO, {}, {}, TREE)
    assert tree_violations(objects) == []
    leaf = next(o for o in objects if o["kind"] == "PodGroup")
    leaf["spec"]["parentCompositePodGroupName"] = objects[0]["metadata"]["name"] + "-x"
    assert any("is not one of the JobSet's" in p for p in tree_violations(objects))
    wl = copy.deepcopy(objects[0])
    node = wl["spec"]["compositePodGroupTemplates"][0]
    for i in range(4):
        node["compositePodGroupTemplates"] = [{"name": f"n{i}", "schedulingPolicy": {
            "basic": {}}, "podGroupTemplates": node.get("podGroupTemplates") or []}]
        node = node["compositePodGroupTemplates"][0]
    assert any("deeper than 4" in p for p in tree_violations([wl]))


# --- the CRD's building blocks -----------------------------------------------------------------

# Where each v1alpha3 building block sits in spec.scheduling (tools/crd/scheduling.yaml).
_BLOCKS = [
    ("WorkloadCompositePodGroupSchedulingPolicy", "schedulingPolicy"),
    ("WorkloadCompositePodGroupSchedulingConstraints", "schedulingConstraints"),
    ("WorkloadCompositePodGroupDisruptionMode", "disruptionMode"),
    ("WorkloadCompositePodGroupSchedulingPolicy", "replicatedJobs.schedulingPolicy"),
    ("WorkloadCompositePodGroupSchedulingConstraints", "replicatedJobs.schedulingConstraints"),
    ("WorkloadCompositePodGroupDisruptionMode", "replicatedJobs.disruptionMode"),
    ("WorkloadPodGroupSchedulingPolicy", "replicatedJobs.job.schedulingPolicy"),
    ("WorkloadPodGroupSchedulingConstraints", "replicatedJobs.job.schedulingConstraints"),
    ("WorkloadPodGroupDisruptionMode", "replicatedJobs.job.disruptionMode"),
    ("WorkloadPodGroupResourceClaim", "replicatedJobs.job.resourceClaims"),
]


def _overlay() -> dict[str, Any]:
    import sys
    sys.path.insert(0, str(ROOT / "tools"))
    import gen_crd_schema

    return gen_crd_schema.load_overlay(str(ROOT / "tools/crd/scheduling.yaml"))


def _crd_node(path: str) -> dict[str, Any]:
    node = _overlay()
    for part in path.split("."):
        node = node["properties"][part]
        if node.get("type") == "array":
            node = node["items"]
    return node


def _crd_fits(node: dict[str, Any], name: str, problems: list[str], path: str) -> None:
    """The fields and +required markers; controller-gen writes no schema for the +k8s:
    declarative markers (minimum, maxItems), which admission enforces instead (below)."""
    st = facts.V1ALPHA3_TYPES[name]
    props = node.get("properties") or {}
    if set(props) != set(st.fields):
        problems.append(f"{path}: fields {sorted(props)} != {sorted(st.fields)}")
    required = set(node.get("required") or ())
    for key, f in st.fields.items():
        p = props.get(key)
        if p is None:
            continue
        if f.required != (key in required):
            problems.append(f"{path}.{key}: required is {key in required}, Go says {f.required}")
        inner = f.type.removeprefix("[]")
        if inner in facts.V1ALPHA3_TYPES:
            _crd_fits(p.get("items", p), inner, problems, f"{path}.{key}")


def test_the_crd_building_blocks_are_the_v1alpha3_types() -> None:
    problems: list[str] = []
    for name, path in _BLOCKS:
        _crd_fits(_crd_node(path), name, problems, path)
    assert problems == []


def _limits() -> list[Any]:
    """Every +k8s:minimum and +k8s:maxItems of the building blocks, where spec.scheduling
    holds it, and a value past it."""
    out = []
    for name, path in _BLOCKS:
        todo = [(name, path)]
        while todo:
            struct, at = todo.pop()
            for key, f in facts.V1ALPHA3_TYPES[struct].fields.items():
                inner = f.type.removeprefix("[]")
                if f.minimum is not None:
                    out.append(pytest.param(f"{at}.{key}", f.minimum - 1,
                                            id=f"{at}.{key}-minimum"))
                if f.max_items is not None:
                    out.append(pytest.param(f"{at}.{key}", f.max_items + 1,
                                            id=f"{at}.{key}-maxItems"))
                if inner in facts.V1ALPHA3_TYPES and not f.type.startswith("[]"):
                    todo.append((inner, f"{at}.{key}"))
        if path.endswith("resourceClaims"):
            out.append(pytest.param(path, facts.MAX_POD_GROUP_RESOURCE_CLAIMS + 1,
                                    id=f"{path}-maxItems"))
    return out


def _past(path: str, value: int) -> dict[str, Any]:
    """spec.scheduling with the field at `path` set past its limit (`value`: the bad number
    or, for a list, how many items)."""
    leaf = path.rsplit(".", 1)[-1]
    if leaf == "topology":
        bad: Any = [{"key": f"example.com/k{i}"} for i in range(value)]
    elif leaf == "resourceClaims":
        bad = [{"name": f"c{i}", "resourceClaimName": f"claim-{i}"} for i in range(value)]
    else:
        bad = value
    scheduling: dict[str, Any] = {}
    node = scheduling
    parts = path.split(".")
    for part in parts[:-1]:
        if part == "replicatedJobs":
            node["replicatedJobs"] = [{"targetReplicatedJobs": ["workers"]}]
            node = node["replicatedJobs"][0]
        else:
            node = node.setdefault(part, {})
    node[parts[-1]] = bad
    return scheduling


@pytest.mark.parametrize(("path", "value"), _limits())
def test_admission_holds_the_declarative_limits(path: str, value: int) -> None:
    from decider.core.admission import validate_create

    js = jobset(rjob("workers", 2, 2), scheduling=_past(path, value))
    js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"][
        "restartPolicy"] = "Never"
    errors = validate_create(js, WAS)
    where = "spec.scheduling." + path.replace("replicatedJobs.", "replicatedJobs[0].")
    assert [e for e in errors if e.field.startswith(where.rsplit(".", 1)[0])], (
        [str(e) for e in errors])
