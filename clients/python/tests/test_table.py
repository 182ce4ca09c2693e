"""decider_client.table: plans and simulations as kubectl prints objects."""

from __future__ import annotations

from typing import Any

import pytest

from decider_client import table


def _plan(**extra: Any) -> dict[str, Any]:
    return {"actions": [
        {"type": "CreateJob", "name": "js-a-0",
         "reason": "replica 0 of replicated job a is missing"},
        {"type": "Event", "name": "js", "event": {"type": "Warning", "reason": "Restarting",
                                                  "message": "job js-a-0 failed"}},
        {"type": "UpdateStatus", "name": "js"}],
        "explanation": ["first sentence", "second sentence"], **extra}


def test_a_plan_is_a_table_a_blank_line_and_the_sentences() -> None:
    assert table.plan(_plan()) == (
        "TYPE           NAME     DETAIL\n"
        "CreateJob      js-a-0   replica 0 of replicated job a is missing\n"
        "Event          js       Warning Restarting: job js-a-0 failed\n"
        "UpdateStatus   js       <none>\n"
        "\n"
        "first sentence\n"
        "second sentence\n")


@pytest.mark.parametrize(("extra", "line"), [
    pytest.param({"requeueAfterSeconds": 5, "requeueAfter": "4.012s"},
                 "Requeue after 4.012s: the next pass is due then, whatever changes.",
                 id="exact-duration"),
    pytest.param({"requeueAfterSeconds": 30},
                 "Requeue after 30s: the next pass is due then, whatever changes.",
                 id="whole-seconds-only"),
])
def test_a_requeue_is_said_last(extra: dict[str, Any], line: str) -> None:
    assert table.plan(_plan(**extra)).splitlines()[-1] == line


def test_an_empty_plan_says_so() -> None:
    assert table.plan({"actions": [], "explanation": ["nothing to do"]}) == \
        "No actions.\n\nnothing to do\n"


def test_several_plans_are_sections_headed_by_their_jobset() -> None:
    text = table.plans({"ns/a": {"actions": [], "explanation": ["x"]},
                        "ns/b": {"actions": [], "explanation": ["y"]}})
    assert text == "JobSet ns/a\nNo actions.\n\nx\n\nJobSet ns/b\nNo actions.\n\ny\n"


@pytest.mark.parametrize(("text", "shown"), [
    pytest.param("two\nlines", "two lines", id="newline"),
    pytest.param("tab\there", "tab here", id="tab"),
    pytest.param("clear\x1b[2Jscreen", "clear\\x1b[2Jscreen", id="escape-sequence"),
    pytest.param("bell\x07", "bell\\x07", id="bell"),
    pytest.param("c1\x9bcsi", "c1\\x9bcsi", id="c1-control"),
    pytest.param("line\u2028separator", "line separator", id="unicode-line-separator"),
])
def test_control_characters_are_shown_not_obeyed(text: str, shown: str) -> None:
    row = table.plan({"actions": [{"type": "Event", "name": "js",
                                   "event": {"type": "Normal", "reason": "R", "message": text}}],
                      "explanation": []}).splitlines()[1]
    assert row.endswith(f"Normal R: {shown}")


def test_wide_characters_keep_the_columns_aligned() -> None:
    text = table.plan({"actions": [{"type": "CreateJob", "name": "训练-0", "reason": "r"},
                                   {"type": "CreateJob", "name": "train-0", "reason": "r"}],
                       "explanation": []})
    header, wide, narrow = text.splitlines()[:3]
    # Two columns per wide character: "训练-0" takes 6, as "train-" + 1 does not.
    assert wide.index(" r") + 2 == narrow.index(" r")
    assert narrow.index(" r") + 1 == header.index("DETAIL")


def test_a_simulation_is_a_row_per_pass_then_the_outcome() -> None:
    sim = {"steps": [
        {"pass": 1, "at": 0, "events": [{"type": "JobFailed", "job": "js-a-0",
                                         "reason": "PodFailurePolicy", "message": "evicted"}],
         "plan": _plan()},
        {"pass": 2, "at": 60, "events": [{"type": "JobSetSuspended"}],
         "plan": {"actions": [{"type": "DeleteJob", "name": "x"}] * 3, "explanation": []}}],
        "outcome": {"terminalState": "", "reason": "", "restarts": 1,
                    "restartsCountTowardsMax": 1, "restartsLeft": 2, "summary": "it restarts",
                    "passes": 2, "settled": False, "endTime": "2026-01-01T00:01:00Z",
                    "eventsNotApplied": ["JobSucceeded js-b-0"]}}
    assert table.simulation(sim) == (
        "PASS   AT    EVENTS                                         ACTIONS"
        "                          EXPLANATION\n"
        "1      0s    JobFailed js-a-0 (PodFailurePolicy: evicted)   CreateJob, Event,"
        " UpdateStatus   first sentence; second sentence\n"
        "2      60s   JobSetSuspended                                3 DeleteJob"
        "                      <none>\n"
        "\n"
        "Outcome: still running after 2 passes, not at rest when the passes ran out "
        "(--max-passes), at 2026-01-01T00:01:00Z\n"
        "Restarts: 1 (1 count towards maxRestarts, 2 left)\n"
        "it restarts\n"
        "Events never applied (their Job never existed): JobSucceeded js-b-0\n")
