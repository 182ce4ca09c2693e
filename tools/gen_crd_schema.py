"""Generate decider/core/admission/_crd_data.py from upstream JobSet's CRD and the Go types.

What admission needs from them, as data:
- every field the CRD's structural schema knows, down to the last pod-template field (unknown
  fields are what strict decoding rejects and pruning drops);
- which values are resource quantities (the webhook's Go round trip rewrites them);
- which fields the mutating webhook's `json.Marshal` writes although the request left them out:
  Go writes every field without `omitempty` and every non-pointer struct, so its patch adds
  `""`, `0`, `false` and `{}` (nil pointers, slices and maps become null, which the API server
  prunes);
- which scalar fields are Go values rather than pointers: decoding leaves such a field at its
  zero when the JSON omits it, so the webhook's typed comparison on update cannot tell absent
  from `""`, `0` or `false`, omitempty or not (a pointer stays nil, unlike a pointer to zero).
  This is a different question from the previous one: `stdin` (a `bool` with omitempty) is
  never written at `false`, yet an absent `stdin` decodes as `false`.

Usage (the sources are the versions upstream JobSet v0.12 builds with: k8s.io/api and
k8s.io/apimachinery v0.36.3; `--note` says in the output what came from elsewhere, such as
fields a KEP defines that no readable commit of upstream's CRD has yet):

    python tools/gen_crd_schema.py --crd jobset.x-k8s.io_jobsets.yaml --commit <sha> \\
        --go v1alpha2=jobset_types.go --go batchv1=batch/v1/types.go \\
        --go corev1=core/v1/types.go --go metav1=meta/v1/types.go \\
        > decider/core/admission/_crd_data.py

The Go files are read with regular expressions: Kubernetes API types are written in one regular
style (one field per line, a json tag on each), which is all this needs.

Fields newer than the CRD the data is generated from are added with ``--overlay
spec.scheduling=tools/crd/scheduling.yaml`` (and ``spec.replicatedJobs[].template.spec.scheduling
=tools/crd/job-scheduling.yaml``): a schema written for this project (``$ref`` names one of its
``definitions``), walked without Go types; its ``x-decider-go-zero`` and ``x-decider-go-value``
say what Go would write and decode for a property the request leaves out.
"""

from __future__ import annotations

import argparse
import pprint
import re
import sys
from dataclasses import dataclass, field
from typing import Any

import yaml

# Go types the round trip treats as values, not structs: what json.Marshal writes for each when
# it is the zero value (None: null, pruned by the API server).
SPECIAL = {
    "metav1.Time": ("time", None),
    "metav1.MicroTime": ("time", None),
    "resource.Quantity": ("quantity", "0"),
    "intstr.IntOrString": ("int-or-string", 0),
}
SCALARS = {"string": "", "bool": False, "int": 0, "int32": 0, "int64": 0, "float64": 0,
           "byte": 0, "uint64": 0, "types.UID": ""}
SCALAR_KINDS = ("string", "integer", "number", "boolean")


@dataclass
class GoField:
    name: str
    type: str
    json: str
    omitempty: bool
    inline: bool
    omitzero: bool = False


@dataclass
class GoTypes:
    structs: dict[str, list[GoField]] = field(default_factory=dict)
    named: dict[str, str] = field(default_factory=dict)  # named type -> underlying


_STRUCT = re.compile(r"^type (\w+) struct \{\n(.*?)^\}", re.M | re.S)
_NAMED = re.compile(r"^type (\w+) =? ?([^\s{][^\n]*)$", re.M)
_FIELD = re.compile(r"^\t(\w+)\s+([\w.*\[\]]+)\s+`json:\"([^\"]*)\"")
_EMBED = re.compile(r"^\t([\w.*]+)\s*(?:`json:\"([^\"]*)\")?")


