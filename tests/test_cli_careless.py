"""A careless user of the CLI: each mistake exits 2 with one line naming it, never a traceback."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.waits

ROOT = Path(__file__).resolve().parent.parent
LEADER = str(ROOT / "examples" / "leader-workers.yaml")
TRAINER = str(ROOT / "examples" / "trainer-restarted.yaml")
NOW = "2026-01-01T00:00:00Z"
DECIDER = [sys.executable, "-m", "decider.cli"]


def run(*args: str | bytes, shell_suffix: str = "") -> subprocess.CompletedProcess[bytes]:
    if shell_suffix:  # for redirections a list of arguments cannot say (<&-)
        command = " ".join(["exec", *DECIDER, *map(str, args), shell_suffix])
        return subprocess.run(["bash", "-c", command], capture_output=True, cwd=ROOT,
                              timeout=60)
    return subprocess.run([*DECIDER, *args], capture_output=True, cwd=ROOT, timeout=60)


def one_line(out: subprocess.CompletedProcess[bytes]) -> str:
    err = out.stderr.decode("utf-8", "replace")
    assert out.returncode == 2, err
    # One line, after argparse's usage line for a flag it refused itself.
    lines = [line for line in err.strip().splitlines() if not line.startswith(("usage:", " "))]
    assert "Traceback" not in err and len(lines) == 1, err
    return lines[0]


# Bytes that are not UTF-8 in a value bound for the request (Python keeps them as surrogates,
# which a protobuf string refuses when the request is built).
BAD = os.fsdecode(b"\xff")


@pytest.mark.parametrize(("args", "said"), [
    pytest.param(["decide", "-f", LEADER, "--now", NOW, "--controller-name", BAD],
                 "--controller-name:", id="decide-controller-name"),
    pytest.param(["decide", "-f", LEADER, "--now", NOW, "--feature-gates", BAD + "=true"],
                 "--feature-gates:", id="decide-feature-gates"),
    pytest.param(["decide", "-f", LEADER, "--now", NOW, "--gang-target", BAD],
                 "--gang-target:", id="decide-gang-target"),
    pytest.param(["decide", "-f", LEADER, "--now", NOW, "--server", BAD], "--server:",
                 id="decide-server"),
    pytest.param(["gang", "-f", LEADER, "--target", BAD], "--target:", id="gang-target"),
    pytest.param(["simulate", "-f", TRAINER, "--fail", "job" + BAD], "--fail:",
                 id="simulate-fail"),
])
def test_a_value_that_is_not_utf8_is_refused_naming_its_flag(args: list[str], said: str) -> None:
    assert said in one_line(run(*args))
    assert "is not valid UTF-8" in one_line(run(*args))


def test_a_file_named_in_other_bytes_is_still_read(tmp_path: Path) -> None:
    """Paths are exempt: a Linux file may be named in any bytes."""
    path = tmp_path / os.fsdecode(b"js-\xff.yaml")
    path.write_bytes(Path(LEADER).read_bytes())
    out = run("decide", "-f", str(path), "--now", NOW)
    assert out.returncode == 0, out.stderr


@pytest.mark.parametrize("command", [["decide", "-f", "-", "--now", NOW], ["replay", "-"]],
                         ids=["decide", "replay"])
def test_standard_input_closed(command: list[str]) -> None:
    assert "there is no standard input to read" in one_line(run(*command, shell_suffix="<&-"))


@pytest.mark.parametrize(("args", "said"), [
    pytest.param(["--max-passes", "99999999999999999999"], "--max-passes: must be between 0 and",
                 id="max-passes-past-int32"),
    pytest.param(["--at", "9223372036854775808", "--fail", "x"], "--at: must be at most",
                 id="at-past-int64"),
])
def test_simulate_numbers_past_the_contract(args: list[str], said: str) -> None:
    assert said in one_line(run("simulate", "-f", TRAINER, "--now", NOW, *args))


@pytest.mark.parametrize("request_value", ["5", "[]", '"x"'], ids=["number", "list", "string"])
def test_replay_of_a_request_that_is_not_an_object(tmp_path: Path, request_value: str) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text(f'{{"method": "Decide", "request": {request_value}}}\n')
    assert "line 1: request: must be an object" in one_line(run("replay", str(log)))


def test_a_decision_log_on_standard_output_replays(tmp_path: Path) -> None:
    """The "serving on" line goes to standard error then, or the log would not be JSON lines."""
    proc = subprocess.Popen([*DECIDER, "serve", "--host", "127.0.0.1", "--port", "0",
                             "--workers", "1", "--drain-delay", "0", "--decision-log", "-"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        deadline = time.monotonic() + 30
        line = ""
        while "serving decider.v1.Decider on" not in line:
            # Bounded: before the fix the line went to standard output and never came here.
            left = max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([proc.stderr], [], [], left)
            assert ready, "no 'serving on' line on standard error within 30 s"
            line = proc.stderr.readline()
            assert line, "the server stopped before serving"
        target = line.split()[-1]
        out = run("decide", "-f", LEADER, "--now", NOW, "--server", target)
        assert out.returncode == 0, out.stderr
    finally:
        proc.terminate()
        stdout, _ = proc.communicate(timeout=30)
    log = tmp_path / "log.jsonl"
    log.write_text(stdout)
    assert len(stdout.splitlines()) == 1
    replayed = run("replay", str(log))
    assert replayed.returncode == 0, replayed.stderr


GANG_JOB = str(ROOT / "examples" / "gang-job.yaml")


@pytest.mark.parametrize(("args", "said"), [
    pytest.param(["decide", "-f", LEADER, "--now", NOW, "--server", ""],
                 "--server: empty", id="server-empty-is-not-in-process"),
    pytest.param(["decide", "-f", LEADER, "--now", NOW, "--server", "localhost:99999"],
                 "--server: 99999 is not a port", id="server-port-would-wrap"),
    pytest.param(["gang", "-f", GANG_JOB, "--target", "nope"],
                 "--target: options.gang_target: Unsupported value", id="gang-target"),
    pytest.param(["decide", "-f", LEADER, "--now", NOW, "--gang-target", "nope"],
                 "--gang-target: options.gang_target", id="decide-gang-target"),
    pytest.param(["podsets", "-f", GANG_JOB, "--api-version", "nope"],
                 "--api-version: options.gang_api_version", id="podsets-api-version"),
])
def test_flags_are_named_as_the_user_typed_them(args: list[str], said: str) -> None:
    assert said in one_line(run(*args))


@pytest.mark.parametrize("namespace", ["[default]", "{a: b}"], ids=["list", "map"])
def test_an_owned_object_whose_namespace_is_not_a_string(tmp_path: Path, namespace: str
                                                         ) -> None:
    path = tmp_path / "js.yaml"
    path.write_text(Path(LEADER).read_text() + f"""
