"""`decider validate` and the Validate RPC end to end: defaulting, errors, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import grpc
import pytest

from decider.server import BackgroundServer
from decider.v1 import decider_pb2 as pb
from decider.v1 import decider_pb2_grpc as pb_grpc

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "leader-workers.yaml"


def decider(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "decider.cli", *args], input=stdin,
                          capture_output=True, text=True, cwd=ROOT, timeout=60)


@pytest.fixture(scope="module")
def server():
    with BackgroundServer() as srv:
        yield srv


def _minimal() -> dict:
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": "mini"},
            "spec": {"replicatedJobs": [{"name": "w", "template": {"spec": {"template": {
                "spec": {"containers": [{"name": "m", "image": "busybox"}]}}}}}]}}


@pytest.mark.parametrize("via_server", [False, True], ids=["in-process", "grpc"])
def test_valid_jobset_is_defaulted(via_server: bool, server: BackgroundServer) -> None:
    args = ["validate", "-f", "-"] + (["--server", server.target] if via_server else [])
    out = decider(*args, stdin=json.dumps(_minimal()))
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["valid"] is True
    spec = result["object"]["spec"]
    assert spec["successPolicy"] == {"operator": "All"}
    assert spec["startupPolicy"] == {"startupPolicyOrder": "AnyOrder"}
    assert spec["network"]["enableDNSHostnames"] is True
    assert spec["network"]["publishNotReadyAddresses"] is True
    rj = spec["replicatedJobs"][0]
    assert rj["replicas"] == 1 and rj["groupName"] == "default"
    assert rj["template"]["spec"]["completionMode"] == "Indexed"
    assert rj["template"]["spec"]["template"]["spec"]["restartPolicy"] == "OnFailure"


@pytest.mark.parametrize("via_server", [False, True], ids=["in-process", "grpc"])
def test_invalid_jobset_exits_2_with_field_errors(via_server: bool,
                                                  server: BackgroundServer) -> None:
    js = _minimal()
    js["spec"]["replicatedJobs"].append(dict(js["spec"]["replicatedJobs"][0]))
    args = ["validate", "-f", "-"] + (["--server", server.target] if via_server else [])
    out = decider(*args, stdin=json.dumps(js))
    assert out.returncode == 2
    result = json.loads(out.stdout)
    assert result["valid"] is False
    # listtype validation names the repeated item and shows its key as JSON.
    assert {"field": "spec.replicatedJobs[1]", "message": 'Duplicate value: {"name":"w"}'} in \
        result["errors"], result["errors"]


def test_update_of_immutable_field_is_rejected(tmp_path: Path) -> None:
    old = _minimal()
    new = _minimal()
    new["spec"]["replicatedJobs"][0]["replicas"] = 3
    (tmp_path / "old.json").write_text(json.dumps(old))
    out = decider("validate", "-f", "-", "--old", str(tmp_path / "old.json"),
                  stdin=json.dumps(new))
    assert out.returncode == 2
    errors = json.loads(out.stdout)["errors"]
    assert any(e["field"].startswith("spec.replicatedJobs") for e in errors)


def test_example_is_valid() -> None:
    out = decider("validate", "-f", str(EXAMPLE))
    assert out.returncode == 0, out.stdout + out.stderr


def test_validate_rpc_rejects_non_object_with_invalid_argument(server: BackgroundServer) -> None:
    with grpc.insecure_channel(server.target) as ch, pytest.raises(grpc.RpcError) as info:
        pb_grpc.DeciderStub(ch).Validate(pb.ValidateRequest(object_json="[1]"), timeout=10)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "object_json" in info.value.details()


def test_malformed_file_exits_2() -> None:
    out = decider("validate", "-f", "-", stdin="{{{")
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    assert "not valid YAML or JSON" in out.stderr

