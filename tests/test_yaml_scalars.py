"""Plain YAML scalars mean what they mean to kubectl: go-yaml v2's resolve() (sigs.k8s.io/yaml
decodes with go.yaml.in/yaml/v2, whose resolve.go is go-yaml v2.4.0's), not PyYAML's YAML 1.1.
Each row of the table is a plain scalar and the value go-yaml v2 gives it in an interface{}."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from decider_client import yaml_guard
from decider_client.documents import load_objects
from decider_client.errors import ObservationError

ROOT = Path(__file__).resolve().parent.parent
NAN = float("nan")
INF = float("inf")

# (id naming the rule, plain scalar, go-yaml v2's value)
PLAIN: list[tuple[str, str, Any]] = [
    # --- null: the map's "", ~, null, Null, NULL
    ("null-empty", "", None),
    ("null-tilde", "~", None),
    ("null-lower", "null", None),
    ("null-title", "Null", None),
    ("null-upper", "NULL", None),
    ("null-mixed-case-is-text", "nULL", "nULL"),
    # --- bools: YAML 1.1's words, y/n included (PyYAML reads y and n as text)
    *[(f"bool-true-{w}", w, True) for w in
      ("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON")],
    *[(f"bool-false-{w}", w, False) for w in
      ("n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF")],
    ("bool-mixed-case-is-text", "yEs", "yEs"),
    ("bool-word-with-more-is-text", "Yes!", "Yes!"),
    ("bool-prefix-is-text", "onion", "onion"),
    # --- ints: strconv.ParseInt(text, 0, 64), underscores dropped first
    ("int-decimal", "123", 123),
    ("int-negative", "-7", -7),
    ("int-plus-sign", "+12", 12),
    ("int-zero", "0", 0),
    ("int-minus-zero", "-0", 0),
    ("int-hex", "0x1F", 31),
    ("int-hex-upper-prefix", "0X1f", 31),
    ("int-hex-negative", "-0x10", -16),
    ("int-binary", "0b101", 5),
    ("int-binary-upper-prefix", "0B11", 3),
    ("int-binary-negative", "-0b1", -1),
    ("int-octal-0o", "0o17", 15),
    ("int-octal-0O", "0O17", 15),
    ("int-octal-0o-negative", "-0o7", -7),
    ("int-octal-leading-zero", "017", 15),
    ("int-octal-leading-zero-negative", "-017", -15),
    ("int-underscores", "1_000", 1000),
    ("int-underscores-anywhere", "1__0_", 10),
    ("int-underscore-after-sign", "+_1", 1),
    ("int-underscore-after-prefix", "0x_1F", 31),
    ("int-underscore-in-octal", "0_7", 7),
    ("int-int64-max", "9223372036854775807", 2**63 - 1),
    ("int-int64-min", "-9223372036854775808", -(2**63)),
    ("int-uint64-unsigned", "18446744073709551615", 2**64 - 1),
    ("int-uint64-hex", "0xFFFFFFFFFFFFFFFF", 2**64 - 1),
    ("int-binary-fallback-signed-minus", "0b-101", -5),
    ("int-binary-fallback-signed-plus", "0b+11", 3),
    # --- past int64/uint64, ParseInt and ParseUint fail and yamlStyleFloat reads a float
    ("float-beyond-uint64", "18446744073709551616", 1.8446744073709552e19),
    ("float-signed-beyond-int64", "+9223372036854775808", 9.223372036854775808e18),
    ("float-below-int64", "-9223372036854775809", -9.223372036854775809e18),
    ("float-hex-beyond-uint64-is-text", "0x10000000000000000", "0x10000000000000000"),
    # --- a leading 0 with an 8 or 9: no octal, but yamlStyleFloat's digits
    ("float-leading-zero-non-octal", "08", 8.0),
    ("float-leading-zero-fraction", "09.5", 9.5),
    ("int-bad-octal-0o-is-text", "0o8", "0o8"),
    ("int-prefix-alone-is-text", "0x", "0x"),
    ("int-bad-hex-is-text", "0xZZ", "0xZZ"),
    ("int-binary-prefix-alone-is-text", "0b", "0b"),
    ("int-lone-sign-is-text", "+", "+"),
    # --- floats: yamlStyleFloat, after underscores are dropped
    ("float-exponent", "1e2", 100.0),
    ("float-exponent-zero", "1e0", 1.0),
    ("float-exponent-upper-plus", "1E+3", 1000.0),
    ("float-exponent-negative", "-2e-3", -0.002),
    ("float-fraction", "1.5", 1.5),
    ("float-trailing-dot", "1.", 1.0),
    ("float-trailing-dot-exponent", "1.e5", 100000.0),
    ("float-signed-leading-dot", "+.5", 0.5),
    ("float-signed-leading-dot-exponent", "-.5E-3", -0.0005),
    ("float-underscore-before-exponent", "1_e3", 1000.0),
    ("float-signed-underscore-after-dot", "-._5", -0.5),
    ("float-overflow-is-text", "1e999", "1e999"),
    ("float-negative-overflow-is-text", "-1e400", "-1e400"),
    ("float-underflow-is-zero", "1e-999", 0.0),
    ("float-exponent-without-digits-is-text", "1e", "1e"),
    ("float-two-dots-is-text", "1.2.3", "1.2.3"),
    ("float-no-mantissa-is-text", "e3", "e3"),
    # --- a leading dot: strconv.ParseFloat on the text as it is (underscores between digits)
    ("float-leading-dot", ".5", 0.5),
    ("float-leading-dot-exponent", ".5e3", 500.0),
    ("float-leading-dot-underscore-between-digits", ".5_0", 0.5),
    ("float-leading-dot-underscore-first-is-text", "._5", "._5"),
    ("float-leading-dot-underscore-last-is-text", ".5_", ".5_"),
    ("float-leading-dot-underscore-before-e-is-text", ".5_e3", ".5_e3"),
    ("float-leading-dot-overflow-is-text", ".5e999", ".5e999"),
    ("float-dot-alone-is-text", ".", "."),
    # --- the map's infinities and NaNs: these spellings only
    *[(f"float-inf-{w}", w, INF) for w in (".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF")],
    *[(f"float-minus-inf-{w}", w, -INF) for w in ("-.inf", "-.Inf", "-.INF")],
    *[(f"float-nan-{w}", w, NAN) for w in (".nan", ".NaN", ".NAN")],
    ("float-inf-mixed-case-is-text", ".iNf", ".iNf"),
    ("float-signed-nan-is-text", "+.nan", "+.nan"),
    ("float-minus-nan-is-text", "-.nan", "-.nan"),
    # --- text to go-yaml that PyYAML's YAML 1.1 reads as something else
    ("text-base60-int", "1:30", "1:30"),  # PyYAML: 90
    ("text-base60-int-negative", "-1:30", "-1:30"),  # PyYAML: -90
    ("text-base60-float", "1:30.5", "1:30.5"),  # PyYAML: 90.5
    ("text-base60-long", "190:20:30", "190:20:30"),  # PyYAML: 685230
    ("text-value-key-tag", "=", "="),  # PyYAML: !!value, no constructor: an error
    ("text-merge-key-as-a-value", "<<", "<<"),  # PyYAML: !!merge, no constructor: an error
    ("text-timestamp-date", "2026-01-01", "2026-01-01"),  # PyYAML: a date
    ("text-timestamp-space", "2026-01-01 10:00:00", "2026-01-01 10:00:00"),
    ("text-timestamp-offset", "2001-12-14t21:59:43.10-05:00", "2001-12-14t21:59:43.10-05:00"),
    ("text-plain", "busybox", "busybox"),
    ("text-quantity", "500m", "500m"),
    ("text-version", "v1.2.3", "v1.2.3"),
    ("text-leading-underscore", "_1", "_1"),
]

IDS = [row[0] for row in PLAIN]
assert len(set(IDS)) == len(IDS)


def _same(got: Any, want: Any) -> bool:
    if isinstance(want, float) and math.isnan(want):
        return isinstance(got, float) and math.isnan(got)
    # type() too: True == 1 == 1.0, and a bool, an int and a float are not the same value
    # to the API server's decoder.
    return type(got) is type(want) and bool(got == want)


def _value(document: str) -> Any:
    return yaml_guard.load_all(document)[0]["v"]


@pytest.mark.parametrize("text,value", [row[1:] for row in PLAIN], ids=IDS)
def test_a_plain_scalar_is_what_go_yaml_v2_reads(text: str, value: Any) -> None:
    assert _same(yaml_guard.go_yaml_v2_value(text), value)
    # Wherever it stands: a mapping's value, a block list's item, a flow list's item.
    assert _same(_value(f"v: {text}\n"), value)
    assert _same(yaml_guard.load_all(f"- {text}\n")[0][0], value)
    if text:  # an empty flow item is no item
        assert _same(_value(f"v: [{text}]\n")[0], value)
    assert yaml_guard.go_yaml_v2_reads_as_string(text) is isinstance(value, str)


QUOTED = [row for row in PLAIN if row[1]]


@pytest.mark.parametrize("text", [row[1] for row in QUOTED], ids=[row[0] for row in QUOTED])
def test_a_quoted_scalar_is_always_a_string(text: str) -> None:
    assert _value(f"v: '{text}'\n") == text
    assert _value(f'v: "{text}"\n') == text
    assert _value(f"v: !!str {text}\n") == text
    # And a string the YAML writer writes comes back the same string: it quotes what needs it.
    assert yaml_guard.load_all(yaml_guard.dump({"v": text}))[0]["v"] == text


def test_the_empty_string_quoted_is_a_string() -> None:
    assert _value("v: ''\n") == ""
    assert _value('v: ""\n') == ""


def test_the_non_specific_tag_keeps_the_text() -> None:
    # "!" is a tag go-yaml v2 cannot resolve: the text (PyYAML resolved it as if plain).
    assert _value("v: ! 12\n") == "12"
    assert _value("v: ! y\n") == "y"
    assert _value('v: ! "1e3"\n') == "1e3"


def test_explicit_tags_still_read_as_before() -> None:
    assert _value('v: !!int "12"\n') == 12
    assert _value("v: !!float 1\n") == 1.0
    assert _value("v: !!bool true\n") is True
    assert _value("v: !!null ''\n") is None


def test_keys_resolve_as_values_do_and_reach_json_as_kubectl_sends_them() -> None:
    text = "kind: ConfigMap\ndata:\n  y: a\n  0x1F: b\n  1:30: c\n  '1': d\n  ~: e\n"
    doc = yaml_guard.load_all(text)[0]
    assert doc["data"] == {True: "a", 31: "b", "1:30": "c", "1": "d", None: "e"}
    # sigs.k8s.io/yaml writes a bool key as "true", an int key in decimal.
    assert load_objects(text.replace("  ~: e\n", ""))[0]["data"] == {
        "true": "a", "31": "b", "1:30": "c", "1": "d"}


# --- merge keys: go-yaml v2 supports `<<`, and applies it where it stands --------------------

@pytest.mark.parametrize("text,value", [
    ("base: &b {a: 1, b: 2}\nv: {<<: *b, c: 3}\n", {"a": 1, "b": 2, "c": 3}),
    ("base: &b {a: 1, b: 2}\nv: {<<: *b, a: 9}\n", {"a": 9, "b": 2}),
    ("base: &b {a: 1, b: 2}\nv: {a: 9, <<: *b}\n", {"a": 1, "b": 2}),
    ("v: {<<: [{a: 1}, {a: 2, c: 4}], b: 0}\n", {"a": 1, "c": 4, "b": 0}),
    ("v: {<<: {a: 1}, <<: {a: 2, b: 3}}\n", {"a": 2, "b": 3}),
    ("v: {<<: {<<: {a: 1, z: 0}, a: 2}, b: 3}\n", {"a": 2, "z": 0, "b": 3}),
    ("v: {'<<': {a: 1}}\n", {"<<": {"a": 1}}),
    ('v: {"<<": 5}\n', {"<<": 5}),
    ("v: {! <<: {a: 1}}\n", {"a": 1}),
    ("v: [<<, '<<']\n", ["<<", "<<"]),
], ids=["merge-then-own-keys", "own-key-after-merge-wins", "merge-after-own-key-wins",
        "list-first-mapping-wins", "two-merge-keys-in-order", "nested-merge",
        "single-quoted-is-a-key", "double-quoted-is-a-key", "non-specific-tag-still-merges",
        "merge-key-as-a-value-is-text"])
def test_merge_keys_as_go_yaml_v2_applies_them(text: str, value: Any) -> None:
    # go-yaml v2 decodes a mapping's keys in order, a `<<` among them setting the merged keys
    # over those already set (decode.go's mapping()); PyYAML (and go-yaml v3) let the
    # mapping's own keys win wherever they stand: "merge-after-own-key-wins" differs.
    assert _value(text) == value


def test_a_merge_of_a_scalar_is_refused() -> None:
    with pytest.raises(ObservationError, match="expected a mapping or list of mappings"):
        load_objects("kind: A\nspec: {<<: 1}\n")
    with pytest.raises(ObservationError, match="expected a mapping for merging"):
        load_objects("kind: A\nspec: {<<: [{a: 1}, 2]}\n")


# --- the CLI: the file means to it what it means to kubectl ---------------------------------

JOBSET = """apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: mini
  labels:
    team: {label}
