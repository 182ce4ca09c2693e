"""The command-line surface issue 10 asked for: --version, several JobSets in one `decide`,
unknown feature gates and malformed times refused naming the field."""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import grpc
import pytest
import yaml

from decider.contract.limits import DEFAULT
from decider.service import dispatch
from decider.service.server import BackgroundServer
from decider_api.v1 import decider_pb2 as pb
from decider_api.v1 import decider_pb2_grpc as pb_grpc
from decider_client import observe

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "leader-workers.yaml"
NOW = "2026-01-01T00:00:00Z"


def run(module: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", module, *args], input=stdin,
                          capture_output=True, text=True, cwd=ROOT, timeout=60)


@pytest.fixture(scope="module")
def server():
    with BackgroundServer() as srv:
        yield srv


@pytest.mark.waits
@pytest.mark.parametrize(("module", "prog"), [("decider.cli", "decider"),
                                              ("shim.main", "decider-shim")])
def test_version_names_the_package_and_the_jobset_api(module: str, prog: str) -> None:
    out = run(module, "--version")
    assert out.returncode == 0, out.stderr
    version = metadata.version("jobset-decider")
    assert out.stdout.strip() == (f"{prog} {version} (JobSet API jobset.x-k8s.io/v1alpha2, "
                                  "upstream v0.13.0-devel)")
    # The release the README says the decider follows.
    assert re.search(r"upstream JobSet v0\.13\.0-devel\b", (ROOT / "README.md").read_text())


@pytest.mark.waits
@pytest.mark.parametrize("module", ["decider.cli", "shim.main"])
def test_the_version_line_is_one_line_however_narrow_the_terminal(module: str) -> None:
    # argparse's version action wraps at COLUMNS: a script reading the line got two.
    out = subprocess.run([sys.executable, "-m", module, "--version"], capture_output=True,
                         text=True, cwd=ROOT, timeout=60, env={**os.environ, "COLUMNS": "30"})
    assert out.returncode == 0 and out.stdout.count("\n") == 1, out.stdout


def test_every_shim_flag_has_help() -> None:
    from shim.flags import build_parser

    missing = [a.option_strings[0] for a in build_parser({})._actions
               if a.option_strings and not a.help]
    assert missing == []


# ---- several JobSets ------------------------------------------------------------------------

def _two_jobsets() -> str:
    first = yaml.safe_load(EXAMPLE.read_text())
    second = copy.deepcopy(first)
    second["metadata"].update(name="other", uid="22222222-0000-0000-0000-000000000000")
    second["spec"]["replicatedJobs"] = second["spec"]["replicatedJobs"][:1]
    second["spec"]["successPolicy"] = {"operator": "All"}
    # A Job of `other`: it must reach `other`'s decision only.
    job = {"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"name": "other-leader-0", "namespace": "default", "uid": "j-1",
                        "labels": {"jobset.sigs.k8s.io/jobset-name": "other",
                                   "jobset.sigs.k8s.io/replicatedjob-name": "leader",
                                   "jobset.sigs.k8s.io/job-index": "0",
                                   "jobset.sigs.k8s.io/restart-attempt": "0"},
                        "ownerReferences": [{"apiVersion": "jobset.x-k8s.io/v1alpha2",
                                             "kind": "JobSet", "name": "other",
                                             "uid": second["metadata"]["uid"],
                                             "controller": True}]},
           "spec": {"parallelism": 1, "completions": 1}, "status": {}}
    return yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [first, second, job]})


@pytest.mark.waits
def test_decide_with_several_jobsets_prints_a_plan_for_each_keyed_by_namespace_and_name() -> None:
    out = run("decider.cli", "decide", "-f", "-", "--now", NOW, "-o", "json", stdin=_two_jobsets())
    assert out.returncode == 0, out.stderr
    plans = json.loads(out.stdout)
    assert list(plans) == ["default/trainer", "default/other"]
    created = {key: [a["name"] for a in plan["actions"] if a["type"] == "CreateJob"]
               for key, plan in plans.items()}
    assert created == {"default/trainer": ["trainer-leader-0", "trainer-workers-0",
                                           "trainer-workers-1", "trainer-workers-2"],
                       # Its one Job exists: nothing to create.
                       "default/other": []}


@pytest.mark.waits
@pytest.mark.parametrize("name", ["trainer", "default/trainer"])
def test_decide_name_picks_one_jobset_and_prints_its_plan_as_for_a_single_file(name: str) -> None:
    alone = run("decider.cli", "decide", "-f", str(EXAMPLE), "--now", NOW, "-o", "json")
    picked = run("decider.cli", "decide", "-f", "-", "--now", NOW, "-o", "json", "--name", name,
                 stdin=_two_jobsets())
    assert picked.returncode == 0, picked.stderr
    # The same plan (the List re-serialized the JobSet with sorted keys: compare as data).
    assert json.loads(picked.stdout) == json.loads(alone.stdout)


