"""The decision log under what breaks logs (issue 20, item 6): a `now` no JSON can hold, kill -9
mid-write, a full disk, a log larger than memory, and line separators inside a record. Each is
written by a real `decider serve` or the writer itself, and read back by `decider replay`."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import grpc
import pytest
from test_server_hardening import _request

from decider.contract.limits import DEFAULT
from decider.service import dispatch
from decider.telemetry.decision_log import DecisionLog, record_line
from decider.telemetry.log_format import line_safe, request_from_json, request_json
from decider_api.v1 import decider_pb2 as pb
from decider_api.v1 import decider_pb2_grpc as pb_grpc
from decider_client import observe
from support.builders import NOW, jobset, rjob

pytestmark = pytest.mark.waits

ROOT = Path(__file__).resolve().parent.parent
MiB = 1 << 20
# One past the last second google.protobuf.Timestamp's JSON can write (9999-12-31T23:59:59Z).
PAST_9999 = 253_402_300_800


def replay(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "decider.cli", "replay", str(path)],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)


@contextmanager
def serving(log: Path, stderr: Path, workers: int = 1
            ) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """`decider serve --decision-log LOG`, its standard error (its workers' too) in a file."""
    with stderr.open("a") as err:
        proc = subprocess.Popen([sys.executable, "-m", "decider.cli", "serve", "--host",
                                 "127.0.0.1", "--port", "0", "--workers", str(workers),
                                 "--drain-delay",
                                 "0", "--decision-log", str(log)],
                                stdout=subprocess.PIPE, stderr=err, text=True, cwd=ROOT)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "serving decider.v1.Decider on 127.0.0.1:" in line, stderr.read_text()
        yield proc, line.strip().rsplit(" ", 1)[-1]
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
        proc.wait()
        assert proc.stdout is not None
        proc.stdout.close()


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_bytes().split(b"\n") if line]


