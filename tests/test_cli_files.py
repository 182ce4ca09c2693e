"""`-f` as kubectl reads it, for every command that takes it (issue 20, item 8).

kubectl's resource builder (k8s.io/cli-runtime): -f repeats and takes comma-separated paths,
`-` is stdin, a directory gives its .json/.yaml/.yml files in name order (subdirectories with
-R, walked as Go's filepath.Walk), a file named alone is read whatever its extension, and a path
that does not exist is a glob pattern or `the path "..." does not exist`. Before, `decide -f a
-f b` decided b alone and `-f DIR` was refused.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from decider.cli.files import input_paths
from decider.cli.main import build_parser
from support.cli_run import run_cli

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = (ROOT / "examples" / "leader-workers.yaml").read_text()
GANG_JOB = (ROOT / "examples" / "gang-job.yaml").read_text()
NOW = ("--now", "2026-01-01T00:00:00Z")


def _jobset(name: str) -> str:
    return EXAMPLE.replace("name: trainer\n", f"name: {name}\n", 1)


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.mark.parametrize("files,flags,expected", [
    pytest.param({"a.yaml": "", "b.yml": "", "c.json": "", "notes.txt": "", "d.YAML": ""},
                 ["DIR"], ["a.yaml", "b.yml", "c.json"], id="dir/kubectl-extensions-only"),
    pytest.param({"b.yaml": "", "a/x.yaml": "", "c.yaml": ""}, ["DIR"], ["b.yaml", "c.yaml"],
                 id="dir/not-recursive-without-R"),
    pytest.param({"b.yaml": "", "a/x.yaml": "", "c/y.yaml": "", "c/z/w.json": "", "d.yaml": ""},
                 ["DIR", "-R"], ["a/x.yaml", "b.yaml", "c/y.yaml", "c/z/w.json", "d.yaml"],
                 id="dir/recursive-in-go-walk-order"),
    pytest.param({"x.txt": "", "y.yaml": ""}, ["DIR/x.txt"], ["x.txt"],
                 id="file/named-alone-any-extension"),
    pytest.param({"a.yaml": "", "b.yaml": ""}, ["DIR/b.yaml", "DIR/a.yaml"], ["b.yaml", "a.yaml"],
                 id="repeated/in-flag-order"),
    pytest.param({"a.yaml": "", "b.yaml": ""}, ["DIR/b.yaml,DIR/a.yaml"], ["b.yaml", "a.yaml"],
                 id="repeated/comma-separated"),
    pytest.param({"a1.yaml": "", "a2.yaml": "", "b.yaml": ""}, ["DIR/a*.yaml"],
                 ["a1.yaml", "a2.yaml"], id="glob/when-the-path-does-not-exist"),
])
def test_which_files_are_read(tmp_path: Path, files: dict[str, str], flags: list[str],
                              expected: list[str]) -> None:
    _tree(tmp_path, files)
    recursive = "-R" in flags
    values = [f.replace("DIR", str(tmp_path)) for f in flags if f != "-R"]
    found = [str(Path(p).relative_to(tmp_path)) for p in input_paths(values, recursive)]
    assert found == expected


@pytest.mark.parametrize("files,flag,error", [
    pytest.param({}, "DIR/missing.yaml", 'the path "DIR/missing.yaml" does not exist',
                 id="missing-path"),
    pytest.param({"notes.txt": "", "a/x.yaml": ""}, "DIR",
                 "DIR: no .json, .yaml or .yml file in the directory (-R reads its "
                 "subdirectories)", id="directory-without-manifests"),
    pytest.param({}, "https://example.com/js.yaml", "a URL is not read here", id="url"),
])
def test_what_names_nothing_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       files: dict[str, str], flag: str, error: str) -> None:
    _tree(tmp_path, files)
    code, out, err = run_cli(capsys, "decide", "-f", flag.replace("DIR", str(tmp_path)), *NOW)
    assert code == 2 and out == ""
    assert error.replace("DIR", str(tmp_path)) in err


def test_stdin_is_read_once(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "decide", "-f", "-", "-f", "-", *NOW)
    assert code == 2 and "standard input can be read once" in err


def _decide_keys(out: str) -> list[str]:
    return list(json.loads(out))


def test_decide_reads_every_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _tree(tmp_path, {"a.yaml": _jobset("alpha"), "b.yaml": _jobset("beta"),
                     "sub/c.yaml": _jobset("gamma")})
    code, out, err = run_cli(capsys, "decide", "-f", str(tmp_path / "a.yaml"),
                             "-f", str(tmp_path / "b.yaml"), *NOW, "-o", "json")
    assert code == 0, err
    assert _decide_keys(out) == ["default/alpha", "default/beta"]  # was: beta's plan alone
    code, out, err = run_cli(capsys, "decide", "-f", str(tmp_path), *NOW, "-o", "json")
    assert code == 0, err
    assert _decide_keys(out) == ["default/alpha", "default/beta"]
    code, out, err = run_cli(capsys, "decide", "-f", str(tmp_path), "-R", *NOW, "-o", "json")
    assert code == 0, err
    assert _decide_keys(out) == ["default/alpha", "default/beta", "default/gamma"]


def _job_of(jobset: str) -> str:
    """The leader Job of the example JobSet, as `kubectl get jobs -o yaml` would print it."""
    js = yaml.safe_load(jobset)
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {
        "name": "trainer-leader-0", "namespace": "default", "uid": "job-uid-1",
        "labels": {"jobset.sigs.k8s.io/jobset-name": "trainer",
                   "jobset.sigs.k8s.io/replicatedjob-name": "leader",
                   "jobset.sigs.k8s.io/restart-attempt": "0",
                   "jobset.sigs.k8s.io/job-index": "0"},
        "ownerReferences": [{"apiVersion": js["apiVersion"], "kind": "JobSet",
                             "name": "trainer", "uid": js["metadata"].get("uid", ""),
                             "controller": True}]},
        "spec": {"parallelism": 1, "completions": 1}, "status": {"active": 1}}
    return yaml.safe_dump(job)


@pytest.mark.parametrize("command,extra", [
    pytest.param("simulate", NOW, id="simulate"),
    pytest.param("validate", (), id="validate"),
])
def test_a_jobset_and_its_objects_from_two_files(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str],
                                                 command: str, extra: tuple[str, ...]) -> None:
    _tree(tmp_path, {"jobset.yaml": EXAMPLE, "jobs/leader.yaml": _job_of(EXAMPLE)})
    code, out, err = run_cli(capsys, command, "-f", str(tmp_path / "jobset.yaml"),
                             "-f", str(tmp_path / "jobs"), *extra)
    assert code == 0, err
    # Two JobSets across the files is one too many: both files were read.
    (tmp_path / "jobs" / "other.yaml").write_text(_jobset("other"))
    code, out, err = run_cli(capsys, command, "-f", str(tmp_path / "jobset.yaml"),
                             "-f", str(tmp_path / "jobs"), *extra)
    assert code == 2
    assert str(tmp_path / "jobs" / "other.yaml") in err and "JobSet" in err


@pytest.mark.parametrize("command", ["gang", "podsets"])
def test_gang_commands_read_directories(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                        command: str) -> None:
    _tree(tmp_path, {"job.yaml": GANG_JOB, "README.md": "# not a manifest\n"})
    code, out, err = run_cli(capsys, command, "-f", str(tmp_path))
    assert code == 0, err
    assert json.loads(out)
    second = GANG_JOB.replace("name: train\n", "name: train-2\n", 1)
    (tmp_path / "job-2.yaml").write_text(second)
    code, _, err = run_cli(capsys, command, "-f", str(tmp_path))
    assert code == 2 and "found 0 JobSet(s) and 2 Job(s)" in err


def test_every_file_taking_command_has_the_kubectl_flags() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name in ("decide", "simulate", "validate", "gang", "podsets"):
        flags = {f for a in sub.choices[name]._actions for f in a.option_strings}
        assert {"-f", "--file", "--filename", "-R", "--recursive"} <= flags, name
    validate = {f for a in sub.choices["validate"]._actions for f in a.option_strings}
    assert "--old" in validate


@pytest.mark.waits
def test_decide_from_a_directory_through_a_server(tmp_path: Path) -> None:
    """As a user runs it: `decider serve`, then `decide --server -f DIR`, the same bytes as
    deciding in process."""
    _tree(tmp_path, {"a.yaml": _jobset("alpha"), "b.yaml": _jobset("beta")})
    server = subprocess.Popen([sys.executable, "-m", "decider.cli", "serve", "--host",
                               "127.0.0.1", "--port", "0", "--workers", "1", "--drain-delay",
                               "0"], cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True)
    try:
        assert server.stdout is not None
        target = server.stdout.readline().strip().rsplit(" ", 1)[-1]
        remote = subprocess.run([sys.executable, "-m", "decider.cli", "decide", "-f",
                                 str(tmp_path), *NOW, "-o", "json", "--server", target], cwd=ROOT,
                                capture_output=True, text=True, timeout=120)
        local = subprocess.run([sys.executable, "-m", "decider.cli", "decide", "-f",
                                str(tmp_path), *NOW, "-o", "json"], cwd=ROOT,
                               capture_output=True, text=True, timeout=120)
    finally:
        server.terminate()
        server.wait(timeout=60)
    assert remote.returncode == 0, remote.stderr
    assert _decide_keys(remote.stdout) == ["default/alpha", "default/beta"]
    assert remote.stdout == local.stdout


# ---- hostile input (bench/fuzz_rpc.py's by-hand part): nothing hangs or fills memory --------

def _fifo(path: Path) -> Path:
    import os

    os.mkfifo(path)
    return path


def _bounded_cli(*args: str, stdin: Any = None) -> subprocess.CompletedProcess[str]:
    """The CLI in a process of its own, with 2 GiB of address space and a generous deadline:
    should reading regress, the test fails rather than fill the machine or wait forever. The
    limit is set by the child's own first statement, not by a preexec_fn: the suite's process
    has gRPC threads by then, and Python code between fork and exec beside them can abort."""
    return subprocess.run([sys.executable, "-c", _LIMITED_CLI, *args], stdin=stdin,
                          capture_output=True, text=True, cwd=ROOT, timeout=300, check=False)


_LIMITED_CLI = ("import resource, runpy; "
                "resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30)); "
                "runpy.run_module('decider.cli', run_name='__main__', alter_sys=True)")


@pytest.mark.waits
@pytest.mark.parametrize("command", ["decide", "simulate", "validate", "gang", "podsets"])
def test_a_device_of_zeros_is_refused_at_its_first_byte(command: str) -> None:
    """`-f /dev/zero` read until memory ran out (the process was killed); YAML and JSON hold
    no NUL byte, so the first chunk says it is not text."""
    result = _bounded_cli(command, "-f", "/dev/zero",
                          *(NOW if command in ("decide", "simulate") else ()))
    assert (result.returncode, result.stdout) == (2, ""), result.stderr
    assert result.stderr == "decider: /dev/zero: not YAML or JSON text (a NUL byte at byte 0)\n"


def test_input_is_read_at_most_the_limit(tmp_path: Path) -> None:
    from decider.cli.common import UsageError, read_input

    path = tmp_path / "big.yaml"
    path.write_text("a: b\n" * 5)
    assert read_input(str(path), max_bytes=25) == "a: b\n" * 5
    with pytest.raises(UsageError, match=r"big.yaml: more than 24 bytes, not read further"):
        read_input(str(path), max_bytes=24)


@pytest.mark.waits
def test_an_endless_pipe_is_refused_past_the_limit() -> None:
    """`yes | decider validate -f -`: an endless valid text, refused at the limit (512 MiB
    here, read in a fraction of a second), not read until memory runs out."""
    producer = subprocess.Popen(["yes"], stdout=subprocess.PIPE)
    try:
        result = _bounded_cli("validate", "-f", "-", stdin=producer.stdout)
    finally:
        producer.kill()
        producer.wait()
    assert result.returncode == 2, result.stderr
    assert result.stderr == ("decider: -: more than 536,870,912 bytes, not read further (an "
                             "endless stream or a device?)\n")


@pytest.mark.waits
def test_a_fifo_in_a_directory_is_refused_not_opened(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """kubectl would open it and wait for a writer, maybe forever; named on its own it is
    read (as `-f <(...)` needs)."""
    _tree(tmp_path, {"a.yaml": _jobset("alpha")})
    fifo = _fifo(tmp_path / "b.yaml")
    result = _bounded_cli("validate", "-f", str(tmp_path))
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == (f"decider: {fifo}: not a regular file (a FIFO, socket or device "
                             "in a directory is not read; name it with -f to)\n")
    writer = subprocess.Popen(["sh", "-c", f'cat > "{fifo}"'], stdin=subprocess.PIPE, text=True)
    assert writer.stdin is not None
    writer.stdin.write(_jobset("beta"))
    writer.stdin.close()
    code, out, err = run_cli(capsys, "validate", "-f", str(fifo))
    writer.wait(timeout=60)
    assert code == 0, err
    assert json.loads(out)["object"]["metadata"]["name"] == "beta"


def test_a_thousand_files_are_named_in_one_short_line(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    _tree(tmp_path, {f"js-{i:04d}.yaml": _jobset(f"js-{i:04d}") for i in range(1000)})
    code, out, err = run_cli(capsys, "validate", "-f", str(tmp_path))
    assert (code, out) == (2, "")
    assert err == (f"decider: {tmp_path}/js-0000.yaml, {tmp_path}/js-0001.yaml and 998 more "
                   "files: must hold exactly one batch/v1 Job or one JobSet, found 1000 "
                   "JobSet(s) and 0 Job(s)\n")
