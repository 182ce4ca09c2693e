"""Files read and YAML written as kubectl reads them: a JSON file decoded as JSON (numbers as
JSON means them), YAML timestamps kept as the text they are, and strings that go-yaml v2 would
read as a number or bool written quoted."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from decider_client import render, yaml_guard
from decider_client.documents import load_objects
from decider_client.errors import ObservationError

ROOT = Path(__file__).resolve().parent.parent
HEAD = '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": '


def _jobset(replicas: str = "1", image: str = '"busybox"', annotations: str = "{}") -> str:
    return ('{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": '
            f'{{"name": "mini", "annotations": {annotations}}}, "spec": {{"replicatedJobs": '
            f'[{{"name": "w", "replicas": {replicas}, "template": {{"spec": {{"template": '
            f'{{"spec": {{"containers": [{{"name": "m", "image": {image}}}]}}}}}}}}}}]}}}}')


def decider(*args: str, stdin: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "decider.cli", *args], input=stdin,
                          capture_output=True, text=True, cwd=ROOT, timeout=60)


# --- 1. JSON input is JSON -----------------------------------------------------------------

# A whole number written as a float is the integer kubectl sends: it decodes the file into Go
# values and encodes them again, and Go writes a whole float64 below 1e21 without a fraction,
# which the API server reads as an integer where it fits int64.
@pytest.mark.parametrize("literal,value", [
    ("1e5", 100000),
    ("1E+3", 1000),
    ("-2e-3", -0.002),
    ("1e0", 1),
    ("2.0", 2),
    ("-0.0", 0),
    ("2.5", 2.5),
    ("9.3e18", 9.3e18),
    ("1e21", 1e21),
    ("7", 7),
    ("-0", 0),
    ("12345678901234567890", 12345678901234567890),
    ('"1e5"', "1e5"),
    ("true", True),
    ("null", None),
    ('"2026-01-01T10:00:00Z"', "2026-01-01T10:00:00Z"),
    ('"y"', "y"),
], ids=["exponent-whole", "exponent-upper-plus-whole", "negative-exponent", "one-e-zero-whole",
        "point-zero-whole", "minus-zero-float", "fraction", "whole-float-past-int64",
        "whole-float-go-writes-with-exponent", "int", "minus-zero", "beyond-int64",
        "string-exponent", "bool", "null", "time-string", "string-y"])
def test_json_values_are_what_json_means(literal: str, value: Any) -> None:
    obj = load_objects(HEAD + f'{{"v": {literal}}}}}', "f.json")[0]
    assert obj["data"]["v"] == value
    assert type(obj["data"]["v"]) is type(value)


@pytest.mark.parametrize("text,kinds", [
    ('{"kind": "A"}{"kind": "B"}', ["A", "B"]),
    ('{"kind": "A"}\n{"kind": "B"}\n', ["A", "B"]),
    ('\n \t{"kind": "A"}  \r\n\n  {"kind": "B"} ', ["A", "B"]),
    ('{"kind": "List", "items": [{"kind": "A", "n": 1e1}, {"kind": "B"}]}', ["A", "B"]),
    ('[{"kind": "A"}]', None),
    ('  {"kind": "A"}', ["A"]),
], ids=["concatenated", "one-a-line", "whitespace-around", "kind-list", "array-not-object",
        "leading-space"])
def test_a_stream_of_json_values(text: str, kinds: list[str] | None) -> None:
    if kinds is None:
        with pytest.raises(ObservationError, match="must be a Kubernetes object"):
            load_objects(text, "f.json")
        return
    assert [o["kind"] for o in load_objects(text, "f.json")] == kinds


@pytest.mark.parametrize("text,line,column,problem", [
    ('{"a": }', 1, 7, "Expecting value"),
    ('{"a" 1}', 1, 6, "Expecting ':' delimiter"),
    ('{"a": 1,}', 1, 9, "Expecting property name"),
    ('{"a": 1}\n{"b":\n', 3, 1, "Expecting value"),
    ('{"a": 1}\n  oops', 2, 3, "Expecting value"),
    ("{{{", 1, 2, "Expecting property name"),
    ('{"a": "x\ny"}', 1, 9, "Invalid control character"),
    ('[1, 2', 1, 6, "Expecting ',' delimiter"),
    # A fault before the nesting gets too deep is the one named.
    ('{"a": ]' + "[" * 300, 1, 7, "Expecting value"),
], ids=["missing-value", "missing-colon", "trailing-comma", "second-value-cut",
        "garbage-after-value", "braces", "raw-newline-in-string", "unterminated-array",
        "fault-before-depth"])
def test_malformed_json_names_line_and_column(text: str, line: int, column: int,
                                              problem: str) -> None:
    with pytest.raises(ObservationError) as exc:
        load_objects(text, "f.json")
    assert str(exc.value).startswith(
        f"f.json: not valid YAML or JSON at line {line}, column {column}: {problem}")


def _yaml_mark(text: str) -> tuple[int, int] | None:
    """Where the YAML reader refuses `text` (JSON is YAML), or None when it reads it."""
    try:
        yaml_guard.load_all(text)
    except yaml.MarkedYAMLError as exc:
        assert exc.problem_mark is not None
        return exc.problem_mark.line + 1, exc.problem_mark.column + 1
    return None


D = yaml_guard.MAX_DEPTH


def _wrap(inner: str) -> str:
    """`inner` as the value of a mapping, one level down."""
    return '{"data": ' + inner + "}"


@pytest.mark.parametrize("text,read", [
    (_wrap("[" * (D - 2) + "]" * (D - 2)), True),
    (_wrap("[" * (D - 1) + "]" * (D - 1)), True),
    (_wrap("[" * D + "]" * D), False),
    (_wrap("[" * (D - 2) + "1" + "]" * (D - 2)), True),
    (_wrap("[" * (D - 1) + "1" + "]" * (D - 1)), False),
    (_wrap("[" * (D - 2) + '"[[{[]]"' + "]" * (D - 2)), True),
    (_wrap('{"a":' * (D - 2) + "{}" + "}" * (D - 2)), True),
    (_wrap('{"a":' * (D - 2) + '{"b": 1}' + "}" * (D - 2)), False),
    (_wrap("[\n" + '{"a":' * (D - 3) + '\n  {"b": 1}' + "}" * (D - 3) + "]"), False),
], ids=["containers-below-limit", "containers-at-limit", "containers-past-limit",
        "scalar-at-limit", "scalar-past-limit", "brackets-in-a-string", "mappings-at-limit",
        "key-past-limit", "past-limit-on-a-later-line"])
def test_json_nesting_limit_is_the_yaml_readers(text: str, read: bool) -> None:
    """The same limit, counted the same way (every node, keys too) and refused at the same
    place as when the YAML reader reads the text (JSON is YAML)."""
    where = _yaml_mark(text)
    assert (where is None) is read
    if read:
        assert load_objects(text, "f.json") == yaml_guard.load_all(text)
        return
    assert where is not None
    with pytest.raises(ObservationError) as exc:
        load_objects(text, "f.json")
    line, column = where
    assert str(exc.value) == (f"f.json: not valid YAML or JSON at line {line}, column {column}: "
                              f"nested more than {D} levels deep")


def test_a_later_value_too_deep_is_named_on_its_line() -> None:
    # YAML reads no stream of JSON values: the place is the one the value alone gets, a line on.
    value = _wrap("[" * D + "]" * D)
    where = _yaml_mark(value)
    assert where is not None
    with pytest.raises(ObservationError) as exc:
        load_objects('{"kind": "A"}\n' + value, "f.json")
    assert f"at line {where[0] + 1}, column {where[1]}: nested more than" in str(exc.value)


@pytest.mark.parametrize("depth", [D + 1, 2_000, 100_000], ids=["just-past", "past-json-recursion",
                                                               "stack-overflow-depth"])
def test_deep_json_is_refused_without_a_traceback(depth: int) -> None:
    for text in ("[" * depth + "]" * depth, '{"a":' * depth + "1" + "}" * depth, "[" * depth):
        with pytest.raises(ObservationError, match=f"nested more than {D} levels deep"):
            load_objects(text, "f.json")


IMAGE = "spec.replicatedJobs[0].template.spec.template.spec.containers[0].image"


@pytest.mark.waits
@pytest.mark.parametrize("replicas,image,code,needle", [
    ("1e2", '"busybox"', 0, None),
    ("1e0", '"busybox"', 0, None),
    ("2.0", '"busybox"', 0, None),
    ("1.5", '"busybox"', 2, '"spec.replicatedJobs[0].replicas",\n      "message": "Invalid value: '
                            '\\"float64\\": spec.replicatedJobs[0].replicas in body must be of '
                            'type int32: \\"float64\\""'),
    # kubectl sends 1e5 as 100000, an integer to the API server.
    ("1", "1e5", 2, f'"{IMAGE}",\n      "message": "Invalid value: \\"integer\\": {IMAGE} in body '
                    'must be of type string: \\"integer\\""'),
    ("1", '"busybox"}', 2, "not valid YAML or JSON at line 1, column"),
], ids=["replicas-1e2", "replicas-1e0", "replicas-2.0", "replicas-fraction", "image-number",
        "malformed"])
def test_cli_reads_a_json_file_as_json(tmp_path: Path, replicas: str, image: str, code: int,
                                       needle: str | None) -> None:
    path = tmp_path / "js.json"
    path.write_text(_jobset(replicas, image))
    out = subprocess.run([sys.executable, "-m", "decider.cli", "validate", "-f", str(path)],
                         capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert out.returncode == code, out.stderr
    assert "Traceback" not in out.stderr
    if needle is None:
        rj = json.loads(out.stdout)["object"]["spec"]["replicatedJobs"][0]
        assert rj["replicas"] == int(float(replicas))
    else:
        assert needle in out.stdout + out.stderr


@pytest.mark.waits
@pytest.mark.parametrize("replicas", ["1e2", "100.0", "1E2"])
@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_every_command_reads_a_whole_float_as_kubectl_sends_it(tmp_path: Path, replicas: str,
                                                                suffix: str) -> None:
    # `validate` took replicas: 1e2 as 100 while decide refused "must be an integer, got float":
    # kubectl sends 100, and the cluster runs 100 Jobs.
    path = tmp_path / f"js{suffix}"
    text = _jobset(replicas)
    if suffix == ".yaml":
        text = yaml.safe_dump(json.loads(text.replace(f'"replicas": {replicas}', '"replicas": 0')))
        assert text.count("replicas: 0") == 1
        text = text.replace("replicas: 0", f"replicas: {replicas}")
    path.write_text(text)
    out = subprocess.run([sys.executable, "-m", "decider.cli", "decide", "-f", str(path),
                          "--now", "2026-01-01T00:00:00Z", "-o", "json"],
                         capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert out.returncode == 0, out.stderr
    plan = json.loads(out.stdout)
    assert sum(a["type"] == "CreateJob" for a in plan["actions"]) == 100


# --- 2. YAML timestamps stay text ------------------------------------------------------------

@pytest.mark.parametrize("scalar", [
    "2026-01-01 10:00:00",
    "2001-12-14t21:59:43.10-05:00",
    "2001-12-14T21:59:43Z",
    "2001-12-14 21:59:43.10 -5",
    "2026-01-01",
    "2002-1-2",
], ids=["space-separated", "lower-t-offset", "rfc3339-utc", "space-and-short-zone", "date",
        "short-fields"])
def test_yaml_timestamps_keep_their_text(scalar: str) -> None:
    text = (f"kind: ConfigMap\nmetadata:\n  annotations:\n    built: {scalar}\n"
            f"    again: &t {scalar}\ndata: {{a: *t, list: [{scalar}]}}\n")
    obj = load_objects(text, "f.yaml")[0]
    assert obj["metadata"]["annotations"] == {"built": scalar, "again": scalar}
    assert obj["data"] == {"a": scalar, "list": [scalar]}


def test_timestamps_in_a_kind_list_and_the_guards_still_hold() -> None:
    text = "kind: List\nitems:\n- {kind: A, at: 2026-01-01 10:00:00}\n"
    assert load_objects(text)[0]["at"] == "2026-01-01 10:00:00"
    with pytest.raises(ObservationError, match=f"nested more than {D} levels deep"):
        load_objects("at: 2026-01-01\nx: " + "[" * D + "]" * D + "\n")


@pytest.mark.waits
def test_cli_echoes_a_timestamp_annotation_as_written() -> None:
    text = yaml.safe_dump(json.loads(_jobset())).replace(
        "annotations: {}", "annotations:\n    built: 2026-01-01 10:00:00\n"
                           "    zoned: 2001-12-14t21:59:43.10-05:00")
    assert "built: 2026-01-01 10:00:00" in text
    out = decider("validate", "-f", "-", stdin=text)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["object"]["metadata"]["annotations"] == {
        "built": "2026-01-01 10:00:00", "zoned": "2001-12-14t21:59:43.10-05:00"}


# --- 3. YAML written so that kubectl reads strings back as strings ---------------------------

class GoYamlV2Loader(yaml.SafeLoader):
    """Plain scalars resolved by go-yaml v2's rules (resolve.go), written from them anew; every
    scalar these rules do not claim is a string. Only composed (tags), never constructed."""

    yaml_implicit_resolvers: dict[str, list[tuple[str, re.Pattern[str]]]] = {}


_NON_STRING = {
    "tag:yaml.org,2002:bool": r"y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE"
                              r"|on|On|ON|off|Off|OFF",
    "tag:yaml.org,2002:null": r"~|null|Null|NULL|",
    # A sign or digit first: underscores are dropped, then the int or float syntax applies.
    # A dot first: Go's float syntax as it is (an underscore only between digits).
    "tag:yaml.org,2002:float": r"([-+]_*)?([0-9][0-9_]*(\.[0-9_]*)?|\.[0-9_]*[0-9][0-9_]*)"
                               r"([eE][-+]?[0-9_]*[0-9][0-9_]*)?"
                               r"|\.[0-9](_?[0-9])*([eE][-+]?[0-9](_?[0-9])*)?"
                               r"|[-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN)",
    "tag:yaml.org,2002:int": r"([-+]_*)?(0_*[bB][01_]*[01][01_]*|0_*[xX][0-9a-fA-F_]*[0-9a-fA-F]"
                             r"[0-9a-fA-F_]*|0_*[oO][0-7_]*[0-7][0-7_]*|[0-9][0-9_]*)",
}
for _tag, _pattern in _NON_STRING.items():
    GoYamlV2Loader.add_implicit_resolver(_tag, re.compile(f"^(?:{_pattern})$"),
                                         list("yYnNtTfFoO~+-.0123456789") + [""])
STR = "tag:yaml.org,2002:str"


def _go_yaml_v2_tags(text: str) -> list[str]:
    """The tag go-yaml v2 gives each scalar of `text`."""
    tags = []
    stack = [yaml.compose(text, Loader=GoYamlV2Loader)]
    while stack:
        node = stack.pop()
        if isinstance(node, yaml.ScalarNode):
            tags.append(node.tag)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
        elif isinstance(node, yaml.MappingNode):
            stack.extend(part for pair in node.value for part in pair)
    return tags


NUMBER_OR_BOOL = [
    "1e3", "1E+3", ".5e3", "-.5E-3", "+1e9", "1.", "1.e5", "08", "09.5", "0o17", "-0o7",
    "0O17", "0X1F", "0B101", "+12", "1_000", "1_", "0_7", "-1_0.5", ".5", "-._5", ".5_0",
    "0_x1f", "1_e3",
    "y", "Y", "n", "N", "yes", "No", "ON", "off", "True", "FALSE",
    ".inf", "-.Inf", "+.INF", ".NaN", "~", "null", "",
    "123", "0x1f", "0b101", "-0b1", "1.5",
]


@pytest.mark.parametrize("text", NUMBER_OR_BOOL, ids=[t or "empty" for t in NUMBER_OR_BOOL])
def test_strings_go_yaml_would_not_read_as_strings_are_quoted(text: str) -> None:
    # The table's own check: unquoted, go-yaml v2 (or YAML's merge key) would not read a string,
    # except where PyYAML's own (YAML 1.1) rules already quote it.
    out = render.dumps({"key": text, text: [text]}, "yaml")
    assert _go_yaml_v2_tags(out) == [STR] * 4, out
    assert yaml.safe_load(out) == {"key": text, text: [text]}
    assert not yaml_guard.go_yaml_v2_reads_as_string(text)


@pytest.mark.parametrize("text", ["1e3", ".5e3", "y", "N", "0o17", "08", "1_e3"],
                         ids=["exponent", "dot-exponent", "y", "N", "0o-octal", "08",
                              "underscore-exponent"])
def test_the_go_yaml_table_reads_them_as_non_strings(text: str) -> None:
    """Without quotes these are numbers or bools to go-yaml v2; PyYAML's safe_dump (the old
    output) left them plain."""
    old = yaml.safe_dump({"key": text}, sort_keys=False, default_flow_style=False)
    assert old == f"key: {text}\n"
    assert _go_yaml_v2_tags(old) != [STR, STR]


@pytest.mark.parametrize("data", [
    {"name": "x", "replicas": 3, "ratio": 1.5, "big": 1e20, "tiny": -2e-3, "on": True,
     "off": False, "none": None, "inf": float("inf")},
    {"image": "busybox:1.36", "cmd": ["sh", "-c", "echo 1e3 > /x"], "v": "v1.2.3",
     "path": "/a/b", "time": "2026-01-01T10:00:00Z", "q": "500m", "mem": "1Gi"},
    {"quoted": ["1", "1.0", "true", "yes", "null", "2026-01-01", "0x1F", "1_000", "1:20",
                "<<", "1__"]},
    {"plain": ["1e999", "-1e400", "0o8", "0x", "0b", "1.2.3", "-", "+", ".", "e3", "1e", "abc",
               "Yes!", "no-op", "onion", "0xZZ", "2001-12-14x", ".5_e3", "._5", ".5_", "_1",
               "0x1g"]},
    {"nested": {"list": [{"a": "b"}, [1, 2]], "multi": "line one\nline two\n", "empty": {}}},
    {"unicode": "héllo", "key with space": "value: colon", "#": "hash"},
], ids=["scalars", "kubernetes-strings", "already-quoted", "stay-plain", "nested", "unicode"])
def test_output_that_was_right_is_byte_identical(data: dict[str, Any]) -> None:
    assert render.dumps(data, "yaml") == yaml.safe_dump(data, sort_keys=False,
                                                        default_flow_style=False)


@pytest.mark.waits
def test_cli_yaml_output_quotes_what_kubectl_would_misread() -> None:
    annotations = '{"a": "1e3", "b": "y", "c": "0o17", "d": "plain", "e": "2026-01-01"}'
    out = decider("validate", "-f", "-", "-o", "yaml",
                  stdin=_jobset(annotations=annotations))
    assert out.returncode == 0, out.stderr
    assert "      a: '1e3'\n      b: 'y'\n      c: '0o17'\n      d: plain\n" \
           "      e: '2026-01-01'\n" in out.stdout
    assert yaml.safe_load(out.stdout)["object"]["metadata"]["annotations"] == json.loads(
        annotations)
