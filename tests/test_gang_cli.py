"""`decider gang | podsets`, Validate for Jobs and Decide's gang options, end to end.

Both paths go through the contract (request -> convert -> response -> render), so the CLI
in-process, the CLI with --server and a raw gRPC stub must agree byte for byte. The golden
manifests of the core (tests/gang/golden) are replayed through the CLI and through gRPC, for
every API version and target.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml

from decider.contract import gang as gang_contract
from decider.service.server import BackgroundServer
from decider_api.v1 import decider_pb2 as pb
from decider_api.v1 import decider_pb2_grpc as pb_grpc
from decider_client import observe, render
from support.cli_run import run_cli

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "gang" / "golden"
GANG_JOB = ROOT / "examples" / "gang-job.yaml"
GANG_JOBSET = ROOT / "examples" / "gang-jobset.yaml"
NOW = "2026-01-01T00:00:00Z"
V1ALPHA1, V1ALPHA2, V1BETA1 = (f"scheduling.k8s.io/{v}" for v in ("v1alpha1", "v1alpha2",
                                                                    "v1beta1"))
# Golden file stem -> CLI flags (the same table as tests/gang/test_gang_golden.py).
STEMS = {
    "v1alpha1": ["--api-version", V1ALPHA1],
    "v1alpha2": ["--api-version", V1ALPHA2],
    "v1beta1": [],  # the default: the newest generation
    "scheduler-plugins": ["--target", "scheduler-plugins"],
    "volcano": ["--target", "volcano"],
}
CASES = sorted(p.name for p in GOLDEN.iterdir() if (p / "input.json").exists())


def decider(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "decider.cli", *args], input=stdin,
                          capture_output=True, text=True, cwd=ROOT, timeout=60)


@pytest.fixture(scope="module")
def server():
    with BackgroundServer() as srv:
        yield srv


@pytest.fixture(scope="module")
def stub(server: BackgroundServer):
    channel = grpc.insecure_channel(server.target)
    yield pb_grpc.DeciderStub(channel)
    channel.close()


def write(tmp_path: Path, *objects: dict[str, Any], name: str = "in.yaml") -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(list(objects), sort_keys=False))
    return str(path)


def golden_input(case: str, tmp_path: Path) -> str:
    data = json.loads((GOLDEN / case / "input.json").read_text())
    return write(tmp_path, data["object"], *data.get("existing", []))


def load(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text())


# --- golden manifests through the CLI and over gRPC ------------------------------------------

@pytest.mark.parametrize("stem", sorted(STEMS))
@pytest.mark.parametrize("case", CASES)
def test_golden_through_the_cli(case: str, stem: str, tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "gang", "-f", golden_input(case, tmp_path), *STEMS[stem])
    assert code == 0, err
    assert json.loads(out) == json.loads((GOLDEN / case / f"{stem}.json").read_text())


@pytest.mark.waits
@pytest.mark.parametrize("stem", sorted(STEMS))
@pytest.mark.parametrize("case", CASES)
def test_golden_over_grpc_prints_the_same_bytes(case: str, stem: str, tmp_path: Path,
                                                server: BackgroundServer,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    path = golden_input(case, tmp_path)
    code, local, err = run_cli(capsys, "gang", "-f", path, *STEMS[stem])
    assert code == 0, err
    code, remote, err = run_cli(capsys, "gang", "-f", path, *STEMS[stem],
                             "--server", server.target)
    assert code == 0, err
    assert remote == local


# --- the examples, as a process ---------------------------------------------------------------

@pytest.mark.waits
def test_job_on_v1alpha2_gets_what_a_1_36_job_controller_creates() -> None:
    out = decider("gang", "-f", str(GANG_JOB), "--api-version", V1ALPHA2)
    assert out.returncode == 0, out.stderr
    plan = json.loads(out.stdout)
    workload, podgroup = plan["objects"]
    job_ref = {"apiVersion": "batch/v1", "kind": "Job", "name": "train",
               "uid": "5f0a9c1e-7b2d-4c3e-9a8f-0123456789ab", "controller": True,
               "blockOwnerDeletion": True}
    assert workload == {
        "apiVersion": V1ALPHA2, "kind": "Workload",
        "metadata": {"name": "train-5569fd55d5", "namespace": "default",
                     "ownerReferences": [job_ref]},
        "spec": {"controllerRef": {"apiGroup": "batch", "kind": "Job", "name": "train"},
                 # v1alpha2's schedulingConstraints has no omitempty: the API serves null.
                 "podGroupTemplates": [{"name": "train-pgt-0",
                                        "schedulingPolicy": {"gang": {"minCount": 4}},
                                        "schedulingConstraints": None}]},
    }
    assert podgroup["metadata"]["name"] == "train-5569fd55d5-train-pgt-0-9c46fc9d5"
    assert podgroup["metadata"]["ownerReferences"] == [
        job_ref, {"apiVersion": V1ALPHA2, "kind": "Workload", "name": "train-5569fd55d5",
                  "uid": ""}]
    assert podgroup["spec"] == {
        "podGroupTemplateRef": {"workload": {"workloadName": "train-5569fd55d5",
                                             "podGroupTemplateName": "train-pgt-0"}},
        "schedulingPolicy": {"gang": {"minCount": 4}}}
    assert plan["podTemplatePatches"] == {"train": {"spec": {"schedulingGroup": {
        "podGroupName": "train-5569fd55d5-train-pgt-0-9c46fc9d5"}}}}
    assert plan["mode"] == "gang"


@pytest.mark.waits
@pytest.mark.parametrize("args", [
    ["gang", "-f", str(GANG_JOB)],
    ["gang", "-f", str(GANG_JOB), "--api-version", V1ALPHA1],
    ["gang", "-f", str(GANG_JOB), "--api-version", V1ALPHA2, "-o", "yaml"],
    ["gang", "-f", str(GANG_JOBSET)],
    ["gang", "-f", str(GANG_JOBSET), "--target", "volcano"],
    ["gang", "-f", str(GANG_JOBSET), "--target", "scheduler-plugins", "-o", "yaml"],
    ["podsets", "-f", str(GANG_JOBSET)],
    ["podsets", "-f", str(GANG_JOB), "--api-version", V1ALPHA2, "-o", "yaml"],
], ids=lambda a: " ".join(Path(x).name for x in a))
def test_server_prints_the_same_bytes_as_in_process(args: list[str],
                                                    server: BackgroundServer) -> None:
    local = decider(*args)
    remote = decider(*args, "--server", server.target)
    assert local.returncode == remote.returncode == 0, local.stderr + remote.stderr
    assert local.stdout == remote.stdout
    assert local.stdout  # and it printed something


@pytest.mark.waits
def test_jobset_example_one_gang_per_replicated_job() -> None:
    out = decider("gang", "-f", str(GANG_JOBSET))
    assert out.returncode == 0, out.stderr
    plan = json.loads(out.stdout)
    kinds = [(o["apiVersion"], o["kind"]) for o in plan["objects"]]
    assert kinds == [(V1BETA1, "Workload"), (V1BETA1, "PodGroup"), (V1BETA1, "PodGroup")]
    assert set(plan["podTemplatePatches"]) == {"trainer-leader-0", "trainer-workers-0",
                                               "trainer-workers-1"}
    assert set(plan["jobAnnotations"]) == set(plan["podTemplatePatches"])
    assert [pg["spec"]["schedulingPolicy"]["gang"]["minCount"] for pg in plan["objects"][1:]] \
        == [1, 8]


@pytest.mark.waits
def test_stdin_and_yaml_output() -> None:
    out = decider("gang", "-f", "-", "-o", "yaml", stdin=GANG_JOB.read_text())
    assert out.returncode == 0, out.stderr
    assert yaml.safe_load(out.stdout)["podTemplatePatches"]["train"]


# --- inputs that do not qualify, and existing objects -------------------------------------------

def test_a_job_that_does_not_qualify_gets_no_objects_and_a_reason(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job = load(GANG_JOB)
    job["spec"]["completionMode"] = "NonIndexed"
    code, out, err = run_cli(capsys, "gang", "-f", write(tmp_path, job), "--api-version", V1ALPHA2)
    assert code == 0, err
    plan = json.loads(out)
    assert plan["objects"] == [] and plan["podTemplatePatches"] == {}
    assert any("Indexed" in s for s in plan["explanation"]), plan["explanation"]


def test_a_jobset_without_gang_config_gets_no_objects(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    js = load(GANG_JOBSET)
    del js["metadata"]["annotations"]
    code, out, err = run_cli(capsys, "gang", "-f", write(tmp_path, js))
    assert code == 0, err
    assert json.loads(out) == {"objects": [], "podTemplatePatches": {}, "explanation": [
        "JobSet trainer asks for no gang scheduling: no objects"], "mode": "none"}


def _served(plan: dict[str, Any], owner_uid: str) -> list[dict[str, Any]]:
    """The plan's objects as the API server would serve them once created."""
    out = []
    for i, obj in enumerate(plan["objects"]):
        obj = json.loads(json.dumps(obj))
        obj["metadata"]["uid"] = f"uid-{i}"
        for ref in obj["metadata"]["ownerReferences"]:
            if ref.get("controller"):
                ref["uid"] = owner_uid
            elif ref["kind"] == "Workload":
                ref["uid"] = "uid-0"
        out.append(obj)
    return out


