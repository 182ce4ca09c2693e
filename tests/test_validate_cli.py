"""`decider validate` and the Validate RPC end to end: defaulting, errors, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import grpc
import pytest

from decider.service.server import BackgroundServer
from decider_api.v1 import decider_pb2 as pb
from decider_api.v1 import decider_pb2_grpc as pb_grpc

pytestmark = pytest.mark.waits

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


SLEEPY = """\
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: sleepy
spec:
  replicatedJobs:
  - name: w
    template:
      spec:
        template:
          spec:
            hostNetwork: "yes"
            containers:
            - name: m
              image: busybox
              command: sleep 10
"""


@pytest.mark.parametrize("via_server", [False, True], ids=["in-process", "grpc"])
def test_a_wrong_type_deep_in_the_pod_template_is_refused(tmp_path: Path, via_server: bool,
                                                          server: BackgroundServer) -> None:
    """What the API server's schema would refuse when the object is stored, `validate` says
    before `kubectl apply`, in the API server's words."""
    (tmp_path / "sleepy.yaml").write_text(SLEEPY)
    args = ["validate", "-f", str(tmp_path / "sleepy.yaml")]
    out = decider(*args + (["--server", server.target] if via_server else []))
    assert out.returncode == 2, out.stderr
    pod = "spec.replicatedJobs[0].template.spec.template.spec"
    assert json.loads(out.stdout) == {"valid": False, "errors": [
        {"field": f"{pod}.hostNetwork",
         "message": f'Invalid value: "string": {pod}.hostNetwork in body must be of type '
                    'boolean: "string"'},
        {"field": f"{pod}.containers[0].command",
         "message": f'Invalid value: "string": {pod}.containers[0].command in body must be of '
                    'type array: "string"'},
        {"field": "<nil>",
         "message": "Invalid value: null: some validation rules were not checked because the "
                    "object was invalid; correct the existing errors to complete validation"},
    ]}


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


@pytest.mark.parametrize(("old", "said"), [
    pytest.param({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
                  "spec": {}}, "old_object_json: must be a jobset.x-k8s.io/v1alpha2 JobSet",
                 id="a-job"),
    pytest.param({**_minimal(), "spec": 5}, "old_object_json.spec: must be an object",
                 id="spec-not-an-object"),
    pytest.param({**_minimal(), "metadata": 7}, "old_object_json.metadata: must be an object",
                 id="metadata-not-an-object"),
])
def test_an_old_object_that_is_no_jobset_is_refused_not_compared(tmp_path: Path, old: dict,
                                                                  said: str) -> None:
    """Compared field by field, it gave a false "spec.replicatedJobs: field is immutable"."""
    (tmp_path / "old.json").write_text(json.dumps(old))
    out = decider("validate", "-f", "-", "--old", str(tmp_path / "old.json"),
                  stdin=json.dumps(_minimal()))
    assert out.returncode == 2
    assert out.stdout == "" and said in out.stderr, out.stdout + out.stderr


@pytest.mark.parametrize("example", sorted(p.name for p in (ROOT / "examples").glob("*.yaml")
                                           if "kind: JobSet" in p.read_text()))
def test_every_example_jobset_is_admissible(example: str) -> None:
    """The README's walk-throughs start from these files: upstream's webhook must admit them,
    with the feature gates an example names on a `# feature-gates: ...` line."""
    path = ROOT / "examples" / example
    gates = [line.split(":", 1)[1].strip() for line in path.read_text().splitlines()
             if line.startswith("# feature-gates:")]
    args = ["--feature-gates", gates[0]] if gates else []
    out = decider("validate", "-f", str(path), "-o", "json", *args)
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


def _edited(edit: str) -> dict:
    js = _minimal()
    rj = js["spec"]["replicatedJobs"][0]
    container = rj["template"]["spec"]["template"]["spec"]["containers"][0]
    if edit == "vcp-without-templates":
        js["spec"]["volumeClaimPolicies"] = [{}]
    elif edit == "vcp-template-namespace":
        container["volumeMounts"] = [{"name": "d", "mountPath": "/d"}]
        js["spec"]["volumeClaimPolicies"] = [{"templates": [
            {"metadata": {"name": "d", "namespace": "other"}, "spec": {}}]}]
    elif edit == "label-too-long":
        js["metadata"]["labels"] = {"team": "x" * 64}
    elif edit == "rjob-without-template":
        del rj["template"]
    elif edit == "unknown-fields":
        js["spec"]["foo"] = 1
        container["imagee"] = "typo"
    return js


VCP_RULE = "namespace cannot be set for VolumeClaimPolicies templates"
POD_SPEC = "spec.replicatedJobs[0].template.spec.template.spec"


@pytest.mark.parametrize("via_server", [False, True], ids=["in-process", "grpc"])
@pytest.mark.parametrize(("edit", "errors"), [
    pytest.param("vcp-without-templates",
                 [("spec.volumeClaimPolicies[0]",
                   f"no such key: templates evaluating rule: {VCP_RULE}")],
                 id="cel/self.templates-no-such-key"),
    pytest.param("vcp-template-namespace", [("spec.volumeClaimPolicies[0]", VCP_RULE)],
                 id="cel/rule-on-the-policy-names-the-policy"),
    pytest.param("label-too-long", [("metadata.labels", "must be no more than 63 bytes")],
                 id="ValidateLabels/names-the-map"),
    pytest.param("rjob-without-template", [(f"{POD_SPEC}.containers", "Required value")],
                 id="webhook-go-round-trip/template-written-empty-then-containers-required"),
    pytest.param("unknown-fields",
                 # pruning's paths, sorted.
                 [("spec.foo", 'strict decoding error: unknown field "spec.foo"'),
                  (f"{POD_SPEC}.containers[0].imagee",
                   f'strict decoding error: unknown field "{POD_SPEC}.containers[0].imagee"')],
                 id="strict-decoding/every-unknown-field-with-its-path"),
])
def test_validate_answers_as_upstream(edit: str, errors: list[tuple[str, str]], via_server: bool,
                                      server: BackgroundServer) -> None:
    args = ["validate", "-f", "-"] + (["--server", server.target] if via_server else [])
    out = decider(*args, stdin=json.dumps(_edited(edit)))
    assert out.returncode == 2, out.stderr
    result = json.loads(out.stdout)
    assert [(e["field"], e["message"]) for e in result["errors"]] == errors


@pytest.mark.parametrize("via_server", [False, True], ids=["in-process", "grpc"])
def test_validate_returns_quantities_as_the_api_server_stores_them(
        via_server: bool, server: BackgroundServer) -> None:
    js = _minimal()
    container = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"][
        "containers"][0]
    container["resources"] = {"limits": {"google.com/tpu": 4, "cpu": 1.5}}
    args = ["validate", "-f", "-"] + (["--server", server.target] if via_server else [])
    out = decider(*args, stdin=json.dumps(js))
    assert out.returncode == 0, out.stdout + out.stderr
    stored = json.loads(out.stdout)["object"]["spec"]["replicatedJobs"][0]["template"]["spec"][
        "template"]["spec"]["containers"][0]["resources"]
    # Quantity.MarshalJSON: a string, in canonical form.
    assert stored == {"limits": {"google.com/tpu": "4", "cpu": "1500m"}}
