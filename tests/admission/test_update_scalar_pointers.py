"""spec.replicatedJobs immutability for scalar fields, as upstream's webhook sees them after
decoding into Go structs (spec §3.4: Semantic.DeepEqual).

A non-pointer scalar (`stdin bool` with omitempty, a named string such as `PullPolicy`)
decodes the same whether the JSON omits it or writes its zero, so a client re-sending the stored
JobSet with `stdin: false` spelled out changes nothing. A pointer scalar (`*bool`, `*int32`,
`*PreemptionPolicy`) is nil when omitted and a pointer to zero when written: a change.
"""

from __future__ import annotations

import copy
import functools
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from decider.core.admission import crd, default_jobset, validate_create, validate_update

from .jobsets import container, jobset, put, rjob

JOB = "spec.replicatedJobs[0].template.spec"
POD = f"{JOB}.template.spec"
MAIN = f"{POD}.containers[0]"
IMMUTABLE = [("spec.replicatedJobs", "field is immutable")]


def stored() -> dict[str, Any]:
    """A running JobSet as stored after create, with the parents the rows below write into
    (ports, a probe, a security context) already there, so each row adds one scalar only."""
    main = container()
    main["ports"] = [{"containerPort": 8080}]
    main["readinessProbe"] = {"exec": {"command": ["true"]}}
    main["securityContext"] = {"readOnlyRootFilesystem": True}
    js = jobset(rjob("workers", 2))
    js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"] = [
        main
    ]
    out = default_jobset(js)
    assert validate_create(out) == []
    return out


def _node_and_key(path: str) -> tuple[crd.Node, str]:
    """The schema node of the object holding `path`'s last field, and that field's name."""
    node = crd.ROOT
    *parents, last = path.replace("[0]", "").split(".")
    for step in parents:
        node = node.props[step]
        while node.kind == "array" and node.child is not None:
            node = node.child
    return node, last


# (path, Go type, zero, a non-zero value). Every field here is a non-pointer scalar with
# omitempty: the mutating webhook never writes it at zero, yet decoding fills its zero in.
VALUE_SCALARS = [
    pytest.param(f"{MAIN}.stdin", "bool", False, True, id="value-bool/container-stdin"),
    pytest.param(f"{MAIN}.tty", "bool", False, True, id="value-bool/container-tty"),
    pytest.param(f"{MAIN}.stdinOnce", "bool", False, True, id="value-bool/container-stdinOnce"),
    pytest.param(f"{POD}.hostNetwork", "bool", False, True, id="value-bool/pod-hostNetwork"),
    pytest.param(
        f"{MAIN}.terminationMessagePath", "string", "", "/tmp/msg",
        id="value-string/container-terminationMessagePath",
    ),
    pytest.param(f"{MAIN}.workingDir", "string", "", "/work", id="value-string/workingDir"),
    pytest.param(
        f"{POD}.serviceAccountName", "string", "", "runner",
        id="value-string/pod-serviceAccountName",
    ),
    pytest.param(
        f"{MAIN}.ports[0].hostPort", "int32", 0, 9090, id="value-int32/container-port-hostPort"
    ),
    pytest.param(
        f"{MAIN}.readinessProbe.initialDelaySeconds", "int32", 0, 5,
        id="value-int32/probe-initialDelaySeconds",
    ),
    pytest.param(
        f"{MAIN}.imagePullPolicy", "corev1.PullPolicy", "", "Always",
        id="named-string/container-imagePullPolicy",
    ),
    pytest.param(
        f"{MAIN}.terminationMessagePolicy", "corev1.TerminationMessagePolicy", "",
        "FallbackToLogsOnError", id="named-string/container-terminationMessagePolicy",
    ),
    pytest.param(
        f"{POD}.dnsPolicy", "corev1.DNSPolicy", "", "None", id="named-string/pod-dnsPolicy"
    ),
]

# (path, Go type, zero): pointer scalars, absent in the stored object.
POINTER_SCALARS = [
    pytest.param(
        f"{MAIN}.securityContext.runAsNonRoot", "*bool", False,
        id="pointer-bool/container-runAsNonRoot",
    ),
    pytest.param(f"{JOB}.manualSelector", "*bool", False, id="pointer-bool/job-manualSelector"),
    pytest.param(
        f"{POD}.automountServiceAccountToken", "*bool", False,
        id="pointer-bool/pod-automountServiceAccountToken",
    ),
    pytest.param(f"{JOB}.backoffLimit", "*int32", 0, id="pointer-int32/job-backoffLimit"),
    pytest.param(
        f"{POD}.terminationGracePeriodSeconds", "*int64", 0,
        id="pointer-int64/pod-terminationGracePeriodSeconds",
    ),
    pytest.param(
        f"{POD}.preemptionPolicy", "*corev1.PreemptionPolicy", "",
        id="pointer-named-string/pod-preemptionPolicy",
    ),
]


def _get(obj: Any, path: str) -> Any:
    """The value at `path`, or Ellipsis when a level is missing."""
    for step in path.replace("[0]", ".0").split("."):
        if isinstance(obj, list) and step.isdigit() and int(step) < len(obj):
            obj = obj[int(step)]
        elif isinstance(obj, dict) and step in obj:
            obj = obj[step]
        else:
            return ...
    return obj