def test_objects_that_exist_and_are_owned_are_reused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    js = load(GANG_JOBSET)
    code, out, _ = run_cli(capsys, "gang", "-f", str(GANG_JOBSET))
    served = _served(json.loads(out), js["metadata"]["uid"])
    code, out, err = run_cli(capsys, "gang", "-f", write(tmp_path, js, *served))
    assert code == 0, err
    plan = json.loads(out)
    assert plan["objects"] == []
    assert len(plan["podTemplatePatches"]) == 3  # Jobs still need their references
    assert sum("controlled by the JobSet: kept" in s for s in plan["explanation"]) == 3


def test_suspended_jobset_plans_deletes_with_uids(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    js = load(GANG_JOBSET)
    code, out, _ = run_cli(capsys, "gang", "-f", str(GANG_JOBSET))
    served = _served(json.loads(out), js["metadata"]["uid"])
    js["spec"]["suspend"] = True
    code, out, err = run_cli(capsys, "gang", "-f", write(tmp_path, js, *served))
    assert code == 0, err
    deletes = json.loads(out)["deletes"]
    assert [(d["kind"], d["uid"]) for d in deletes] == [
        ("PodGroup", "uid-1"), ("PodGroup", "uid-2"), ("Workload", "uid-0")]
    assert list(deletes[0]) == ["apiVersion", "kind", "name", "uid"]


def test_min_count_update_is_rendered(tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    js = load(GANG_JOBSET)
    code, out, _ = run_cli(capsys, "gang", "-f", str(GANG_JOBSET))
    served = _served(json.loads(out), js["metadata"]["uid"])
    js["spec"]["replicatedJobs"][1]["replicas"] = 3
    path = write(tmp_path, js, *served)
    code, out, err = run_cli(capsys, "gang", "-f", path)
    assert code == 0, err
    updates = json.loads(out)["updates"]
    assert {(u["kind"], u["patchType"]) for u in updates} == {("Workload", "merge"),
                                                             ("PodGroup", "merge")}
    pg = next(u for u in updates if u["kind"] == "PodGroup")
    assert pg["uid"] == "uid-2"
    assert pg["patch"] == {"spec": {"schedulingPolicy": {"gang": {"minCount": 12}}}}


# --- bad input: exit 2 / INVALID_ARGUMENT naming the field ------------------------------------

@pytest.mark.waits
@pytest.mark.parametrize("extra,field", [
    (["--api-version", "scheduling.k8s.io/v2"], "options.gang_api_version"),
    (["--target", "yunikorn"], "options.gang_target"),
    (["--target", V1ALPHA2], "options.gang_target"),
])
def test_bad_options_exit_2_naming_the_field(extra: list[str], field: str,
                                             server: BackgroundServer) -> None:
    for server_args in ([], ["--server", server.target]):
        out = decider("gang", "-f", str(GANG_JOB), *extra, *server_args)
        assert out.returncode == 2, out.stderr
        # The flag the user typed first, then the request field it set.
        assert out.stderr.startswith(f"decider: {extra[0]}: {field}: Unsupported value"), \
            out.stderr
        assert out.stdout == ""


def test_bad_documents_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "x"}}
    code, _, err = run_cli(capsys, "gang", "-f", write(tmp_path, svc))
    assert code == 2
    assert "exactly one batch/v1 Job or one JobSet" in err
    code, _, err = run_cli(capsys, "podsets", "-f", write(tmp_path, load(GANG_JOB), load(GANG_JOB)))
    assert code == 2
    assert "found 0 JobSet(s) and 2 Job(s)" in err


