"""Decision records (issue 9): `decider serve --decision-log` writes one JSON line per decision;
`decider replay` decides them again: 0 when every answer is the logged one, 1 naming those that
differ, 2 for a file that is not a decision log. Writing never blocks a decision."""

from __future__ import annotations

import io
import json
import logging
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml
from properties.strategies import to_request

from decider.core.model import Observed
from decider.service.server import BackgroundServer
from decider.telemetry import decision_log
from decider.telemetry.decision_log import DecisionLog
from decider_api.v1 import decider_pb2 as pb
from decider_api.v1 import decider_pb2_grpc as pb_grpc
from decider_client import observe
from support.builders import NOW, job, jobset, rjob
from support.waiting import HANG_GUARD, wait_for

pytestmark = pytest.mark.waits

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "leader-workers.yaml"


def _replay(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "decider.cli", "replay", str(path)],
                          capture_output=True, text=True, cwd=ROOT, timeout=60)


@pytest.fixture(scope="module")
def logged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A decision log of real traffic: plans, a restart, a refusal and the other RPCs."""
    path = tmp_path_factory.mktemp("log") / "decisions.jsonl"
    js = yaml.safe_load(EXAMPLE.read_text())
    failing = to_request(Observed(
        jobset=jobset(rjob("workers", 2), failurePolicy={"maxRestarts": 2}), now=NOW,
        jobs=[job("workers", 0, state="failed"), job("workers", 1)]))
    with BackgroundServer(decision_log=str(path)) as srv, \
            grpc.insecure_channel(srv.target) as channel:
        stub = pb_grpc.DeciderStub(channel)
        stub.Decide(observe.build_decide_request(js, [], NOW), timeout=10)
        stub.Decide(failing, timeout=10)
        with pytest.raises(grpc.RpcError):
            stub.Decide(pb.DecideRequest(jobset_json="{", now=failing.now), timeout=10)
        stub.Validate(pb.ValidateRequest(object_json=json.dumps(js)), timeout=10)
        stub.PlanGang(pb.PlanGangRequest(object_json=json.dumps(js)), timeout=10)
        stub.PodSets(pb.PodSetsRequest(object_json=json.dumps(js)), timeout=10)
    return path


def test_every_decision_is_one_line_with_its_ids_request_and_answer(logged: Path) -> None:
    records = [json.loads(line) for line in logged.read_text().splitlines()]
    assert [r["method"] for r in records] == ["Decide", "Decide", "Decide", "Validate",
                                             "PlanGang", "PodSets"]
    first = records[0]
    assert first["jobset"] == {"namespace": "default", "name": "trainer",
                               "uid": "6f1d2c3b-0a9e-4c47-9a43-8d7b3f2e1a05"}
    assert first["code"] == "OK" and first["response"]["decisionId"] == first["decision_id"]
    assert first["input_digest"].startswith("sha256:") and first["version"]
    assert first["latency_seconds"] > 0 and first["time"].endswith("Z")
    assert "jobsetJson" in first["request"]
    refused = records[2]
    assert refused["code"] == "INVALID_ARGUMENT"
    assert refused["status"]["message"].startswith("jobset_json: is not valid JSON")


def test_replay_of_an_untouched_log_finds_no_difference(logged: Path) -> None:
    done = _replay(logged)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout == ""
    assert "replayed 6 decision(s), 0 differ" in done.stderr


def test_replay_names_a_decision_that_differs(logged: Path, tmp_path: Path) -> None:
    records = [json.loads(line) for line in logged.read_text().splitlines()]
    # A decision made differently: the restart recorded one restart too many.
    records[1]["response"]["status"]["restarts"] = 7
    # And a refusal worded differently.
    records[2]["status"]["message"] = "something else"
    changed = tmp_path / "changed.jsonl"
    changed.write_text("".join(json.dumps(r) + "\n" for r in records))
    done = _replay(changed)
    assert done.returncode == 1
    reports = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(r["line"], r["method"]) for r in reports] == [(2, "Decide"), (3, "Decide")]
    assert reports[0]["decision_id"] == records[1]["decision_id"]
    assert reports[0]["differences"] == ["status.restarts: logged 7, now 1"]
    assert reports[1]["differences"][0].startswith('status.message: logged "something else"')
    assert "2 differ" in done.stderr


def test_replay_names_a_value_that_became_the_default_as_that_value(logged: Path,
                                                                    tmp_path: Path) -> None:
    """protobuf's JSON leaves out a field at its default: an answer whose restarts became 0 was
    reported as 'now null' (issue 20, item 10)."""
    records = [json.loads(line) for line in logged.read_text().splitlines()]
    assert "restarts" not in records[0]["response"]["status"]
    records[0]["response"]["status"]["restarts"] = 3
    changed = tmp_path / "changed.jsonl"
    changed.write_text("".join(json.dumps(r) + "\n" for r in records))
    done = _replay(changed)
    assert done.returncode == 1
    (report,) = [json.loads(line) for line in done.stdout.splitlines()]
    assert report["differences"] == ["status.restarts: logged 3, now 0"]


def test_replay_refuses_a_file_that_is_not_a_decision_log(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"method": "Decide", "request": {}}\nnot json\n')
    done = _replay(bad)
    assert done.returncode == 2
    assert "line 2: not JSON" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("line,needle", [
    ('{"method": "Decide", "request": ' + '{"a":' * 100_000 + "1" + "}" * 100_001,
     "line 1: not JSON the decider reads: nested too deeply"),
    ('{"method": "Decide", "request": {}, "status": [1, 2]}',
     "line 1: status: must be an object with code and message"),
], ids=["nested-past-the-parser", "status-not-an-object"])
def test_replay_names_the_line_of_a_hostile_record(tmp_path: Path, line: str,
                                                   needle: str) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(line + "\n")
    done = _replay(bad)
    assert done.returncode == 2
    assert needle in done.stderr and "Traceback" not in done.stderr


class _Stalled(io.StringIO):
    """A log destination that blocks, as a full disk or a stopped pipe reader would, until
    released (or a hang guard passes)."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.returned = 0

    def write(self, text: str) -> int:
        self.release.wait(HANG_GUARD)
        self.returned += 1
        return super().write(text)


