"""End to end through the `decider` command: the plan, the --server path, and bad input."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from decider.service.server import BackgroundServer
from support.cli_run import leader_workers_failed

pytestmark = pytest.mark.waits

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "leader-workers.yaml"
NOW = "2026-01-01T00:00:00Z"


def decider(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "decider.cli", *args], input=stdin,
                          capture_output=True, text=True, cwd=ROOT, timeout=60)


@pytest.fixture(scope="module")
def server():
    with BackgroundServer() as srv:
        yield srv


def test_example_creates_leader_and_workers_and_service() -> None:
    out = decider("decide", "-f", str(EXAMPLE), "--now", NOW, "-o", "json")
    assert out.returncode == 0, out.stderr
    plan = json.loads(out.stdout)
    creates = [a["name"] for a in plan["actions"] if a["type"] == "CreateJob"]
    assert creates == ["trainer-leader-0", "trainer-workers-0", "trainer-workers-1",
                       "trainer-workers-2"]
    assert [a["name"] for a in plan["actions"] if a["type"] == "CreateService"] == ["trainer"]
    worker = next(a["object"] for a in plan["actions"] if a["name"] == "trainer-workers-2")
    labels = worker["metadata"]["labels"]
    assert labels["jobset.sigs.k8s.io/jobset-name"] == "trainer"
    assert labels["jobset.sigs.k8s.io/replicatedjob-name"] == "workers"
    assert labels["jobset.sigs.k8s.io/job-index"] == "2"
    assert labels["jobset.sigs.k8s.io/job-global-index"] == "3"
    assert labels["jobset.sigs.k8s.io/global-replicas"] == "4"
    assert labels["jobset.sigs.k8s.io/restart-attempt"] == "0"
    assert labels["jobset.sigs.k8s.io/job-key"] == hashlib.sha1(
        b"default/trainer-workers-2").hexdigest()
    assert worker["spec"]["template"]["spec"]["subdomain"] == "trainer"
    assert worker["spec"]["suspend"] is False
    assert plan["status"]["terminalState"] == ""


def test_server_gives_the_same_bytes(server: BackgroundServer) -> None:
    local = decider("decide", "-f", str(EXAMPLE), "--now", NOW, "-o", "json")
    remote = decider("decide", "-f", str(EXAMPLE), "--now", NOW, "-o", "json",
                     "--server", server.target)
    assert remote.returncode == 0, remote.stderr
    assert local.stdout == remote.stdout


def _failed_child_input() -> str:
    js, job = leader_workers_failed()
    return yaml.safe_dump_all([{"apiVersion": "v1", "kind": "List", "items": [js, job]}])


@pytest.mark.parametrize("via_server", [False, True], ids=["in-process", "grpc"])
def test_failed_child_without_failure_policy_fails_the_jobset(via_server: bool,
                                                              server: BackgroundServer) -> None:
    args = ["decide", "-f", "-", "--now", NOW, "-o", "json"] + (
        ["--server", server.target] if via_server else [])
    out = decider(*args, stdin=_failed_child_input())
    assert out.returncode == 0, out.stderr
    status = json.loads(out.stdout)["status"]
    failed = next(c for c in status["conditions"] if c["type"] == "Failed")
    assert failed["status"] == "True"
    assert failed["reason"] == "FailedJobs"
    assert failed["message"] == ("jobset failed due to one or more job failures "
                                 "(first failed job: trainer-workers-1)")
    assert status["terminalState"] == "Failed"


def test_yaml_output_carries_the_same_plan() -> None:
    as_json = json.loads(decider("decide", "-f", str(EXAMPLE), "--now", NOW, "-o", "json").stdout)
    as_yaml = yaml.safe_load(decider("decide", "-f", str(EXAMPLE), "--now", NOW, "-o",
                                     "yaml").stdout)
    assert as_json == as_yaml


def test_managed_by_another_controller_gets_an_empty_plan() -> None:
    docs = list(yaml.safe_load_all(EXAMPLE.read_text()))
    docs[0]["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    out = decider("decide", "-f", "-", "--now", NOW, "-o", "json", stdin=yaml.safe_dump_all(docs))
    plan = json.loads(out.stdout)
    assert plan["actions"] == []
    assert "managed by kueue.x-k8s.io/multikueue" in plan["explanation"][0]


BAD_INPUTS = [
    pytest.param("a: [\n", "not valid YAML or JSON", id="malformed-yaml"),
    pytest.param("- 1\n- 2\n", "must be a Kubernetes object", id="not-an-object"),
    pytest.param("kind: Job\napiVersion: batch/v1\nmetadata: {name: j}\n",
                 "holds no JobSet", id="no-jobset"),
    pytest.param("kind: JobSet\napiVersion: jobset.x-k8s.io/v1alpha2\nmetadata: {name: x}\n"
                 "spec: {replicatedJobs: [{name: a, replicas: three, template: {spec: "
                 "{template: {}}}}]}\n",
                 "spec.replicatedJobs[0].replicas: must be an integer", id="replicas-not-int"),
    pytest.param("kind: JobSet\napiVersion: jobset.x-k8s.io/v1alpha2\nmetadata: {name: x}\n"
                 "spec: {replicatedJobs: [{name: a, template: {spec: {template: {}}}},"
                 "{name: a, template: {spec: {template: {}}}}]}\n",
                 'spec.replicatedJobs[1].name: duplicate value "a"', id="duplicate-rjob"),
    pytest.param("kind: JobSet\napiVersion: jobset.x-k8s.io/v1alpha2\nmetadata: {name: x}\n"
                 "spec: {replicatedJobs: [{name: a, template: {spec: {template: {}}}}]}\n"
                 "---\nkind: Job\napiVersion: batch/v1\nmetadata: {name: x-a-0, labels: "
                 "{jobset.sigs.k8s.io/restart-attempt: zero}}\n",
                 "jobs[0].labels[jobset.sigs.k8s.io/restart-attempt]", id="bad-restart-label"),
    pytest.param("kind: JobSet\napiVersion: jobset.x-k8s.io/v1alpha2\nmetadata: {name: x}\n"
                 "---\nkind: Job\napiVersion: batch/v1\nmetadata: {name: j}\n"
                 "spec: {parallelism: many}\n",
                 "jobs[0].spec.parallelism: must be an integer", id="bad-job-field"),
]


@pytest.mark.parametrize("via_server", [False, True], ids=["in-process", "grpc"])
@pytest.mark.parametrize("text,expected", BAD_INPUTS)
def test_bad_input_exits_2_naming_the_problem(text: str, expected: str, via_server: bool,
                                              server: BackgroundServer) -> None:
    args = ["decide", "-f", "-", "--now", NOW] + (["--server", server.target] if via_server
                                                  else [])
    out = decider(*args, stdin=text)
    assert out.returncode == 2, out.stdout + out.stderr
    assert expected in out.stderr
    assert "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert out.stdout == ""


@pytest.mark.parametrize("args,expected", [
    (["decide", "-f", "/nonexistent.yaml"], 'the path "/nonexistent.yaml" does not exist'),
    (["decide", "-f", str(EXAMPLE), "--now", "yesterday"], "--now: 'yesterday' is not"),
    (["decide", "-f", str(EXAMPLE), "--feature-gates", "RestartJob"], "--feature-gates"),
    (["decide"], "the following arguments are required: -f/--file"),
], ids=["unreadable-file", "bad-now", "bad-gates", "missing-file"])
def test_bad_arguments_exit_2(args: list[str], expected: str) -> None:
    out = decider(*args)
    assert out.returncode == 2
    assert expected in out.stderr
    assert "Traceback" not in out.stderr