def wait_for_lines(path: Path, n: int) -> None:
    """The log is written by a thread: wait for its lines rather than for a while."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if path.exists() and path.read_bytes().count(b"\n") >= n:
            return
        time.sleep(0.02)
    raise AssertionError(f"{path}: fewer than {n} lines after 60 s")


def logged_line(method: str, request: object) -> str:
    """The line a server writes for `request`, decided in-process."""
    reply = dispatch.answer(method, request.SerializeToString(), DEFAULT,  # type: ignore[attr-defined]
                            dispatch.WANT_RECORD)
    return record_line({"time": "2026-01-01T12:00:00.000Z", "decision_id": "d", "trace_id": "",
                        "method": method, "code": dispatch.STATUS_NAMES[reply.code],
                        "jobset": {}, "input_digest": "", "version": "test",
                        "latency_seconds": 0.001}, reply.record)


# ---- a `now` protobuf's JSON cannot write ------------------------------------------------------

def _out_of_range_requests(seconds: int, nanos: int) -> list[tuple[str, object]]:
    decide = _request()
    decide.now.seconds, decide.now.nanos = seconds, nanos
    return [("Decide", decide), ("Simulate", pb.SimulateRequest(observed=decide))]


@pytest.mark.parametrize("seconds,nanos", [(PAST_9999, 0), (-62_135_596_801, 0), (0, -1),
                                           (0, 1_000_000_000)],
                         ids=["after-9999", "before-0001", "negative-nanos", "nanos-past-1s"])
def test_an_out_of_range_now_is_recorded_and_read_back_whole(seconds: int, nanos: int) -> None:
    for _, request in _out_of_range_requests(seconds, nanos):
        written = request_json(request)  # type: ignore[arg-type]
        back = request_from_json(json.loads(json.dumps(written)), type(request))  # type: ignore[arg-type]
        assert back == request


def test_an_out_of_range_now_is_refused_logged_with_its_request_and_replayed(
        tmp_path: Path) -> None:
    """Each such request printed a 64-line traceback and left a record with neither request
    nor status, which replay skipped (F9, F9b)."""
    log, err = tmp_path / "decisions.jsonl", tmp_path / "serve.err"
    with serving(log, err) as (_, target), grpc.insecure_channel(target) as channel:
        for method, request in _out_of_range_requests(PAST_9999, 0):
            with pytest.raises(grpc.RpcError) as refused:
                getattr(pb_grpc.DeciderStub(channel), method)(request, timeout=60)
            assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert "now" in refused.value.details()
        wait_for_lines(log, 2)
    assert "Traceback" not in err.read_text() and "telemetry facts failed" not in err.read_text()
    decide, simulate = records(log)
    assert decide["request"]["now"] == {"seconds": str(PAST_9999), "nanos": 0}
    assert simulate["request"]["observed"]["now"] == {"seconds": str(PAST_9999), "nanos": 0}
    for record in (decide, simulate):
        assert record["status"]["code"] == "INVALID_ARGUMENT"
        assert "now" in record["status"]["message"]
    done = replay(log)
    assert done.returncode == 0, done.stderr
    assert "replayed 2 decision(s), 0 differ, 0 skipped" in done.stderr


# ---- torn lines: kill -9 mid-write, a full disk ------------------------------------------------

def test_replay_reports_a_torn_line_and_replays_the_rest(tmp_path: Path) -> None:
    whole = [logged_line("Decide", _request()) for _ in range(3)]
    torn = whole[0][: len(whole[0]) // 2]
    log = tmp_path / "decisions.jsonl"
    # A torn line ended by the writer; then one a server older than that rule appended a record
    # to; then a torn last line (the server is still down).
    log.write_text(f"{whole[0]}\n{torn}\n{whole[1]}\n{torn}{whole[2]}\n{torn[:40]}")
    done = replay(log)
    assert done.returncode == 0, done.stderr
    assert "line 2: a torn line" in done.stderr and "line 4: a torn line" in done.stderr
    assert "line 5: a torn line" in done.stderr
    assert "replayed 3 decision(s), 0 differ, 0 skipped (no request logged), 3 torn line(s)" \
        in done.stderr


def test_a_line_that_is_not_a_record_is_still_refused(tmp_path: Path) -> None:
    log = tmp_path / "decisions.jsonl"
    log.write_text(logged_line("Decide", _request()) + '\n{"method": tru\n')
    done = replay(log)
    assert done.returncode == 2
    assert "line 2: not JSON" in done.stderr and "Traceback" not in done.stderr


def test_the_writer_ends_a_torn_line_before_its_first(tmp_path: Path) -> None:
    path = tmp_path / "decisions.jsonl"
    path.write_text('{"time":"2026-01-01T12:00:00.000Z","decision_id":"cut sh')
    log = DecisionLog(str(path))
    log.submit('{"n": 1}')
    log.close()
    assert path.read_text() == '{"time":"2026-01-01T12:00:00.000Z","decision_id":"cut sh\n' \
                               '{"n": 1}\n'


def test_after_kill_9_mid_write_a_restarted_server_appends_replayable_lines(
        tmp_path: Path) -> None:
    """kill -9 while a line is written leaves its start (1 in 9 trials with ~3 MB lines): made
    certain here by cutting the last line after the kill. What the restarted server writes
    after it was never replayed (F10)."""
    log, err = tmp_path / "decisions.jsonl", tmp_path / "serve.err"
    with serving(log, err) as (proc, target), grpc.insecure_channel(target) as channel:
        for _ in range(3):
            pb_grpc.DeciderStub(channel).Decide(_request(), timeout=60)
        wait_for_lines(log, 3)
        proc.kill()
    data = log.read_bytes()
    log.write_bytes(data[: len(data) - len(data.split(b"\n")[-2]) // 2 - 1])
    with serving(log, err) as (_, target), grpc.insecure_channel(target) as channel:
        for _ in range(2):
            pb_grpc.DeciderStub(channel).Decide(_request(), timeout=60)
        wait_for_lines(log, 5)
    done = replay(log)
    assert done.returncode == 0, done.stderr
    assert "line 3: a torn line" in done.stderr
    assert "replayed 4 decision(s), 0 differ, 0 skipped (no request logged), 1 torn line(s)" \
        in done.stderr


# The writer on a file system that refuses writes past a size: RLIMIT_FSIZE makes write() stop at
# the limit (part of a line) and then fail with EFBIG, as a full disk fails with ENOSPC, with no
# mount and no root. Run in a child: the limit is the whole process's.
_FULL_DISK = textwrap.dedent("""
    import json, logging, resource, signal, sys, time
    from decider.telemetry import decision_log
    from decider.telemetry.decision_log import DecisionLog
    # One interval covers the whole run, however long a busy machine takes over it.
    decision_log.REPORT_SECONDS = 3600.0
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(levelname)s %(name)s: %(message)s")
    path, limit = sys.argv[1], int(sys.argv[2])
    _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    log = DecisionLog(path)
    def settle(n):
        deadline = time.monotonic() + 60
        while log.written + log.dropped < n and time.monotonic() < deadline:
            time.sleep(0.005)
    n = 0
    line = lambda: '{"time":"t","decision_id":"%d","pad":"%s"}' % (n, "x" * 3000)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    # Full: each line fails (the first one part way), 300 times.
    for _ in range(300):
        log.submit(line()); n += 1; settle(n)
    # A disk with room now and then: every other line finds some.
    for i in range(200):
        size = 10**12 if i % 2 else limit
        resource.setrlimit(resource.RLIMIT_FSIZE, (min(size, hard) if hard >= 0 else size, hard))
        log.submit(line()); n += 1; settle(n)
    resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))
    log.submit('{"time":"t","decision_id":"last"}'); n += 1; settle(n)
    log.close()
    print(json.dumps({"written": log.written, "dropped": log.dropped, "submitted": n}))
