"""Without -o, `decide` and `simulate` print what kubectl would: a table of the actions (or the
passes) and the sentences that explain them. Every row is checked against the same command's
-o json, so the table says what the plan says."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from decider.service.server import BackgroundServer
from support.cli_run import leader_workers_failed, run_cli

ROOT = Path(__file__).resolve().parent.parent
LEADER = ROOT / "examples" / "leader-workers.yaml"
TRAINER = ROOT / "examples" / "trainer-restarted.yaml"
NOW = "2026-01-01T00:00:00Z"
START = "2026-01-01T01:00:00Z"


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    code, out, err = run_cli(capsys, *args)
    assert code == 0, err
    return out


def _columns(header: str, line: str) -> list[str]:
    """A row cut where the header's columns start (the last column runs to the end)."""
    starts = [header.index(name) for name in header.split()]
    return [line[a:b].rstrip() for a, b in zip(starts, [*starts[1:], None], strict=True)]


def _table(text: str) -> tuple[str, list[str], list[str]]:
    """(header, rows, the lines after the table's blank line)."""
    lines = text.rstrip("\n").split("\n")
    blank = lines.index("")
    return lines[0], lines[1:blank], lines[blank + 1:]


def _failed_child() -> str:
    js, job = leader_workers_failed()
    return yaml.safe_dump_all([js, job])


def _check_plan_table(text: str, plan: dict[str, Any]) -> None:
    header, rows, rest = _table(text)
    assert header.split() == ["TYPE", "NAME", "DETAIL"]
    assert len(rows) == len(plan["actions"])
    for row, action in zip(rows, plan["actions"], strict=True):
        kind, name, detail = _columns(header, row)
        assert (kind, name) == (action["type"], action["name"])
        if "event" in action:
            e = action["event"]
            assert detail == f"{e['type']} {e['reason']}: {e['message']}"
        else:
            assert detail == action["reason"]
    assert rest[:len(plan["explanation"])] == plan["explanation"]


def test_decide_prints_a_table_of_the_actions_then_the_explanation(
        capsys: pytest.CaptureFixture[str]) -> None:
    args = ["decide", "-f", str(LEADER), "--now", NOW]
    text = _cli(capsys, *args)
    plan = json.loads(_cli(capsys, *args, "-o", "json"))
    _check_plan_table(text, plan)
    assert "CreateJob      trainer-workers-2   replica 2 of replicated job workers is missing" \
        in text.replace("CreateJob       ", "CreateJob      ")
    # Short: a line per action and per sentence, where -o json is hundreds of lines.
    assert len(text.splitlines()) == 1 + 6 + 1 + 3
    assert len(json.dumps(plan, indent=2).splitlines()) > 300


def test_events_show_their_type_reason_and_message(capsys: pytest.CaptureFixture[str],
                                                   tmp_path: Path) -> None:
    path = tmp_path / "failed.yaml"
    path.write_text(_failed_child())
    args = ["decide", "-f", str(path), "--now", NOW]
    plan = json.loads(_cli(capsys, *args, "-o", "json"))
    assert any(a["type"] == "Event" for a in plan["actions"])
    _check_plan_table(_cli(capsys, *args), plan)


def test_a_message_cannot_break_the_table_or_drive_the_terminal(
        capsys: pytest.CaptureFixture[str]) -> None:
    args = ["simulate", "-f", str(TRAINER), "--now", START,
            "--fail", "trainer-workers-1:PodFailurePolicy:line one\nline two\x1b[2J\tend"]
    sim = json.loads(_cli(capsys, *args, "-o", "json"))
    assert sim["steps"][0]["events"][0]["message"] == "line one\nline two\x1b[2J\tend"
    text = _cli(capsys, *args)
    assert "\x1b" not in text and "\t" not in text
    header, rows, _ = _table(text)
    assert len(rows) == len(sim["steps"])
    assert _columns(header, rows[0])[2] == (
        "JobFailed trainer-workers-1 (PodFailurePolicy: line one line two\\x1b[2J end)")


def test_several_jobsets_print_a_section_each(capsys: pytest.CaptureFixture[str],
                                              tmp_path: Path) -> None:
    other = yaml.safe_load(LEADER.read_text())
    other["metadata"].update(name="other", uid="0b0b0b0b-0000-4000-8000-000000000002")
    path = tmp_path / "two.yaml"
    path.write_text(LEADER.read_text() + "\n---\n" + yaml.safe_dump(other))
    args = ["decide", "-f", str(path), "--now", NOW]
    plans = json.loads(_cli(capsys, *args, "-o", "json"))
    sections = _cli(capsys, *args).rstrip("\n").split("\n\nJobSet ")
    assert [s.split("\n", 1)[0].removeprefix("JobSet ") for s in sections] == list(plans)
    for section, plan in zip(sections, plans.values(), strict=True):
        _check_plan_table(section.split("\n", 1)[1] + "\n", plan)


def test_simulate_prints_a_row_per_pass_then_the_outcome(
        capsys: pytest.CaptureFixture[str]) -> None:
    args = ["simulate", "-f", str(TRAINER), "--now", START, "--fail", "trainer-workers-1",
            "--at", "600", "--fail", "trainer-workers-0"]
    sim = json.loads(_cli(capsys, *args, "-o", "json"))
    header, rows, rest = _table(_cli(capsys, *args))
    assert header.split() == ["PASS", "AT", "EVENTS", "ACTIONS", "EXPLANATION"]
    assert len(rows) == len(sim["steps"]) == sim["outcome"]["passes"]
    for row, step in zip(rows, sim["steps"], strict=True):
        number, at, events, actions, explanation = _columns(header, row)
        assert (number, at) == (str(step["pass"]), f"{step['at']}s")
        assert explanation == "; ".join(step["plan"]["explanation"])
        types = [a["type"] for a in step["plan"]["actions"]]
        assert actions == (", ".join(f"{types.count(t)} {t}" if types.count(t) > 1 else t
                                     for t in dict.fromkeys(types)) or "<none>")
        assert events == (", ".join(f"JobFailed {e['job']} ({e['reason']})"
                                    for e in step["events"]) or "<none>")
    assert rest == [
        "Outcome: Failed (ReachedMaxRestarts) after 9 passes, at rest at 2026-01-01T01:10:00Z",
        "Restarts: 2 (2 count towards maxRestarts, 0 left)",
        sim["outcome"]["summary"]]


def test_json_and_yaml_print_what_they_always_printed(
        capsys: pytest.CaptureFixture[str]) -> None:
    args = ["simulate", "-f", str(TRAINER), "--now", START, "--fail", "trainer-workers-1"]
    as_json = _cli(capsys, *args, "-o", "json")
    assert list(json.loads(as_json)) == ["steps", "outcome"]
    assert yaml.safe_load(_cli(capsys, *args, "-o", "yaml")) == json.loads(as_json)
    plan = _cli(capsys, "decide", "-f", str(LEADER), "--now", NOW, "-o", "json")
    assert list(json.loads(plan)) == ["actions", "status", "requeueAfterSeconds", "explanation"]


@pytest.mark.waits
@pytest.mark.parametrize("command", [
    ["decide", "-f", str(LEADER), "--now", NOW],
    ["simulate", "-f", str(TRAINER), "--now", START, "--fail", "trainer-workers-1"],
], ids=["decide", "simulate"])
def test_a_server_prints_the_same_table(command: list[str],
                                        capsys: pytest.CaptureFixture[str]) -> None:
    local = _cli(capsys, *command)
    with BackgroundServer() as server:
        remote = _cli(capsys, *command, "--server", server.target)
    assert remote == local