---
apiVersion: batch/v1
kind: Job
metadata:
  name: trainer-workers-0
  namespace: {namespace}
""")
    assert "metadata.namespace: must be a string" in one_line(
        run("decide", "-f", str(path), "--now", NOW))


def test_an_input_too_large_exits_2_through_a_server_as_in_process(tmp_path: Path) -> None:
    """RESOURCE_EXHAUSTED for a too-large input was exit 1 ("could not be reached") through
    --server; only a server shedding load (a retry pushback) is that."""
    from decider.contract.limits import Limits
    from decider.service.server import BackgroundServer

    path = tmp_path / "big.yaml"
    text = Path(LEADER).read_text().replace("metadata:\n", "metadata:\n  annotations: {big: '"
                                            + "x" * 5000 + "'}\n", 1)
    path.write_text(text)
    small = Limits(max_object_bytes=4096)
    with BackgroundServer(limits=small) as srv:
        remote = run("decide", "-f", str(path), "--now", NOW, "--server", srv.target)
    said = one_line(remote)
    assert "over the limit of 4,096 bytes per object" in said, said


@pytest.mark.parametrize("shell", [
    pytest.param("{cmd} 2>&-; echo \"exit $?\"", id="standard-error-closed"),
    pytest.param("{cmd} 2>&1 | true; echo \"exit ${{PIPESTATUS[0]}}\"", id="reader-gone"),
])
def test_the_exit_code_does_not_depend_on_standard_error(shell: str) -> None:
    """Closed, the message went into standard output (where the plan goes); a pipe whose reader
    had left made it exit 1."""
    cmd = " ".join([*DECIDER, "decide", "-f", "/nonexistent"])
    out = subprocess.run(["bash", "-c", shell.format(cmd=cmd)], capture_output=True, text=True,
                         cwd=ROOT, timeout=60)
    assert out.stdout == "exit 2\n", out.stdout + out.stderr
