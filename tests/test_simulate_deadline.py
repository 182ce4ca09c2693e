""""When does this JobSet hit its deadline?": `decider simulate` on a JobSet with
activeDeadlineSeconds (KEP-1186), in process and over --server, the issue's acceptance rows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from decider.service.server import BackgroundServer
from support.cli_run import run_cli

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = str(ROOT / "examples" / "active-deadline.yaml")
START = "2026-01-01T00:00:00Z"
GATE = ["--feature-gates", "JobSetActiveDeadlineSeconds=true"]


@pytest.fixture(scope="module")
def server():
    with BackgroundServer() as srv:
        yield srv


def simulate(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    code, out, err = run_cli(capsys, "simulate", "-f", EXAMPLE, "--now", START, "-o", "json",
                             *args)
    assert code == 0, err
    return json.loads(out)


@pytest.mark.parametrize(("events", "state", "reason", "end", "deadline"), [
    pytest.param(["--at", "300", "--fail", "trainer-workers-1"], "Failed", "DeadlineExceeded",
                 "2026-01-01T00:15:00Z", "2026-01-01T00:15:00Z",
                 id="a restart at 300s: the clock starts again, the deadline hits at +900s"),
    pytest.param([], "Failed", "DeadlineExceeded", "2026-01-01T00:10:00Z",
                 "2026-01-01T00:10:00Z", id="nothing happens: the deadline hits at +600s"),
    pytest.param(["--at", "300", "--fail", "trainer-workers-1", "--at", "700", "--succeed",
                  "trainer-leader-0"], "Completed", "AllJobsCompleted", "2026-01-01T00:11:40Z",
                 None, id="a success first: Completed, the deadline never hits"),
    pytest.param(["--at", "200", "--suspend", "--at", "800", "--resume"], "Failed",
                 "DeadlineExceeded", "2026-01-01T00:23:20Z", "2026-01-01T00:23:20Z",
                 id="suspended 600s in between: the deadline counts from the resume"),
])
def test_simulate_predicts_the_deadline(capsys: pytest.CaptureFixture[str], events: list[str],
                                        state: str, reason: str, end: str,
                                        deadline: str | None) -> None:
    out = simulate(capsys, *GATE, *events)
    outcome = out["outcome"]
    assert (outcome["terminalState"], outcome["reason"], outcome["endTime"]) == (state, reason,
                                                                                 end)
    assert outcome.get("deadlineExceededTime") == deadline
    if deadline:
        assert "the active deadline (600s) passes at" in outcome["summary"]
        assert outcome["summary"].endswith("the JobSet fails (DeadlineExceeded)")
        # The pass that failed it, at that time, deleted the Jobs that were running first.
        failing = next(s for s in out["steps"] if s["plan"]["status"]["terminalState"])
        assert failing["time"] == deadline
        kinds = [a["type"] for a in failing["plan"]["actions"]]
        assert kinds[:4] == ["DeleteJob"] * 4 and "UpdateStatus" in kinds


def test_without_the_gate_the_deadline_is_not_enforced(capsys: pytest.CaptureFixture[str]) -> None:
    outcome = simulate(capsys, "--at", "300", "--fail", "trainer-workers-1")["outcome"]
    assert outcome["terminalState"] == "" and "deadlineExceededTime" not in outcome
    assert outcome["endTime"] == "2026-01-01T00:05:00Z"


@pytest.mark.waits
def test_over_the_server_the_answer_is_the_same(capsys: pytest.CaptureFixture[str],
                                                server: BackgroundServer) -> None:
    args = [*GATE, "--at", "300", "--fail", "trainer-workers-1"]
    local = simulate(capsys, *args)
    remote = simulate(capsys, *args, "--server", server.target)
    assert remote == local