def parse_go(pkg: str, text: str, out: GoTypes) -> None:
    for m in _NAMED.finditer(text):
        out.named[f"{pkg}.{m.group(1)}"] = _qualify(pkg, m.group(2).split("//")[0].strip())
    for m in _STRUCT.finditer(text):
        fields = []
        for line in m.group(2).splitlines():
            if line.lstrip().startswith("//") or not line.strip():
                continue
            f = _FIELD.match(line)
            if f:
                tag = f.group(3).split(",")
                fields.append(GoField(f.group(1), _qualify(pkg, f.group(2)), tag[0],
                                      "omitempty" in tag[1:], tag[0] == "", "omitzero" in tag[1:]))
                continue
            e = _EMBED.match(line)
            if e:
                # An embedded struct: promoted (inline) unless its tag names it.
                tag = (e.group(2) or "").split(",")
                fields.append(GoField(e.group(1), _qualify(pkg, e.group(1)), tag[0],
                                      "omitempty" in tag[1:], tag[0] == ""))
        out.structs[f"{pkg}.{m.group(1)}"] = fields


def _qualify(pkg: str, t: str) -> str:
    """Prefix unqualified type names with their package, inside *, [] and map[...]."""
    def one(name: str) -> str:
        if name in SCALARS or "." in name or not name:
            return name
        return f"{pkg}.{name}"
    t = t.strip()
    if t.startswith("*"):
        return "*" + _qualify(pkg, t[1:])
    if t.startswith("[]"):
        return "[]" + _qualify(pkg, t[2:])
    if t.startswith("map["):
        key, _, value = t[4:].partition("]")
        return f"map[{one(key)}]{_qualify(pkg, value)}"
    return one(t)


def resolve(types: GoTypes, t: str) -> str:
    seen = 0
    while t in types.named and t not in types.structs and seen < 10:
        t = types.named[t]
        seen += 1
    return t


def fields_of(types: GoTypes, t: str) -> dict[str, GoField]:
    out: dict[str, GoField] = {}
    for f in types.structs[t]:
        if f.inline:
            out.update(fields_of(types, resolve(types, f.type.lstrip("*"))))
        else:
            out[f.json] = f
    return out


def decoded_zero(types: GoTypes, f: GoField) -> Any:
    """The zero a JSON-absent field decodes to when its Go type is a non-pointer scalar (named
    types and aliases followed to their underlying type); Ellipsis for a pointer, whose absent
    value is nil, and for anything that is not a scalar."""
    if f.type.startswith("*"):
        return ...
    t = resolve(types, f.type)
    return SCALARS.get(t, ...)


# The CRD type each Go scalar is published as (controller-gen's mapping).
_CRD_KIND = {"bool": "boolean", "string": "string", "types.UID": "string", "float64": "number"}


def check_scalar(types: GoTypes, f: GoField, kind: str, path: str) -> None:
    """Refuse a CRD scalar whose Go type is not a scalar or a pointer to one: decoded_zero
    would silently leave it unclassified, and the typed comparison would need a rule for it."""
    t = resolve(types, f.type.lstrip("*"))
    if t in SCALARS:
        if kind != _CRD_KIND.get(t, "integer"):
            raise SystemExit(f"{path}: CRD {kind} but Go {f.type} ({t})")
    elif SPECIAL.get(t, ("",))[0] != "time":
        raise SystemExit(f"{path}: CRD {kind} but Go {f.type} ({t}), not a scalar")


def zero_of(types: GoTypes, f: GoField) -> Any:
    """What json.Marshal writes for this field at its zero value; Ellipsis: nothing."""
    t = resolve(types, f.type)
    if t.startswith(("*", "[]", "map[")) or f.omitzero:
        return ...
    if t in SPECIAL:
        zero = SPECIAL[t][1]
        return ... if zero is None else zero
    if t in types.structs:
        return {}  # encoding/json never omits a struct, omitempty or not
    if f.omitempty:
        return ...
    if t not in SCALARS:
        raise SystemExit(f"unknown Go type {t} of field {f.name}")
    return SCALARS[t]