""")


def test_a_full_disk_is_reported_at_most_once_a_minute_and_leaves_no_torn_line_behind(
        tmp_path: Path) -> None:
    """2,351 ERROR and WARNING lines in 15 s on a full disk: a line that only reached the write
    buffer counted as 'writing again' (F11); and the file ended in a partial line."""
    path = tmp_path / "decisions.jsonl"
    path.write_text('{"time":"t","decision_id":"first"}\n')
    done = subprocess.run([sys.executable, "-c", _FULL_DISK, str(path), "5000"],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    counts = json.loads(done.stdout)
    assert counts["written"] + counts["dropped"] == counts["submitted"] == 501
    assert counts["written"] >= 2 and counts["dropped"] >= 300
    reports = [line for line in done.stderr.splitlines() if "decider.decision_log" in line]
    errors = [r for r in reports if r.startswith("ERROR")]
    warnings = [r for r in reports if r.startswith("WARNING")]
    # Within the report interval (set to the run's whole length): one of each, whatever the
    # number of lines.
    assert len(errors) == 1 and "File too large" in errors[0], reports
    assert 1 <= len(warnings) <= 2, reports
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b""  # ends in a newline
    assert json.loads(lines[0])["decision_id"] == "first"
    assert json.loads(lines[-2])["decision_id"] == "last"
    # Every line is a whole record, but for the starts the full disk cut short.
    for line in lines[1:-2]:
        try:
            json.loads(line)
        except ValueError:
            assert line.startswith(b'{"time":"t"'), line[:80]


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
def test_a_server_on_a_full_tmpfs_reports_once_and_its_log_replays(tmp_path: Path) -> None:
    """F11 as found: a real full file system under a server deciding concurrently."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(disk)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        log, err = disk / "decisions.jsonl", tmp_path / "serve.err"
        filler = disk / "filler"
        filler.write_bytes(b"x" * (256 * 1024))
        with serving(log, err, workers=2) as (_, target), \
                grpc.insecure_channel(target) as channel:
            stub = pb_grpc.DeciderStub(channel)
            # ~30 lines fill what is left; the rest fail. Short lines (refusals) between long
            # ones, many at once: the mix that had a line "written" to a buffer now and then.
            calls = []
            for _ in range(300):
                calls.append(stub.Decide.future(_request(), timeout=120))
                calls.append(stub.Decide.future(pb.DecideRequest(jobset_json="{"), timeout=120))
            for call in calls:
                if call.exception() is None:
                    assert call.result().actions
                else:
                    assert call.code() == grpc.StatusCode.INVALID_ARGUMENT
            # Room again: the next line starts a fresh one after the torn one.
            filler.unlink()
            size = log.stat().st_size
            stub.Decide(_request(), timeout=60)
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not (
                    log.stat().st_size > size and log.read_bytes().endswith(b"\n")):
                time.sleep(0.05)
        text = err.read_text()
        reports = [line for line in text.splitlines() if "decider.decision_log" in line]
        assert len([r for r in reports if " ERROR " in r]) == 1, reports
        assert len([r for r in reports if " WARNING " in r]) <= 2, reports
        done = replay(log)
        assert done.returncode == 0, done.stderr
        assert "0 differ" in done.stderr
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