@pytest.mark.waits
def test_decide_name_that_is_not_in_the_file_is_refused_listing_what_is() -> None:
    out = run("decider.cli", "decide", "-f", "-", "--now", NOW, "--name", "nope",
              stdin=_two_jobsets())
    assert out.returncode == 2
    assert out.stderr.strip().splitlines()[-1] == (
        "decider: --name: no JobSet 'nope' in - (it holds default/trainer, default/other)")


@pytest.mark.waits
def test_decide_refuses_the_same_jobset_twice() -> None:
    text = EXAMPLE.read_text()
    out = run("decider.cli", "decide", "-f", "-", "--now", NOW, stdin=text + "\n---\n" + text)
    assert out.returncode == 2
    assert "holds JobSet default/trainer more than once" in out.stderr


# ---- feature gates --------------------------------------------------------------------------

@pytest.mark.waits
@pytest.mark.parametrize("command", ["decide", "validate"])
def test_an_unknown_feature_gate_is_refused_naming_the_known_ones(command: str) -> None:
    args = [command, "-f", str(EXAMPLE), "--feature-gates", "Nope=true"]
    if command == "decide":
        args += ["--now", NOW]
    out = run("decider.cli", *args)
    assert out.returncode == 2
    assert out.stderr.strip() == (
        "decider: --feature-gates: options.feature_gates[Nope]: unknown feature gate 'Nope'; "
        "known gates: ElasticJobSet, ExecutionAttemptsTracking, InPlaceRestart, "
        "JobSetActiveDeadlineSeconds, JobSetGangOfGangs, JobSetWorkloadAwareSchedulingAPI, "
        "MutablePodResourcesForSuspendedJobSets, RestartJob, TLSOptions")


@pytest.mark.waits
def test_known_feature_gates_are_still_taken() -> None:
    out = run("decider.cli", "decide", "-f", str(EXAMPLE), "--now", NOW, "--feature-gates",
              "RestartJob=true,ElasticJobSet=false")
    assert out.returncode == 0, out.stderr


@pytest.mark.waits
@pytest.mark.parametrize("gate", [
    "ExecutionAttemptsTracking",  # KEP-1282, #1283
    "JobSetActiveDeadlineSeconds",  # KEP-1186, #1320
    "MutablePodResourcesForSuspendedJobSets",  # KEP-1150, #1273
    "JobSetWorkloadAwareSchedulingAPI",  # KEP-969, #1250
    "JobSetGangOfGangs",  # KEP-969 alpha 2
])
@pytest.mark.parametrize("command", ["decide", "validate"])
def test_upstreams_newer_gates_are_known(command: str, gate: str) -> None:
    args = [command, "-f", str(EXAMPLE), "--feature-gates", f"{gate}=true"]
    if command == "decide":
        args += ["--now", NOW]
    out = run("decider.cli", *args)
    assert out.returncode == 0, out.stderr


def _jobset() -> dict:
    return yaml.safe_load(EXAMPLE.read_text())


def _decide_request(jobset: dict, jobs: list[dict] = (), gates: dict | None = None
                    ) -> pb.DecideRequest:
    from datetime import UTC, datetime
    return observe.build_decide_request(jobset, jobs, datetime(2026, 1, 1, tzinfo=UTC),
                                        feature_gates=gates)


@pytest.mark.waits
def test_an_unknown_feature_gate_over_grpc_is_invalid_argument(server: BackgroundServer) -> None:
    with grpc.insecure_channel(server.target) as channel:
        stub = pb_grpc.DeciderStub(channel)
        for call, request in (
            (stub.Decide, _decide_request(_jobset(), gates={"Nope": True})),
            (stub.Validate, pb.ValidateRequest(object_json=json.dumps(_jobset()),
                                               options=observe.options(
                                                   feature_gates={"Nope": False}))),
        ):
            with pytest.raises(grpc.RpcError) as err:
                call(request, timeout=30)
            assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert err.value.details().startswith(
                "options.feature_gates[Nope]: unknown feature gate 'Nope'; known gates: ")


# ---- malformed times ------------------------------------------------------------------------

def _job(**conditions_and_times: str) -> dict:
    meta = {"name": "trainer-leader-0", "namespace": "default", "uid": "j-1",
            "creationTimestamp": conditions_and_times.get("created", "2026-01-01T00:00:00Z"),
            "labels": {"jobset.sigs.k8s.io/jobset-name": "trainer",
                       "jobset.sigs.k8s.io/replicatedjob-name": "leader",
                       "jobset.sigs.k8s.io/job-index": "0",
                       "jobset.sigs.k8s.io/restart-attempt": "0"},
            "ownerReferences": [{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                                 "name": "trainer", "uid": _jobset()["metadata"]["uid"],
                                 "controller": True}]}
    status: dict = {"failed": 1, "conditions": [
        {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
         "lastTransitionTime": conditions_and_times.get("failed_at", "2026-01-01T00:00:00Z")}]}
    if "started" in conditions_and_times:
        status["startTime"] = conditions_and_times["started"]
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta,
            "spec": {"parallelism": 1, "completions": 1}, "status": status}