class Builder:
    def __init__(self, types: GoTypes) -> None:
        self.types = types
        self.nodes: list[tuple[Any, ...]] = []
        self.index: dict[str, int] = {}
        self.quantity_patterns: set[str] = set()

    def add(self, node: tuple[Any, ...]) -> int:
        key = repr(node)
        if key not in self.index:
            self.index[key] = len(self.nodes)
            self.nodes.append(node)
        return self.index[key]

    def walk(self, s: dict[str, Any], go: str | None, path: str) -> int:
        go = resolve(self.types, go.lstrip("*")) if go else None
        if s.get("x-kubernetes-int-or-string"):
            quantity = "pattern" in s
            if quantity:
                self.quantity_patterns.add(s["pattern"])
            if go and SPECIAL.get(go, ("",))[0] != ("quantity" if quantity else "int-or-string"):
                raise SystemExit(f"{path}: CRD int-or-string but Go {go}")
            return self.add(("quantity" if quantity else "int-or-string",))
        kind = s.get("type")
        if kind == "array":
            elem = go[2:] if go and go.startswith("[]") else None
            return self.add(("array", self.walk(s["items"], elem, path + "[]")))
        if kind == "object" and "properties" not in s:
            if "additionalProperties" in s:
                value = None
                if go and go.startswith("map["):
                    value = go.split("]", 1)[1]
                return self.add(("map", self.walk(s["additionalProperties"], value,
                                                  path + "{}")))
            return self.add(("object", (), (), (), ()))
        if kind == "object":
            gofields = fields_of(self.types, go) if go in self.types.structs else {}
            if go and go not in self.types.structs:
                raise SystemExit(f"{path}: no Go struct {go}")
            props = []
            for name, sub in sorted(s["properties"].items()):
                f = gofields.get(name)
                if go and f is None and not sub.get("x-decider-overlay"):
                    raise SystemExit(f"{path}.{name}: not a field of Go {go}")
                props.append((name, self.walk(sub, f.type if f else None, f"{path}.{name}")))
            decoded = []
            for name, sub in sorted(s["properties"].items()):
                f = gofields.get(name)
                if f is None and sub.get("x-decider-go-value") and sub.get("type") == "string":
                    decoded.append((name, ""))
                if f is None or sub.get("type") not in SCALAR_KINDS \
                        or sub.get("x-kubernetes-int-or-string"):
                    continue
                check_scalar(self.types, f, sub["type"], f"{path}.{name}")
                zero = decoded_zero(self.types, f)
                if zero is not ...:
                    decoded.append((name, zero))
            zeros = []
            for name, f in sorted(gofields.items()):
                if name not in s["properties"]:
                    continue  # the API server prunes what the CRD does not know
                zero = zero_of(self.types, f)
                if zero is not ...:
                    zeros.append((name, zero))
            for name, sub in sorted(s["properties"].items()):
                if name not in gofields and "x-decider-go-zero" in sub:
                    zeros.append((name, sub["x-decider-go-zero"]))
            zeros.sort()
            return self.add(("object", tuple(props), tuple(sorted(s.get("required", ()))),
                             tuple(zeros), tuple(decoded)))
        if go and SPECIAL.get(go, ("",))[0] == "time":
            return self.add(("string",))
        return self.add((kind,))


HEADER = '''"""GENERATED by tools/gen_crd_schema.py from upstream JobSet's CRD
(config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml, {crd_version}) at commit
{commit}, and the Go types it is generated from
(jobset api/v1alpha2; k8s.io/api and k8s.io/apimachinery v0.36.3). Do not edit by hand.
{note}
NODES[i] is one schema node:
  ("object", ((property, node), ...), (required, ...), ((property, go_zero), ...),
   ((property, decoded_zero), ...))
  ("map", value_node)   ("array", item_node)
  ("string",) ("integer",) ("number",) ("boolean",) ("int-or-string",) ("quantity",)
go_zero: what the webhook's json.Marshal writes for a property the request left out.
decoded_zero: for each scalar property whose Go type is not a pointer (omitempty or not), the
zero Go decodes an absent value to; a scalar property not listed is a Go pointer (absent: nil).
"""

# fmt: off
NODES: tuple[tuple, ...] = (
'''