# ---- a log larger than memory ------------------------------------------------------------------

def _peak_rss_mib(args: list[str]) -> tuple[int, float]:
    """Exit status and peak RSS of a child, from its own rusage (not the children's maximum)."""
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_maxrss / 1024


def test_replay_streams_a_log_far_larger_than_its_memory(tmp_path: Path) -> None:
    """A 2.28 GB log took replay to 11.1 GB of RSS (F12): it read the whole file. Bounded by
    RSS against replay of a small log with the same largest line, not by time."""
    big = logged_line("PodSets", pb.PodSetsRequest(object_json="a" * (4 * MiB)))
    small = logged_line("Decide", _request())
    short, long = tmp_path / "short.jsonl", tmp_path / "long.jsonl"
    short.write_text(f"{big}\n{small}\n")
    with long.open("w") as f:
        while f.tell() < 200 * MiB:
            f.write(f"{big}\n{small}\n")
    command = [sys.executable, "-m", "decider.cli", "replay"]
    code, baseline = _peak_rss_mib([*command, str(short)])
    assert code == 0
    code, peak = _peak_rss_mib([*command, str(long)])
    assert code == 0
    assert peak < baseline + 50, f"replay of {long.stat().st_size >> 20} MiB: {peak:.0f} MiB " \
                                 f"(of a two-line log: {baseline:.0f} MiB)"


# ---- line separators inside a record -----------------------------------------------------------

SEPARATORS = "line\u2028sep\u2029par\u0085nel"


def test_line_separators_in_a_template_stay_inside_their_line(tmp_path: Path) -> None:
    """U+2028 in a pod template's annotation went raw into the log line; replay split the line
    there (str.splitlines) and stopped at 'not JSON' (F13)."""
    pod = {"metadata": {"annotations": {"note": SEPARATORS}},
           "spec": {"restartPolicy": "OnFailure", "containers": [{"name": "m", "image": "b"}]}}
    js = jobset(rjob("workers", 2, pod=pod))
    request = observe.build_decide_request(js, [], NOW)
    log, err = tmp_path / "decisions.jsonl", tmp_path / "serve.err"
    with serving(log, err) as (_, target), grpc.insecure_channel(target) as channel:
        answer = pb_grpc.DeciderStub(channel).Decide(request, timeout=60)
        wait_for_lines(log, 1)
    # The plan keeps them as they are (Kubernetes reads them raw; docs/observability.md).
    assert any(SEPARATORS in json.dumps(json.loads(a.object_json or "{}"), ensure_ascii=False)
               and SEPARATORS in a.object_json for a in answer.actions)
    text = log.read_text(encoding="utf-8")
    assert text.count("\n") == 1 and len(text.splitlines()) == 1
    assert not {"\u2028", "\u2029", "\u0085"} & set(text)
    (record,) = records(log)
    assert any(SEPARATORS in action.get("objectJson", "")
               for action in record["response"]["actions"])
    done = replay(log)
    assert done.returncode == 0, done.stderr
    assert "replayed 1 decision(s), 0 differ" in done.stderr


def test_line_safe_escapes_only_what_splits_lines() -> None:
    text = json.dumps({"a": SEPARATORS + "\u00e9\u2027"}, ensure_ascii=False)
    safe = line_safe(text)
    assert json.loads(safe) == json.loads(text)
    assert len(safe.splitlines()) == 1 and "\u00e9\u2027" in safe


def test_the_queue_holds_at_most_its_bytes_but_always_one_line() -> None:
    """A record carries its request (up to 64 MiB): a writer that falls behind must not hold
    thousands of them."""
    gate = threading.Event()

    class Stalled(io.StringIO):
        def write(self, text: str) -> int:
            gate.wait(60)
            return super().write(text)

    out = Stalled()
    log = DecisionLog("test", stream=out, max_queue_bytes=1000)
    log.submit("a" * 5000)  # alone: taken, though past the bound; the writer holds it
    deadline = time.monotonic() + 60
    while log._queued_bytes and time.monotonic() < deadline:  # taken by the writer
        time.sleep(0.01)
    for _ in range(3):
        log.submit("b" * 400)
    assert log.dropped == 1  # two fit beside nothing else queued; the third does not
    gate.set()
    log.close()
    assert log.written == 3
    assert out.getvalue() == "a" * 5000 + "\n" + ("b" * 400 + "\n") * 2
