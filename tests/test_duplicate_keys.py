"""A key set twice in one mapping is refused, in YAML and in JSON (issue 20, item 8).

`cat a.yaml b.yaml` without a `---` between them is one document whose top-level keys repeat:
PyYAML kept the last of each, so two JobSets became one (the second's name over the first's
spec) and `decide` printed a plan for a JobSet nobody wrote. go-yaml's strict decoding and the
API server's strict field validation (kubectl's default --validate=strict) refuse a field set
twice: `line 5: key "name" already set in map` for a YAML body, `duplicate field
"spec.paused"` for JSON (kubernetes test/integration/apiserver field validation). kubectl's own
YAML-to-JSON step keeps the last silently (kubernetes/kubernetes#125885, open); the decider
refuses instead, since its input never goes through the API server.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from decider_client.documents import load_objects
from decider_client.errors import ObservationError

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "leader-workers.yaml"


@pytest.mark.parametrize("text,problem", [
    pytest.param("kind: ConfigMap\nmetadata: {name: a}\nkind: Secret\n",
                 'line 3, column 1: key "kind" already set in map (first at line 1): two '
                 "objects run together", id="yaml/top-level-kind"),
    pytest.param("kind: ConfigMap\nmetadata:\n  name: a\n  labels: {x: '1', x: '2'}\n",
                 'line 4, column 20: key "x" already set in map (first at line 4)',
                 id="yaml/flow-mapping"),
    pytest.param("kind: ConfigMap\nmetadata:\n  name: a\n  name: a\n",
                 'line 4, column 3: key "name" already set in map (first at line 3)',
                 id="yaml/same-value-twice"),
    pytest.param("kind: ConfigMap\ndata: {1: a, 0x1: b}\n",
                 "key 1 already set in map", id="yaml/keys-compared-as-go-yaml-values"),
    pytest.param("kind: ConfigMap\ndata: {y: a, true: b}\n",
                 "key True already set in map", id="yaml/go-yaml-v2-bools"),
    pytest.param("kind: ConfigMap\ndata: {'a': 1, \"a\": 2}\n",
                 'key "a" already set in map', id="yaml/quoting-does-not-matter"),
    pytest.param("kind: ConfigMap\nbase: &b {a: 1, a: 2}\ndata: {<<: *b}\n",
                 'key "a" already set in map', id="yaml/inside-a-merged-mapping"),
    pytest.param('{"kind": "ConfigMap", "kind": "Secret"}',
                 'duplicate field "kind"', id="json/top-level"),
    pytest.param('{"kind": "Pod", "spec": {"containers": [{"name": "a", "image": "x", '
                 '"image": "y"}]}}',
                 'duplicate field "spec.containers[0].image"', id="json/path-as-the-api-server"),
    pytest.param('{"kind": "ConfigMap", "metadata": {"name": "a"}}\n'
                 '{"kind": "ConfigMap", "metadata": {"name": "b", "name": "c"}}',
                 'document 2: duplicate field "metadata.name"', id="json/second-of-a-stream"),
])
def test_a_key_set_twice_is_refused(text: str, problem: str) -> None:
    with pytest.raises(ObservationError) as exc:
        load_objects(text, "f.yaml")
    assert problem in str(exc.value), str(exc.value)


@pytest.mark.parametrize("text,data", [
    # A merge sets keys the mapping may set again, before or after it: not a duplicate.
    pytest.param("kind: ConfigMap\nbase: &b {a: '1', b: '2'}\ndata: {<<: *b, a: '3'}\n",
                 {"a": "3", "b": "2"}, id="merge-then-override"),
    pytest.param("kind: ConfigMap\nbase: &b {a: '1'}\ndata: {a: '3', <<: *b}\n",
                 {"a": "1"}, id="override-then-merge-as-go-yaml-v2"),
    pytest.param("kind: ConfigMap\nx: &x {a: '1'}\ny: &y {a: '2'}\ndata: {<<: [*x, *y]}\n",
                 {"a": "1"}, id="merged-mappings-share-a-key"),
    pytest.param('kind: ConfigMap\ndata: {"1": a, 2: b}\n', {"1": "a", "2": "b"},
                 id="a-non-string-key-is-written-as-json-writes-it"),
    pytest.param('{"kind": "ConfigMap", "data": {"a": "1", "A": "2"}}', {"a": "1", "A": "2"},
                 id="json-keys-are-case-sensitive"),
])
def test_what_is_not_a_duplicate_reads_as_before(text: str, data: dict) -> None:
    assert load_objects(text)[0]["data"] == data


def test_keys_that_become_one_json_field_are_refused() -> None:
    # YAML tells `1` from "1"; written as JSON, as kubectl sends it, they are one field.
    with pytest.raises(ObservationError) as exc:
        load_objects('kind: ConfigMap\ndata: {"1": a, 1: b}\n---\nkind: Secret\n', "f.yaml")
    assert str(exc.value).startswith('f.yaml: object 1: duplicate field "data.1"'), exc.value


def _decide(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "decider.cli", "decide", "-o", "json", "--now",
                           "2026-01-01T00:00:00Z", *args], input=stdin, capture_output=True,
                          text=True, cwd=ROOT, timeout=120)


@pytest.mark.waits
def test_cat_of_two_jobsets_without_a_separator_is_refused() -> None:
    one = EXAMPLE.read_text()
    two = one.replace("name: trainer\n", "name: trainer-b\n", 1)
    assert yaml.safe_load(one)["metadata"]["name"] == "trainer"
    run_together = _decide("-f", "-", stdin=one + two)
    assert run_together.returncode == 2, run_together.stdout
    assert "Traceback" not in run_together.stderr
    assert 'key "apiVersion" already set in map' in run_together.stderr
    assert "Separate YAML documents with a '---' line" in run_together.stderr
    separated = _decide("-f", "-", stdin=one + "---\n" + two)
    assert separated.returncode == 0, separated.stderr
    assert set(json.loads(separated.stdout)) == {"default/trainer", "default/trainer-b"}