def test_a_stalled_log_drops_lines_and_never_blocks_a_decision(
        monkeypatch: pytest.MonkeyPatch) -> None:
    stalled = _Stalled()
    drops: list[int] = []
    log = DecisionLog("test", max_queue=2, stream=stalled, on_drop=lambda: drops.append(1))
    # What the submitting thread waits on, if anything: a condition (a full queue's put, an
    # Event) or the clock.
    me, waited = threading.get_ident(), []

    def spying(name: str, real: Any) -> Any:
        def spy(*args: Any, **kwargs: Any) -> Any:
            if threading.get_ident() == me:
                waited.append(name)
            return real(*args, **kwargs)
        return spy

    for owner, name in ((threading.Condition, "wait"), (time, "sleep")):
        monkeypatch.setattr(owner, name, spying(name, getattr(owner, name)))
    for i in range(50):
        log.submit(f'{{"n": {i}}}')
    monkeypatch.undo()
    # No submit waited, not even briefly, and all returned while the writer was stalled.
    assert waited == []
    assert stalled.returned == 0
    assert log.dropped >= 47 and len(drops) == log.dropped
    stalled.release.set()
    log.close()
    assert 1 <= log.written <= 3


class _FullDisk(io.StringIO):
    """A destination whose writes fail with ENOSPC until `space` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.space = threading.Event()

    def write(self, text: str) -> int:
        if not self.space.is_set():
            raise OSError(28, "No space left on device")
        return super().write(text)


def test_a_full_disk_is_counted_and_reported_once_not_per_line(caplog, monkeypatch) -> None:
    # One report interval covers the test, however long a busy machine takes over it.
    monkeypatch.setattr(decision_log, "REPORT_SECONDS", 3600.0)
    caplog.set_level(logging.INFO, logger="decider.decision_log")
    disk = _FullDisk()
    drops: list[int] = []
    log = DecisionLog("decisions.jsonl", stream=disk, on_drop=lambda: drops.append(1))
    for i in range(100):
        log.submit(f'{{"n": {i}}}')
    wait_for(lambda: log.dropped >= 100, what="every line dropped")
    # Every lost line is in the metric (on_drop), not only those a full queue dropped.
    assert log.dropped == len(drops) == 100
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1
    assert "No space left on device; 1 line(s) dropped" in errors[0].getMessage()
    disk.space.set()
    log.submit('{"n": "after"}')
    wait_for(lambda: log.written >= 1, what="the line written")
    assert log.written == 1 and disk.getvalue() == '{"n": "after"}\n'
    log.close()
    (again,) = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert "writing again; 99 line(s) dropped since the last report" in again.getMessage()


def _wait_written(log: DecisionLog, n: int) -> None:
    wait_for(lambda: log.written >= n, what=f"{n} line(s) written")
    assert log.written == n


@pytest.mark.parametrize("rotate", ["rename", "delete", "rename-and-create"],
                         ids=["logrotate-create-later", "deleted", "logrotate-default"])
def test_a_rotated_file_is_opened_again_so_no_line_goes_to_the_old_one(
        tmp_path: Path, monkeypatch, rotate: str) -> None:
    # Kept open, every line after a logrotate went to the renamed file (then compressed and
    # deleted: lost, its disk space never freed).
    monkeypatch.setattr(decision_log, "REOPEN_CHECK_SECONDS", 0.0)
    path = tmp_path / "decisions.jsonl"
    log = DecisionLog(str(path))
    log.submit('{"n": 1}')
    _wait_written(log, 1)
    log.submit('{"n": 2}')  # flushed once the queue is empty
    _wait_written(log, 2)
    rotated = tmp_path / "decisions.jsonl.1"
    if rotate == "delete":
        path.unlink()
    else:
        path.rename(rotated)
        if rotate == "rename-and-create":
            path.write_text("")
    log.submit('{"n": 3}')
    _wait_written(log, 3)
    log.close()
    assert path.read_text() == '{"n": 3}\n'
    if rotate != "delete":
        assert rotated.read_text() == '{"n": 1}\n{"n": 2}\n'