def _with(path: str, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(stored())
    put(path, value)(out)
    return out


@pytest.mark.parametrize(("path", "go_type", "zero", "other"), VALUE_SCALARS)
def test_value_scalar_written_as_zero_is_no_change(
    path: str, go_type: str, zero: Any, other: Any
) -> None:
    node, key = _node_and_key(path)
    assert node.absent_as.get(key, ...) == zero, f"{go_type} decodes absent as its zero"
    # ...which is not what json.Marshal writes back: omitempty leaves a zero out, so the
    # stored object (the mutating webhook's output) still omits the field.
    assert key not in dict(node.zeros)
    assert _get(stored(), path) is ...
    # Both ways: zero written where the stored object omits it, and omitted where it has it.
    assert validate_update(_with(path, zero), stored()) == []
    assert validate_update(stored(), _with(path, zero)) == []


@pytest.mark.parametrize(("path", "go_type", "zero", "other"), VALUE_SCALARS)
def test_value_scalar_changed_is_refused(path: str, go_type: str, zero: Any, other: Any) -> None:
    # Premise: the comparison reads an absent field as its zero here, and still sees a change.
    node, key = _node_and_key(path)
    assert key in node.absent_as, go_type
    changed = [(e.field, e.message) for e in validate_update(_with(path, other), stored())]
    assert changed == IMMUTABLE
    # From an explicit zero as well: the zero is a value, not a wildcard.
    changed = [
        (e.field, e.message) for e in validate_update(_with(path, other), _with(path, zero))
    ]
    assert changed == IMMUTABLE


@pytest.mark.parametrize(("path", "go_type", "zero"), POINTER_SCALARS)
def test_pointer_scalar_nil_is_not_zero(path: str, go_type: str, zero: Any) -> None:
    node, key = _node_and_key(path)
    assert node.props[key].kind in ("boolean", "integer", "string")
    assert key not in node.absent_as, f"{go_type} is nil when absent"
    assert [(e.field, e.message) for e in validate_update(_with(path, zero), stored())] == (
        IMMUTABLE
    )
    assert [(e.field, e.message) for e in validate_update(stored(), _with(path, zero))] == (
        IMMUTABLE
    )


# The generator, on Go sources small enough to read: named types, an alias, pointers.
_GO = """package demo

type Policy string

type Mode = Policy

type Level int32

type Thing struct {
\tPlain string `json:"plain,omitempty"`
\tNamed Policy `json:"named,omitempty"`
\tAliased Mode `json:"aliased,omitempty"`
\tLevel Level `json:"level,omitempty"`
\tFlag bool `json:"flag,omitempty"`
\tRequired string `json:"required"`
\tNamedPtr *Policy `json:"namedPtr,omitempty"`
\tAliasPtr *Mode `json:"aliasPtr,omitempty"`
\tFlagPtr *bool `json:"flagPtr,omitempty"`
\tCount *int32 `json:"count,omitempty"`
}
"""
_SCHEMA = {
    "type": "object",
    "properties": {
        **{k: {"type": "string"}
           for k in ("plain", "named", "aliased", "required", "namedPtr", "aliasPtr")},
        "level": {"type": "integer"},
        "count": {"type": "integer"},
        "flag": {"type": "boolean"},
        "flagPtr": {"type": "boolean"},
    },
}


@functools.cache
def _generator() -> ModuleType:
    path = Path(__file__).resolve().parents[2] / "tools" / "gen_crd_schema.py"
    spec = importlib.util.spec_from_file_location("gen_crd_schema", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # dataclasses looks the module up while building GoField.
    sys.modules["gen_crd_schema"] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("field", "decoded"),
    [
        pytest.param("plain", "", id="value/string"),
        pytest.param("named", "", id="value/named-string"),
        pytest.param("aliased", "", id="value/alias-of-named-string"),
        pytest.param("level", 0, id="value/named-int32"),
        pytest.param("flag", False, id="value/bool"),
        pytest.param("required", "", id="value/without-omitempty"),
        pytest.param("namedPtr", ..., id="pointer/named-string"),
        pytest.param("aliasPtr", ..., id="pointer/alias"),
        pytest.param("flagPtr", ..., id="pointer/bool"),
        pytest.param("count", ..., id="pointer/int32"),
    ],
)
def test_generator_records_pointer_scalars(field: str, decoded: Any) -> None:
    gen = _generator()
    types = gen.GoTypes()
    gen.parse_go("demo", _GO, types)
    builder = gen.Builder(types)
    node = builder.nodes[builder.walk(_SCHEMA, "demo.Thing", "thing")]
    assert dict(node[4]).get(field, ...) == decoded
    # json.Marshal's zeros are the other notion: only the field without omitempty is written.
    assert dict(node[3]) == {"required": ""}


def test_generator_refuses_a_crd_scalar_that_is_no_go_scalar() -> None:
    gen = _generator()
    types = gen.GoTypes()
    gen.parse_go("demo", "package demo\n\ntype Thing struct {\n"
                         "\tItems []string `json:\"items,omitempty\"`\n}\n", types)
    with pytest.raises(SystemExit, match="not a scalar"):
        gen.Builder(types).walk(
            {"type": "object", "properties": {"items": {"type": "string"}}},
            "demo.Thing", "thing",
        )