@pytest.mark.waits
def test_invalid_jobset_scheduling_names_the_field(tmp_path: Path,
                                                   server: BackgroundServer) -> None:
    js = load(GANG_JOBSET)
    del js["metadata"]["annotations"]
    js["spec"]["scheduling"] = {"replicatedJobs": [{"targetReplicatedJobs": ["leader"]}]}
    path = write(tmp_path, js)
    for server_args in ([], ["--server", server.target]):
        out = decider("gang", "-f", path, *server_args)
        assert out.returncode == 2
        # "workers" is in no entry: every replicated Job must be targeted exactly once.
        assert out.stderr.startswith(
            "decider: spec.replicatedJobs[1].name: must be targeted by a replicatedJobs entry"), \
            out.stderr


@pytest.mark.waits
def test_a_foreign_object_is_refused_naming_it(tmp_path: Path, server: BackgroundServer,
                                               stub: pb_grpc.DeciderStub) -> None:
    js = load(GANG_JOBSET)
    plan = json.loads(decider("gang", "-f", str(GANG_JOBSET)).stdout)
    served = _served(plan, "someone-else")
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "trainer"}}
    path = write(tmp_path, js, svc, *served)
    for server_args in ([], ["--server", server.target]):
        out = decider("gang", "-f", path, *server_args)
        assert out.returncode == 2
        assert out.stderr.startswith(
            "decider: objects[1].object_json.metadata.ownerReferences: Workload "
            "trainer-e6b756aec7 already exists and is not controlled by JobSet trainer"), \
            out.stderr
    with pytest.raises(grpc.RpcError) as err:
        stub.PlanGang(observe.build_plan_gang_request(js, [svc, *served]), timeout=10)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert err.value.details().startswith("objects[1].object_json.metadata.ownerReferences")


