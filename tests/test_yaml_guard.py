"""Manifests read from YAML keep Kubernetes' decoder limits: no alias bomb, no stack overflow,
no cycle; ordinary anchors, aliases and merge keys still read as PyYAML reads them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from decider_client import yaml_guard
from decider_client.documents import load_objects
from decider_client.errors import ObservationError

ROOT = Path(__file__).resolve().parent.parent
HEAD = "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: x}\n"


def _laughs(levels: int) -> str:
    """Each level a list of nine aliases of the one before: 9**levels strings."""
    lines = ['l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]" for i in range(1, levels)]
    return HEAD + "spec:\n  " + "\n  ".join(lines) + "\n"


def _nested(depth: int) -> str:
    return HEAD + "spec: " + "[" * (depth - 1) + "]" * (depth - 1) + "\n"


def _alias_chain(links: int) -> str:
    """Shallow as written, but each alias nests the one before a level deeper."""
    lines = ["c0: &c0 [x]"] + [f"c{i}: &c{i} [*c{i - 1}]" for i in range(1, links)]
    return HEAD + "spec:\n  " + "\n  ".join(lines) + "\n"


@pytest.mark.parametrize("text,needle", [
    (_laughs(6), "excessive aliasing"),
    (_nested(yaml_guard.MAX_DEPTH + 1), f"nested more than {yaml_guard.MAX_DEPTH} levels deep"),
    (_nested(100_000), f"nested more than {yaml_guard.MAX_DEPTH} levels deep"),
    (_alias_chain(yaml_guard.MAX_DEPTH + 10), f"aliases nest it more than "
                                              f"{yaml_guard.MAX_DEPTH} levels deep"),
    (HEAD + "spec: &s {replicatedJobs: [], again: *s}\n",
     "an alias refers to a node that contains it"),
], ids=["go-yaml-alias-budget-531441", "one-level-too-deep",
        "stack-overflow-depth", "deep-through-aliases", "self-reference"])
def test_refused_with_the_place_named(text: str, needle: str) -> None:
    with pytest.raises(ObservationError) as exc:
        load_objects(text, "f.yaml")
    message = str(exc.value)
    assert needle in message
    assert "at line" in message and "column" in message


def test_ordinary_anchors_aliases_and_merge_keys_read_as_before() -> None:
    text = HEAD + """spec:
  base: &env [{name: A, value: "1"}, {name: B, value: "2"}]
  defaults: &defaults {restartPolicy: OnFailure, backoffLimit: 0}
  replicatedJobs:
""" + "".join(f"""  - name: r{i}
    env: *env
    template: {{<<: *defaults, completions: {i + 1}}}
""" for i in range(60))
    assert load_objects(text) == [yaml.safe_load(text)]
    spec = load_objects(text)[0]["spec"]
    assert spec["replicatedJobs"][59]["template"] == {
        "restartPolicy": "OnFailure", "backoffLimit": 0, "completions": 60}


def test_the_limits_themselves_are_allowed() -> None:
    assert load_objects(_nested(yaml_guard.MAX_DEPTH))
    assert load_objects(_alias_chain(yaml_guard.MAX_DEPTH - 5))
    # A document mostly of aliases, but small: go-yaml does not police under 1,000 nodes.
    assert load_objects(_laughs(3))


@pytest.mark.parametrize("decoded,ratio", [
    (1_000, 0.99), (400_000, 0.99), (2_200_000, 0.545), (4_000_000, 0.10), (9_000_000, 0.10),
], ids=["small", "range-low", "midway", "range-high", "huge"])
def test_the_alias_budget_is_go_yamls(decoded: int, ratio: float) -> None:
    assert yaml_guard.allowed_alias_ratio(decoded) == pytest.approx(ratio)


@pytest.mark.waits
def test_the_cli_says_it_in_one_line(tmp_path: Path) -> None:
    # The billion laughs (9**9 strings) in a subprocess: unguarded, it would take gigabytes.
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(_laughs(9))
    done = subprocess.run([sys.executable, "-m", "decider.cli", "decide", "-f", str(bomb),
                           "--now", "2026-01-01T00:00:00Z"], capture_output=True, text=True,
                          cwd=ROOT, timeout=60)
    assert done.returncode == 2
    assert "excessive aliasing" in done.stderr and "Traceback" not in done.stderr