def _resolve_refs(node: Any, definitions: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        if "$ref" in node:
            return _resolve_refs(definitions[node["$ref"]], definitions)
        return {k: _resolve_refs(v, definitions) for k, v in node.items() if k != "definitions"}
    if isinstance(node, list):
        return [_resolve_refs(v, definitions) for v in node]
    return node


def load_overlay(path: str) -> dict[str, Any]:
    """An overlay schema with its $refs inlined and its root marked as having no Go field."""
    with open(path, encoding="utf-8") as fh:
        raw = yaml.safe_load(fh)
    schema = _resolve_refs(raw, raw.get("definitions", {}))
    schema["x-decider-overlay"] = True
    return schema


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--crd", required=True)
    ap.add_argument("--commit", default="unknown", help="the jobset commit the CRD is from")
    ap.add_argument("--go", action="append", required=True, help="pkg=file")
    ap.add_argument("--note", default="",
                    help="a paragraph on inputs beyond that commit (fields added from a KEP)")
    ap.add_argument("--overlay", action="append", default=[],
                    help="PATH=schema.yaml: a field newer than the CRD, PATH dotted from "
                    "the root (spec.scheduling, spec.replicatedJobs[].template.spec.scheduling)")
    args = ap.parse_args()
    types = GoTypes()
    for item in args.go:
        pkg, _, path = item.partition("=")
        with open(path, encoding="utf-8") as fh:
            parse_go(pkg, fh.read(), types)
    with open(args.crd, encoding="utf-8") as fh:
        crd = yaml.safe_load(fh)
    version = crd["spec"]["versions"][0]
    schema = version["schema"]["openAPIV3Schema"]
    for item in args.overlay:
        where, _, path = item.partition("=")
        node = schema
        *steps, name = where.split(".")
        for step in steps:  # "replicatedJobs[]" steps into a list's items
            node = node["properties"][step.removesuffix("[]")]
            if step.endswith("[]"):
                node = node["items"]
        node["properties"][name] = load_overlay(path)
    b = Builder(types)
    # The root's metadata is the API server's own ObjectMeta, checked apart (crd.py).
    root = dict(schema)
    root["properties"] = {k: v for k, v in schema["properties"].items()
                          if k not in ("metadata", "apiVersion", "kind")}
    spec = b.walk(root["properties"]["spec"], "v1alpha2.JobSetSpec", "spec")
    status = b.walk(root["properties"]["status"], "v1alpha2.JobSetStatus", "status")
    paragraphs = [args.note.strip()] if args.note.strip() else []
    paragraphs += [f"Overlaid: {item.partition('=')[0]} from {item.partition('=')[2]}."
                   for item in args.overlay]
    note = "".join(f"\n{p}\n" for p in paragraphs)
    out = [HEADER.format(crd_version=version["name"], commit=args.commit, note=note)]
    for i, node in enumerate(b.nodes):
        text = pprint.pformat(node, width=95, compact=True).replace("\n", "\n    ")
        out.append(f"    # {i}\n    {text},\n")
    out.append(")\n# fmt: on\n\n")
    if len(b.quantity_patterns) != 1:
        raise SystemExit(f"expected one quantity pattern, got {b.quantity_patterns}")
    out.append(f"SPEC = {spec}\nSTATUS = {status}\n")
    out.append("# The CRD's pattern for a resource quantity given as a string.\n")
    pattern = b.quantity_patterns.pop()
    pieces, start = [], 0
    while start < len(pattern):
        end = min(start + 80, len(pattern))
        while end < len(pattern) and pattern[end - 1] == "\\":
            end -= 1  # a raw string may not end in a backslash
        pieces.append(pattern[start:end])
        start = end
    chunks = "".join(f'    r"{piece}"\n' for piece in pieces)
    out.append(f"QUANTITY_PATTERN = (\n{chunks})\n")
    sys.stdout.write("".join(out))


if __name__ == "__main__":
    main()