@pytest.mark.waits
@pytest.mark.parametrize("request_,field", [
    (pb.PlanGangRequest(), "object_json: Required value"),
    (pb.PlanGangRequest(object_json="[1]"), "object_json: must be a JSON object"),
    (pb.PlanGangRequest(object_json='{"kind": "Pod"}'), "kind: expected a batch/v1 Job"),
    (pb.PlanGangRequest(object_json="{}", objects=[pb.ObservedObject(kind="Workload")]),
     "objects[0].object_json: Required value"),
    (pb.PodSetsRequest(object_json='{"kind": "JobSet"}',
                       options=pb.Options(gang_api_version="x")),
     "options.gang_api_version: Unsupported value"),
])
def test_grpc_invalid_argument_names_the_field(request_: Any, field: str,
                                               stub: pb_grpc.DeciderStub) -> None:
    call = stub.PlanGang if isinstance(request_, pb.PlanGangRequest) else stub.PodSets
    with pytest.raises(grpc.RpcError) as err:
        call(request_, timeout=10)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert err.value.details().startswith(field), err.value.details()


# --- gRPC and in-process responses are one and the same ------------------------------------

@pytest.mark.waits
@pytest.mark.parametrize("api_version", [V1ALPHA1, V1ALPHA2, V1BETA1])
@pytest.mark.parametrize("target", ["kubernetes", "scheduler-plugins", "volcano"])
def test_plan_gang_and_pod_sets_over_grpc_equal_in_process(api_version: str, target: str,
                                                           stub: pb_grpc.DeciderStub) -> None:
    for example in (GANG_JOB, GANG_JOBSET):
        obj = load(example)
        req = observe.build_plan_gang_request(obj, [], api_version, target)
        assert stub.PlanGang(req, timeout=10) == gang_contract.plan_gang_response(req)
        sets = observe.build_pod_sets_request(obj, api_version)
        assert stub.PodSets(sets, timeout=10) == gang_contract.pod_sets_response(sets)


def test_render_matches_the_core_to_dict() -> None:
    from decider.core.gang import plan_gang, pod_sets

    for example in (GANG_JOB, GANG_JOBSET):
        obj = load(example)
        for api_version in (V1ALPHA1, V1ALPHA2, V1BETA1):
            req = observe.build_plan_gang_request(obj, [], api_version)
            got = render.gang_plan_to_dict(gang_contract.plan_gang_response(req))
            want = plan_gang(obj, [], api_version).to_dict()
            assert json.dumps(got) == json.dumps(want)  # same keys, same order
            sets = render.pod_sets_to_dict(gang_contract.pod_sets_response(
                observe.build_pod_sets_request(obj, api_version)))
            assert sets == {"podSets": [p.to_dict() for p in pod_sets(obj, api_version)]}


# --- podsets -------------------------------------------------------------------------------------

