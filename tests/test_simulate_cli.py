"""`decider simulate` and the Simulate RPC end to end: the acceptance rows, --server parity,
raw objects, and bad input (exit 2 with one line; INVALID_ARGUMENT naming the field)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml

from decider.contract import simulate as simulate_contract
from decider.service.server import BackgroundServer
from decider_api.v1 import decider_pb2 as pb
from decider_client import DeciderClient, observe, render
from decider_client.documents import load_objects, split_jobset
from support.builders import NOW

pytestmark = pytest.mark.waits

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "trainer-restarted.yaml"
START = "2026-01-01T01:00:00Z"
ALL = ["trainer-leader-0", "trainer-workers-0", "trainer-workers-1", "trainer-workers-2"]


def decider(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "decider.cli", *args], input=stdin,
                          capture_output=True, text=True, cwd=ROOT, timeout=120)


def simulate(*args: str) -> dict[str, Any]:
    out = decider("simulate", "-f", str(EXAMPLE), "--now", START, "-o", "json", *args)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def server():
    with BackgroundServer() as srv:
        yield srv


def test_outcome_keys_use_the_jobset_status_spelling() -> None:
    got = simulate()
    assert list(got) == ["steps", "outcome"]
    assert list(got["outcome"]) == [
        "terminalState", "reason", "restarts", "restartsCountTowardsMax", "restartsLeft",
        "recreatedJobs", "deletedJobs", "failurePolicy", "summary", "passes", "settled",
        "endTime", "jobSetDeleted", "eventsNotApplied"]
    assert got["outcome"]["summary"] == "no Job fails: the JobSet keeps running"


def test_row1_unmatched_failure_spends_the_last_restart_and_recreates_every_job() -> None:
    got = simulate("--fail", "trainer-workers-1")
    o = got["outcome"]
    assert (o["terminalState"], o["restarts"], o["restartsCountTowardsMax"],
            o["restartsLeft"]) == ("", 2, 2, 0)
    assert o["recreatedJobs"] == [{"name": n, "restartAttempt": 2} for n in ALL]
    created = [a["object"] for s in got["steps"] for a in s["plan"]["actions"]
               if a["type"] == "CreateJob"]
    assert sorted(j["metadata"]["name"] for j in created) == ALL
    assert {j["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"]
            for j in created} == {"2"}
    assert o["failurePolicy"] == [{"job": "trainer-workers-1", "reason": "BackoffLimitExceeded",
                                   "message": "", "rule": "", "action": "RestartJobSet"}]
    assert got["steps"][0]["events"] == [{"at": 0, "type": "JobFailed",
                                          "job": "trainer-workers-1",
                                          "reason": "BackoffLimitExceeded", "message": ""}]


def test_row2_a_second_failure_later_reaches_max_restarts() -> None:
    got = simulate("--fail", "trainer-workers-1", "--at", "600", "--fail", "trainer-workers-0")
    o = got["outcome"]
    assert (o["terminalState"], o["reason"], o["restartsLeft"]) == (
        "Failed", "ReachedMaxRestarts", 0)
    assert o["endTime"] == "2026-01-01T01:10:00Z"
    assert [s["at"] for s in got["steps"] if s["events"]] == [0, 600]


def test_row3_a_fail_jobset_rule_fails_after_one_pass_and_is_named() -> None:
    got = simulate("--fail", "trainer-workers-1:PodFailurePolicy:evicted: node drained")
    first = got["steps"][0]["plan"]
    assert first["status"]["terminalState"] == "Failed"
    assert first["failurePolicy"]["rule"] == "noRetry"
    o = got["outcome"]
    assert (o["terminalState"], o["reason"]) == ("Failed", "FailJobSetFailurePolicyAction")
    assert o["failurePolicy"][0]["message"] == "evicted: node drained"
    assert o["summary"] == ("job trainer-workers-1 fails with PodFailurePolicy: rule noRetry "
                            "matches, action FailJobSet: the JobSet fails; 3 Jobs are deleted")


def test_server_prints_the_same_bytes(server: BackgroundServer) -> None:
    args = ["simulate", "-f", str(EXAMPLE), "--now", START, "-o", "json",
            "--fail", "trainer-workers-1", "--at", "30", "--succeed", "trainer-leader-0"]
    local = decider(*args)
    remote = decider(*args, "--server", server.target)
    assert remote.returncode == 0, remote.stderr
    assert local.stdout == remote.stdout
    local_yaml = decider(*args, "-o", "yaml")
    assert yaml.safe_load(local_yaml.stdout) == json.loads(local.stdout)


@pytest.mark.parametrize("args,message", [
    (["--at", "-5"], "--at: must not be negative"),
    (["--at", "soon"], "--at: 'soon' is not a whole number"),
    (["--fail", ":PodFailurePolicy"], "--fail: names a Job"),
    (["--max-passes", "5000"], "max_passes: must be between 0"),
    (["--now", "yesterday"], "--now: 'yesterday' is not an RFC 3339 time"),
    # As the input's times are read (Go's time.Parse(RFC3339)); an empty value (an unset
    # shell variable) is not the wall clock.
    (["--now", "2026-01-01T00:00:00z"], "--now: '2026-01-01T00:00:00z' is not an RFC 3339 time"),
    (["--now", "20260101T000000Z"], "--now: '20260101T000000Z' is not an RFC 3339 time"),
    (["--now", "2026-01-01T00:00Z"], "--now: '2026-01-01T00:00Z' is not an RFC 3339 time"),
    (["--now", ""], "--now: '' is not an RFC 3339 time"),
    (["--now", "2026-01-01T00:00:00"], "--now: '2026-01-01T00:00:00' has no time zone"),
    (["--now", "0001-01-01T00:00:00+01:00"], "is outside years 0001-9999 in UTC"),
    (["--now", "9999-12-31T23:59:59-01:00"], "is outside years 0001-9999 in UTC"),
], ids=["negative-at", "at-not-a-number", "fail-without-job", "too-many-passes", "bad-now",
        "now-lower-case-z", "now-basic-format", "now-without-seconds", "now-empty",
        "now-without-zone", "now-before-year-1-in-utc", "now-after-year-9999-in-utc"])
def test_bad_input_exits_2_with_one_line(args: list[str], message: str) -> None:
    out = decider("simulate", "-f", str(EXAMPLE), *args)
    assert out.returncode == 2
    last = out.stderr.strip().splitlines()[-1]
    assert message in last, out.stderr


def _request(**changes: Any) -> pb.SimulateRequest:
    jobset, owned = split_jobset(load_objects(EXAMPLE.read_text()))
    req = pb.SimulateRequest(observed=observe.build_decide_request(jobset, owned, NOW),
                             events=[pb.SimulationEvent(
                                 type=pb.SIMULATION_EVENT_TYPE_JOB_FAILED,
                                 job="trainer-workers-1")])
    for key, value in changes.items():
        setattr(req, key, value)
    return req


def test_grpc_simulate_matches_in_process_and_raw_objects_simulate_alike(
        server: BackgroundServer) -> None:
    jobset, owned = split_jobset(load_objects(EXAMPLE.read_text()))
    raw = pb.SimulateRequest(observed=observe.build_raw_decide_request(jobset, owned, NOW),
                             events=_request().events)
    with DeciderClient(server.target, timeout=30) as client:
        remote = client.simulate(_request())
        remote_raw = client.simulate(raw)
    local = simulate_contract.simulate_response(_request())
    assert remote.SerializeToString(deterministic=True) == local.SerializeToString(
        deterministic=True) == remote_raw.SerializeToString(deterministic=True)
    assert render.simulation_to_dict(remote)["outcome"]["restarts"] == 2


@pytest.mark.parametrize("mutate,field", [
    (lambda r: r.ClearField("observed"), "observed"),
    (lambda r: setattr(r.observed, "jobset_json", "{"), "observed.jobset_json"),
    (lambda r: r.observed.ClearField("now"), "observed.now"),
    (lambda r: r.observed.observed_json.append("[]"), "observed.observed_json[0]"),
    (lambda r: setattr(r.events[0], "type", pb.SIMULATION_EVENT_TYPE_UNSPECIFIED),
     "events[0].type"),
    (lambda r: setattr(r.events[0], "job", ""), "events[0].job"),
    (lambda r: setattr(r, "max_passes", 1001), "max_passes"),
], ids=["no-observed", "observed-jobset-not-json", "observed-without-now",
        "raw-object-not-an-object", "unspecified-event", "job-event-without-job",
        "too-many-passes"])
def test_grpc_bad_requests_are_invalid_argument_naming_the_field(
        server: BackgroundServer, mutate, field) -> None:
    req = _request()
    mutate(req)
    with DeciderClient(server.target, timeout=30) as client, \
            pytest.raises(grpc.RpcError) as err:
        client.simulate(req)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert err.value.details().startswith(field + ":"), err.value.details()