spec:
  replicatedJobs:
  - name: w
    replicas: {replicas}
    template:
      spec:
        parallelism: {parallelism}
        completions: {completions}
        template:
          spec:
            containers:
            - name: m
              image: busybox
"""


def _validate(tmp_path: Path, label: str = "ml", replicas: str = "1", parallelism: str = "1",
              completions: str = "1") -> subprocess.CompletedProcess[str]:
    path = tmp_path / "js.yaml"
    path.write_text(JOBSET.format(label=label, replicas=replicas, parallelism=parallelism,
                                  completions=completions))
    out = subprocess.run([sys.executable, "-m", "decider.cli", "validate", "-f", str(path)],
                         capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert "Traceback" not in out.stderr
    return out


@pytest.mark.waits
@pytest.mark.parametrize("replicas,parallelism,completions,want", [
    ("1e0", "2", "2", (1, 2, 2)),
    ("1e2", "0x2", "1_000", (100, 2, 1000)),
    ("2.0", "0o3", "0b11", (2, 3, 3)),
    ("+3", "010", "1E+1", (3, 8, 10)),
], ids=["exponent", "hex-and-underscores", "float-octal-binary", "sign-leading-zero-octal"])
def test_cli_reads_numbers_as_kubectl_does(tmp_path: Path, replicas: str, parallelism: str,
                                           completions: str, want: tuple[int, int, int]) -> None:
    out = _validate(tmp_path, replicas=replicas, parallelism=parallelism,
                    completions=completions)
    assert out.returncode == 0, out.stdout + out.stderr
    rj = json.loads(out.stdout)["object"]["spec"]["replicatedJobs"][0]
    spec = rj["template"]["spec"]
    assert (rj["replicas"], spec["parallelism"], spec["completions"]) == want


@pytest.mark.waits
def test_cli_refuses_a_base_60_replicas_kubectl_reads_as_text(tmp_path: Path) -> None:
    out = _validate(tmp_path, replicas="1:30")  # 90 to PyYAML, the text "1:30" to kubectl
    assert out.returncode == 2
    errors = json.loads(out.stdout)["errors"]
    assert errors[0]["field"] == "spec.replicatedJobs[0].replicas"
    assert 'in body must be of type integer: "string"' in errors[0]["message"]


@pytest.mark.waits
@pytest.mark.parametrize("label", ["y", "N", "on", "Off", "yes"])
def test_cli_refuses_a_label_kubectl_reads_as_a_bool(tmp_path: Path, label: str) -> None:
    # kubectl sends `team: true`; the API server refuses a bool where a label's string goes.
    out = _validate(tmp_path, label=label)
    assert out.returncode == 2, out.stdout
    assert json.loads(out.stdout)["errors"] == [
        {"field": "metadata.labels[team]", "message": "must be a string"}]


@pytest.mark.waits
@pytest.mark.parametrize("label", ["'y'", '"on"', "yep", "'1e3'"])
def test_cli_accepts_the_label_quoted_or_not_a_bool(tmp_path: Path, label: str) -> None:
    out = _validate(tmp_path, label=label)
    assert out.returncode == 0, out.stdout + out.stderr
    assert json.loads(out.stdout)["object"]["metadata"]["labels"] == {
        "team": label.strip("'\"")}