def _decide_error(request: pb.DecideRequest) -> str:
    reply = dispatch.answer("Decide", request.SerializeToString(), DEFAULT)
    assert reply.code == dispatch.INVALID_ARGUMENT, reply.message
    return reply.message


_FAILED_AT = "jobs[0].conditions[0].last_transition_time"


@pytest.mark.parametrize(("times", "field"), [
    ({"failed_at": "yesterday"}, "jobs[0].conditions[0].last_transition_time"),
    ({"failed_at": "2026-13-01T00:00:00Z"}, "jobs[0].conditions[0].last_transition_time"),
    ({"failed_at": "2026-01-01T00:00:00"}, "jobs[0].conditions[0].last_transition_time"),
    ({"created": "2026-01-01"}, "jobs[0].creation_timestamp"),
    ({"started": "2026-02-30T00:00:00Z"}, "jobs[0].start_time"),
    # Go's time.Parse(RFC3339), which the API server applies, takes only an upper-case T and Z
    # and ASCII digits; one reader here took these while another read them as "no time".
    pytest.param({"failed_at": "2026-01-01T00:00:40z"}, _FAILED_AT, id="lower-case-z"),
    pytest.param({"failed_at": "2026-01-01t00:00:40Z"}, _FAILED_AT, id="lower-case-t"),
    pytest.param({"failed_at": "2026-01-01T00:00:40.\uff11Z"}, _FAILED_AT, id="non-ascii-digit"),
    pytest.param({"created": "２026-01-01T00:00:00Z"}, "jobs[0].creation_timestamp",
                 id="non-ascii-year"),
])
def test_a_malformed_time_of_an_observed_job_is_invalid_argument_naming_it(times, field) -> None:
    message = _decide_error(_decide_request(_jobset(), [_job(**times)]))
    assert message.startswith(f"{field}: ")
    assert "is not an RFC 3339 time" in message


@pytest.mark.parametrize(("where", "field"), [
    ("created", "metadata.creationTimestamp"),
    ("condition", "status.conditions[0].lastTransitionTime"),
])
def test_a_malformed_time_of_the_jobset_is_invalid_argument_naming_it(where, field) -> None:
    jobset = _jobset()
    if where == "created":
        jobset["metadata"]["creationTimestamp"] = "not a time"
    else:
        jobset["status"] = {"conditions": [{"type": "Completed", "status": "True",
                                            "reason": "AllJobsCompleted", "message": "",
                                            "lastTransitionTime": "01/01/2026"}]}
    message = _decide_error(_decide_request(jobset))
    assert message.startswith(f"jobset_json.{field}: ") or message.startswith(f"{field}: ")


@pytest.mark.parametrize("value", ["2026-01-01T00:00:00Z", "2026-01-01T00:00:00.123456789Z",
                                   "2026-01-01T02:00:00+02:00"])
def test_rfc3339_times_as_the_api_server_writes_them_are_taken(value: str) -> None:
    reply = dispatch.answer("Decide", _decide_request(
        _jobset(), [_job(failed_at=value, created=value)]).SerializeToString(), DEFAULT)
    assert reply.code == dispatch.OK, reply.message


@pytest.mark.parametrize("same_uid", [True, False], ids=["same-object-twice", "two-uids"])
def test_a_job_observed_twice_is_invalid_argument_naming_the_second(same_uid: bool) -> None:
    """A namespace holds one object of a name (two listings pasted together give the same Job
    twice); counted twice, it doubled the replicated Job's active and ready counts."""
    first, second = _job(), _job()
    if not same_uid:
        second["metadata"]["uid"] = "j-2"
    message = _decide_error(_decide_request(_jobset(), [first, second]))
    assert message.startswith("jobs[1].name: Duplicate value: 'trainer-leader-0'"), message


def test_a_job_observed_twice_in_observed_json_names_its_object() -> None:
    request = pb.DecideRequest(jobset_json=json.dumps(_jobset()),
                               observed_json=[json.dumps(_job()), json.dumps(_job())])
    request.now.FromJsonString("2026-01-01T00:00:00Z")
    message = _decide_error(request)
    assert message.startswith("observed_json[1]"), message
    assert "Duplicate value" in message


def test_a_jobset_name_past_253_characters_is_refused_as_the_api_server_would() -> None:
    """Decide planned Jobs and a Service with names longer still (docs/serving.md: names are held to
    253 bytes); admission already said so."""
    jobset = _jobset()
    jobset["metadata"]["name"] = "a" * 254
    message = _decide_error(_decide_request(jobset))
    assert "metadata.name: must be no more than 253 characters" in message, message