def test_podsets_warns_where_kueue_and_the_gang_disagree(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    js = load(GANG_JOBSET)
    js["spec"]["replicatedJobs"][1]["template"]["spec"]["completions"] = 2
    code, out, err = run_cli(capsys, "podsets", "-f", write(tmp_path, js))
    assert code == 0, err
    workers = json.loads(out)["podSets"][1]
    assert workers["count"] == 4  # 2 replicas x min(4, 2)
    assert workers["gang"]["minCount"] == 8
    assert workers["warnings"] == [
        "CountMismatch: pod set workers counts 4 but the gang minCount is 8 "
        "(completions < parallelism)"]


def test_podsets_of_a_job(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "podsets", "-f", str(GANG_JOB), "--api-version", V1ALPHA2)
    assert code == 0, err
    assert json.loads(out) == {"podSets": [{
        "name": "main", "count": 4, "replicatedJob": None,
        "gang": {"podGroup": "train-5569fd55d5-train-pgt-0-9c46fc9d5",
                 "template": "train-pgt-0", "minCount": 4, "podSets": ["main"]},
        "warnings": [], "podRequests": {}, "totalRequests": {}, "nodeSelector": {},
        "tolerations": [],
        "topologyRequest": {"podIndexLabel": "batch.kubernetes.io/job-completion-index"}}]}


# --- Validate for Jobs ---------------------------------------------------------------------------

def _scaled(tmp_path: Path) -> tuple[str, str]:
    old = load(GANG_JOB)
    new = load(GANG_JOB)
    new["spec"]["parallelism"] = 2
    return write(tmp_path, new, name="new.yaml"), write(tmp_path, old, name="old.yaml")


@pytest.mark.waits
def test_validate_rejects_a_parallelism_change_of_a_1_36_gang_job(
        tmp_path: Path, server: BackgroundServer) -> None:
    new, old = _scaled(tmp_path)
    outs = [decider("validate", "-f", new, "--old", old, "--api-version", V1ALPHA2, *s)
            for s in ([], ["--server", server.target])]
    assert outs[0].stdout == outs[1].stdout
    for out in outs:
        assert out.returncode == 2, out.stderr
        assert json.loads(out.stdout) == {"valid": False, "errors": [{
            "field": "spec.parallelism",
            "message": "Forbidden: cannot change parallelism for a Job referencing "
                       'gang-scheduled PodGroup "train-5569fd55d5-train-pgt-0-9c46fc9d5"'}]}


@pytest.mark.waits
def test_validate_reads_the_podgroups_that_exist(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    new_path, old_path = _scaled(tmp_path)
    # The admission plugin looks the PodGroup up: one that exists, controlled by the Job.
    job = load(GANG_JOB)
    plan = json.loads(decider("gang", "-f", str(GANG_JOB), "--api-version", V1ALPHA2).stdout)
    served = _served(plan, job["metadata"]["uid"])
    new = load(Path(new_path))
    code, out, _ = run_cli(capsys, "validate", "-f", write(tmp_path, new, *served), "--old",
                        old_path, "--api-version", V1ALPHA2)
    assert code == 2
    assert json.loads(out)["errors"][0]["field"] == "spec.parallelism"
    # A PodGroup of someone else (Basic, not the Job's) does not freeze anything.
    other = {"apiVersion": V1ALPHA2, "kind": "PodGroup",
             "metadata": {"name": "unrelated", "namespace": "default", "uid": "u"},
             "spec": {"schedulingPolicy": {"basic": {}}}}
    code, out, _ = run_cli(capsys, "validate", "-f", write(tmp_path, new, other), "--old",
                        old_path, "--api-version", V1ALPHA2)
    assert code == 0, out
    assert json.loads(out) == {"valid": True, "object": new}


def test_validate_on_1_37_has_no_parallelism_freeze_but_checks_scheduling(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    new, old = _scaled(tmp_path)
    code, out, _ = run_cli(capsys, "validate", "-f", new, "--old", old)
    assert code == 0, out
    job = load(GANG_JOB)
    job["spec"]["scheduling"] = {"schedulingPolicy": {"gang": {"minCount": 9}}}
    code, out, _ = run_cli(capsys, "validate", "-f", write(tmp_path, job, name="j.yaml"))
    assert code == 2
    assert json.loads(out)["errors"][0]["field"].startswith("spec.scheduling")


def test_validate_a_jobset_is_unchanged(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "validate", "-f", str(ROOT / "examples" / "leader-workers.yaml"))
    assert code == 0
    assert json.loads(out)["valid"] is True


def test_validate_job_against_a_jobset_is_refused(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "validate", "-f", str(GANG_JOB), "--old", str(GANG_JOBSET))
    assert code == 2
    assert "old_object_json: must be a batch/v1 Job" in err


# --- Decide with gang options --------------------------------------------------------------------

@pytest.mark.waits
def test_decide_creates_gang_objects_before_jobs_with_the_chosen_generation(
        server: BackgroundServer) -> None:
    args = ["decide", "-f", str(GANG_JOBSET), "--now", NOW, "-o", "json",
            "--gang-api-version", V1ALPHA2]
    local = decider(*args)
    remote = decider(*args, "--server", server.target)
    assert local.returncode == 0, local.stderr
    assert local.stdout == remote.stdout
    actions = json.loads(local.stdout)["actions"]
    assert [a["type"] for a in actions] == [
        "CreateService", "CreateWorkload", "CreatePodGroup", "CreatePodGroup",
        "CreateJob", "CreateJob", "CreateJob", "UpdateStatus"]
    assert {a["object"]["apiVersion"] for a in actions[1:4]} == {V1ALPHA2}
    pgs = {a["name"] for a in actions[2:4]}
    for a in actions[4:7]:
        assert a["object"]["spec"]["template"]["spec"]["schedulingGroup"]["podGroupName"] in pgs


@pytest.mark.waits
def test_decide_volcano_target_and_bad_target(server: BackgroundServer) -> None:
    out = decider("decide", "-f", str(GANG_JOBSET), "--now", NOW, "-o", "json", "--gang-target",
                  "volcano")
    assert out.returncode == 0, out.stderr
    actions = json.loads(out.stdout)["actions"]
    assert [a["object"]["apiVersion"] for a in actions if a["type"] == "CreatePodGroup"] == [
        "scheduling.volcano.sh/v1beta1"] * 2
    for server_args in ([], ["--server", server.target]):
        bad = decider("decide", "-f", str(GANG_JOBSET), "--now", NOW, "--gang-target", "x",
                      *server_args)
        assert bad.returncode == 2
        assert bad.stderr.startswith("decider: --gang-target: options.gang_target: Unsupported")


@pytest.mark.waits
def test_decide_ownership_conflict_is_a_warning_event(tmp_path: Path) -> None:
    js = load(GANG_JOBSET)
    plan = json.loads(decider("gang", "-f", str(GANG_JOBSET)).stdout)
    path = write(tmp_path, js, *_served(plan, "someone-else"))
    out = decider("decide", "-f", path, "--now", NOW, "-o", "json")
    assert out.returncode == 0, out.stderr
    decided = json.loads(out.stdout)
    types = [a["type"] for a in decided["actions"]]
    assert "CreateJob" not in types and "CreateWorkload" not in types
    event = next(a["event"] for a in decided["actions"] if a["type"] == "Event")
    assert event["type"] == "Warning" and event["reason"] == "GangObjectConflict"
    assert event["message"].startswith("objects[0].object_json.metadata.ownerReferences")
    assert (decided["requeueAfterSeconds"], decided["requeueAfter"]) == (30, "30s")


# --- Jobs with objects that exist: the CLI answers what the core answers ---------------------

def _job_scenarios() -> dict[str, tuple[dict[str, Any], list[dict[str, Any]], str]]:
    from decider.core.gang import plan_gang
    from tests.gang.gang_fixtures import job, owner

    def served(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for i, o in enumerate(objs):
            o["metadata"]["uid"] = f"uid-{i}"
        return objs

    made = served(plan_gang(job(), [], V1ALPHA2).objects)
    foreign = json.loads(json.dumps(made[0]))
    foreign["metadata"]["ownerReferences"][0]["uid"] = "other"
    elastic = {"schedulingPolicy": {"gang": {}}}
    made_b1 = served(plan_gang(job(scheduling=elastic), [], V1BETA1).objects)
    parent = {"apiVersion": V1BETA1, "kind": "Workload",
              "metadata": {"name": "parent-wl", "namespace": "default", "uid": "parent-uid",
                           "ownerReferences": [owner("Trainer", "t", "t-uid",
                                                     "example.com/v1")]},
              "spec": {"controllerRef": {"apiGroup": "example.com", "kind": "Trainer",
                                         "name": "t"},
                       "podGroupTemplates": [{"name": "workers", "schedulingPolicy": {
                           "gang": {"minCount": 3}}}]}}
    delegated = job(owner=owner("Trainer", "t", "t-uid", "example.com/v1"),
                    annotations={"scheduling.k8s.io/group-template-name": "workers"})
    return {
        "1.36 started job reuses its objects": (job(status={"startTime": "t"}), made, V1ALPHA2),
        "1.36 workload of another owner: default scheduling": (job(), [foreign], V1ALPHA2),
        "1.37 minCount patched in place": (
            job(parallelism=6, completions=6, scheduling=elastic), made_b1, V1BETA1),
        "1.37 delegated job makes only its podgroup": (delegated, [parent], V1BETA1),
    }


@pytest.mark.waits
@pytest.mark.parametrize("scenario", sorted(_job_scenarios()))
def test_job_scenarios_with_existing_objects_match_the_core(
        scenario: str, tmp_path: Path, server: BackgroundServer,
        capsys: pytest.CaptureFixture[str]) -> None:
    from decider.core.gang import plan_gang

    obj, existing, api_version = _job_scenarios()[scenario]
    want = plan_gang(obj, existing, api_version).to_dict()
    path = write(tmp_path, obj, *existing)
    code, local, err = run_cli(capsys, "gang", "-f", path, "--api-version", api_version)
    assert code == 0, err
    code, remote, err = run_cli(capsys, "gang", "-f", path, "--api-version", api_version,
                             "--server", server.target)
    assert code == 0, err
    assert local == remote
    assert json.loads(local) == want


# --- upstream's spec.scheduling and the CompositePodGroup tree ------------------------------------

SCHEDULING_JOBSET = ROOT / "examples" / "scheduling-jobset.yaml"


@pytest.mark.waits
@pytest.mark.parametrize("command", ["gang", "podsets"])
@pytest.mark.parametrize("gates", [[], ["--feature-gates", "JobSetGangOfGangs=true"]])
def test_scheduling_example_in_process_and_over_grpc(command: str, gates: list[str],
                                                     server: BackgroundServer,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    code, local, err = run_cli(capsys, command, "-f", str(SCHEDULING_JOBSET), *gates)
    assert code == 0, err
    code, remote, err = run_cli(capsys, command, "-f", str(SCHEDULING_JOBSET), *gates,
                                "--server", server.target)
    assert code == 0, err
    assert remote == local
    out = json.loads(local)
    if command == "gang":
        kinds = [o["kind"] for o in out["objects"]]
        assert out["mode"] == ("gangOfGangs" if gates else "perReplicatedJob")
        assert ("CompositePodGroup" in kinds) == bool(gates)
    else:
        workers = out["podSets"][1]["gang"]
        assert ("compositePodGroups" in workers) == bool(gates)


def test_decide_waits_for_the_scheduling_objects(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """A user's two passes: the Workload and PodGroups first, the Jobs once they are seen."""
    gates = ["--feature-gates", "JobSetWorkloadAwareSchedulingAPI=true", "--now", NOW,
             "-o", "json"]
    code, out, err = run_cli(capsys, "decide", "-f", str(SCHEDULING_JOBSET), *gates)
    assert code == 0, err
    first = json.loads(out)
    made = [a for a in first["actions"] if a["type"] in ("CreateWorkload", "CreatePodGroup")]
    assert len(made) == 3 and not [a for a in first["actions"] if a["type"] == "CreateJob"]
    served = []
    for a in made:
        obj = a["object"]
        obj["metadata"]["uid"] = f"uid-{a['name']}"
        served.append(obj)
    path = write(tmp_path, load(SCHEDULING_JOBSET), *served)
    code, out, err = run_cli(capsys, "decide", "-f", path, *gates)
    assert code == 0, err
    jobs = [a for a in json.loads(out)["actions"] if a["type"] == "CreateJob"]
    assert [j["name"] for j in jobs] == ["trainer-driver-0", "trainer-workers-0",
                                         "trainer-workers-1"]
    assert all(j["object"]["metadata"]["annotations"]["scheduling.k8s.io/group-template-name"]
               for j in jobs)
    code, out, err = run_cli(capsys, "decide", "-f", str(SCHEDULING_JOBSET), "--now", NOW,
                             "-o", "json")
    assert code == 0, err
    assert [a["type"] for a in json.loads(out)["actions"]][:2] == ["CreateService", "CreateJob"]
