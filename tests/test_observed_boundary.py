"""One check at the contract's edge for every observed object, whichever road it takes
(clients/python/decider_api/observed_shape.py): the reproducers of ../shared/repro are refused
INVALID_ARGUMENT (the webhook: a denial) naming the field, and a wrong JSON type at any
metadata or status field the core reads is refused the same way on every road.

The reproducers are read from ../shared/repro, beside the repository: CI always has it, so a
missing directory fails here rather than passing quietly.
"""

from __future__ import annotations

import copy
import http.client
import json
import logging
import re
import ssl
from pathlib import Path
from typing import Any

import grpc
import pytest

from decider.contract import admission_review as ar
from decider.contract.limits import Limits
from decider.contract.reply import INVALID_ARGUMENT, OK
from decider.service.dispatch import answer
from decider.service.server import BackgroundServer
from decider.webhook.server import WebhookConfig
from decider_api.v1 import decider_pb2 as pb
from support.certs import make_pki

REPRO = Path(__file__).resolve().parents[1].parent / "shared" / "repro"
WAS = {"JobSetWorkloadAwareSchedulingAPI": True}

# The field each reproducer's refusal names (INDEX.md says what each one shows).
EXPECTED = {
    "G1-observed-object-name-not-string-Decide": "objects[0].object_json.metadata.name",
    "G1b-observed-object-name-not-string-PlanGang": "objects[0].object_json.metadata.name",
    "G1c-observed-object-name-not-string-Simulate":
        "observed.objects[0].object_json.metadata.name",
    "G2-old-status-conditions-not-list-Validate": "old_object_json.status.conditions",
    "G2b-old-status-conditions-not-list-webhook-review": "oldObject.status.conditions",
    "G3-observed-object-ownerReferences-not-list-Decide":
        "objects[0].object_json.metadata.ownerReferences",
}


def _repro_files() -> list[Path]:
    files = sorted(p for p in REPRO.glob("G*") if p.suffix in (".bin", ".json"))
    assert files, f"no reproducer in {REPRO}: the tests run with ../shared beside the repository"
    return files


def _rpc(path: Path) -> str:
    return path.stem.rsplit("-", 1)[1]


def _refusal(method: str, payload: bytes, caplog: pytest.LogCaptureFixture) -> tuple[int, str]:
    caplog.set_level(logging.INFO)
    reply = answer(method, payload, Limits())
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == [], f"a traceback or error was logged: {errors[:1]}"
    return reply.code, reply.body.decode() if reply.code != OK else ""


def _webhook(body: bytes, caplog: pytest.LogCaptureFixture) -> dict[str, Any]:
    caplog.set_level(logging.INFO)
    reply = answer("AdmitValidate", ar.payload(WAS, body), Limits())
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []
    assert reply.code == OK, reply.body
    return json.loads(reply.body)["response"]


def test_every_reproducer_has_an_expectation() -> None:
    assert sorted(p.stem for p in _repro_files()) == sorted(EXPECTED)


@pytest.mark.parametrize("path", _repro_files() if REPRO.is_dir() else [], ids=lambda p: p.stem)
def test_reproducer_is_refused_naming_the_field(path: Path,
                                                caplog: pytest.LogCaptureFixture) -> None:
    field = EXPECTED[path.stem]
    if path.suffix == ".json":
        response = _webhook(path.read_bytes(), caplog)
        assert response["allowed"] is False
        assert response["status"]["code"] == 422
        assert [c["field"] for c in response["status"]["details"]["causes"]] == [field]
        return
    code, message = _refusal(_rpc(path), path.read_bytes(), caplog)
    assert code == INVALID_ARGUMENT, message
    assert message.startswith(f"{field}: must be "), message


def _post(server: BackgroundServer, ca: Path, body: bytes) -> tuple[int, Any]:
    ctx = ssl.create_default_context(cafile=str(ca))
    conn = http.client.HTTPSConnection("localhost", server.webhook_port, context=ctx, timeout=60)
    try:
        conn.request("POST", ar.VALIDATE_PATH + "?timeout=10s", body=body,
                     headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


@pytest.mark.waits
def test_reproducers_served_are_invalid_argument_and_a_webhook_denial(tmp_path: Path) -> None:
    """The same files sent as a client sends them, to a served decider and its webhook."""
    pki = make_pki(tmp_path)
    hook = WebhookConfig(port=0, host="127.0.0.1", cert_file=str(pki.server_cert),
                         key_file=str(pki.server_key), feature_gates=WAS)
    with BackgroundServer("127.0.0.1:0", webhook=hook) as server, \
            grpc.insecure_channel(server.target) as channel:
        for path in _repro_files():
            if path.suffix == ".json":
                status, body = _post(server, pki.ca, path.read_bytes())
                assert status == 200, (path.name, body)
                assert body["response"]["allowed"] is False, (path.name, body)
                continue
            call = channel.unary_unary(f"/decider.v1.Decider/{_rpc(path)}",
                                       request_serializer=lambda b: b,
                                       response_deserializer=lambda b: b)
            with pytest.raises(grpc.RpcError) as err:
                call(path.read_bytes(), timeout=60)
            assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT, path.name
            assert err.value.details().startswith(EXPECTED[path.stem]), err.value.details()


# ---- every road, every field ---------------------------------------------------------------

def _repro_request(name: str, cls: Any) -> Any:
    return cls.FromString((REPRO / f"{name}.bin").read_bytes())


def _podgroup() -> dict[str, Any]:
    """G1's observed PodGroup with its name mended: a well-typed object to break one field of."""
    req = _repro_request("G1-observed-object-name-not-string-Decide", pb.DecideRequest)
    obj = json.loads(req.objects[0].object_json)
    obj["metadata"]["name"] = "trainer-driver"
    obj["metadata"]["finalizers"] = ["scheduling.k8s.io/podgroup-protection"]
    obj["metadata"]["annotations"] = {"note": "kept"}
    obj["status"] = {"conditions": [{"type": "PodGroupInitiallyScheduled", "status": "True",
                                     "reason": "Scheduled", "message": "",
                                     "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
    return obj


# (path in the object, a value of the wrong JSON type)
WRONG = [
    ("metadata", ["x"]),
    ("metadata.name", {"x": 1}),
    ("metadata.namespace", 7),
    ("metadata.uid", ["u"]),
    ("metadata.labels", 3),
    ("metadata.labels[jobset.sigs.k8s.io/jobset-name]", 1),
    ("metadata.annotations", "a=b"),
    ("metadata.annotations[note]", True),
    ("metadata.ownerReferences", 5),
    ("metadata.ownerReferences[0]", None),
    ("metadata.ownerReferences[0].uid", 42),
    ("metadata.ownerReferences[0].controller", "yes"),
    ("metadata.deletionTimestamp", 1767225600),
    ("metadata.finalizers", "scheduling.k8s.io/podgroup-protection"),
    ("metadata.finalizers[0]", {"x": 1}),
    ("status", 1),
    ("status.conditions", 1),
    ("status.conditions[0]", "Scheduled"),
    ("status.conditions[0].type", 1),
    ("status.conditions[0].status", True),
    ("status.conditions[0].message", {"m": 1}),
]


def _put(obj: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    parts = re.findall(r"[^.\[\]]+|\[[^\]]+\]", path)
    node = out
    for part in parts[:-1]:
        node = node[int(part[1:-1])] if part[1:-1].isdigit() else \
            node[part[1:-1] if part.startswith("[") else part]
    last = parts[-1]
    key: Any = int(last[1:-1]) if last[1:-1].isdigit() else (
        last[1:-1] if last.startswith("[") else last)
    node[key] = value
    return out


def _decide_typed(obj: dict[str, Any]) -> tuple[str, bytes, str]:
    req = _repro_request("G1-observed-object-name-not-string-Decide", pb.DecideRequest)
    req.objects[0].object_json = json.dumps(obj)
    return "Decide", req.SerializeToString(), "objects[0].object_json"


def _decide_whole(obj: dict[str, Any]) -> tuple[str, bytes, str]:
    req = _repro_request("G1-observed-object-name-not-string-Decide", pb.DecideRequest)
    del req.objects[:]
    req.observed_json.append(json.dumps(obj))
    return "Decide", req.SerializeToString(), "observed_json[0]"


def _simulate(obj: dict[str, Any]) -> tuple[str, bytes, str]:
    req = _repro_request("G1c-observed-object-name-not-string-Simulate", pb.SimulateRequest)
    req.observed.objects[0].object_json = json.dumps(obj)
    return "Simulate", req.SerializeToString(), "observed.objects[0].object_json"


def _plan_gang(obj: dict[str, Any]) -> tuple[str, bytes, str]:
    req = _repro_request("G1b-observed-object-name-not-string-PlanGang", pb.PlanGangRequest)
    req.objects[0].object_json = json.dumps(obj)
    return "PlanGang", req.SerializeToString(), "objects[0].object_json"


ROADS = {"Decide-objects": _decide_typed, "Decide-observed_json": _decide_whole,
         "Simulate-objects": _simulate, "PlanGang-objects": _plan_gang}


@pytest.mark.parametrize("road", sorted(ROADS))
def test_the_well_typed_object_is_decided(road: str, caplog: pytest.LogCaptureFixture) -> None:
    """The base of the table below is answered: each refusal there is the broken field's."""
    method, payload, _ = ROADS[road](_podgroup())
    code, message = _refusal(method, payload, caplog)
    assert code == OK, message


@pytest.mark.parametrize("road", sorted(ROADS))
@pytest.mark.parametrize(("path", "value"), WRONG, ids=[p for p, _ in WRONG])
def test_a_wrong_type_is_refused_on_every_road(road: str, path: str, value: Any,
                                               caplog: pytest.LogCaptureFixture) -> None:
    method, payload, field = ROADS[road](_put(_podgroup(), path, value))
    code, message = _refusal(method, payload, caplog)
    assert code == INVALID_ARGUMENT, message
    assert message.startswith(f"{field}.{path}: must be "), message


def _stored_jobset() -> dict[str, Any]:
    req = _repro_request("G2-old-status-conditions-not-list-Validate", pb.ValidateRequest)
    old = json.loads(req.old_object_json)
    old["status"] = {"restarts": 0, "conditions": [{
        "type": "Suspended", "status": "True", "reason": "JobSetSuspended", "message": "",
        "lastTransitionTime": "2026-01-01T00:00:00Z"}], "replicatedJobsStatus": [
        {"name": "workers", "ready": 0, "succeeded": 0, "failed": 0, "active": 0,
         "suspended": 2, "jobRestarts": [0, 0]}]}
    old["metadata"].update(finalizers=["x/y"], annotations={"note": "kept"},
                           labels={"jobset.sigs.k8s.io/jobset-name": "trainer"})
    return old


OLD_WRONG = [*[(p, v) for p, v in WRONG if not p.startswith("metadata.ownerReferences[0]")],
             ("status.restarts", "1"), ("status.replicatedJobsStatus", {"name": "w"}),
             ("status.replicatedJobsStatus[0].ready", 1.5),
             ("status.replicatedJobsStatus[0].jobRestarts[1]", "0"),
             ("status.terminalState", 0)]


@pytest.mark.parametrize(("path", "value"), OLD_WRONG, ids=[p for p, _ in OLD_WRONG])
def test_the_stored_jobset_of_a_validate_and_a_review_is_checked_alike(
        path: str, value: Any, caplog: pytest.LogCaptureFixture) -> None:
    req = _repro_request("G2-old-status-conditions-not-list-Validate", pb.ValidateRequest)
    good = _stored_jobset()
    req.old_object_json = json.dumps(good)
    code, message = _refusal("Validate", req.SerializeToString(), caplog)
    assert code == OK, message
    old = _put(good, path, value)
    req.old_object_json = json.dumps(old)
    code, message = _refusal("Validate", req.SerializeToString(), caplog)
    assert code == INVALID_ARGUMENT, message
    assert message.startswith(f"old_object_json.{path}: must be "), message
    # The webhook: the same stored object as the review's oldObject is a denial, never a 500.
    review = json.loads((REPRO / "G2b-old-status-conditions-not-list-webhook-review.json")
                        .read_text())
    review["request"]["oldObject"] = old
    response = _webhook(json.dumps(review).encode(), caplog)
    assert response["allowed"] is False
    assert [c["field"] for c in response["status"]["details"]["causes"]] == [f"oldObject.{path}"]


@pytest.mark.parametrize(("path", "value"), [
    ("metadata.name", ["j"]), ("metadata.ownerReferences", {"uid": "u"}),
    ("metadata.labels", "a"), ("spec.parallelism", "2"), ("status.conditions", 1),
], ids=lambda v: v if isinstance(v, str) else "")
def test_a_validated_job_old_and_new_is_checked_at_the_edge(
        path: str, value: Any, caplog: pytest.LogCaptureFixture) -> None:
    job = {"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"name": "j", "namespace": "default", "uid": "u1"},
           "spec": {"parallelism": 2, "completions": 2, "template": {"spec": {
               "containers": [{"name": "c", "image": "busybox"}]}}}, "status": {}}
    for new, old, field in ((_put(job, path, value), job, path),
                            (job, _put(job, path, value), f"old_object_json.{path}")):
        req = pb.ValidateRequest(object_json=json.dumps(new), old_object_json=json.dumps(old))
        code, message = _refusal("Validate", req.SerializeToString(), caplog)
        assert code == INVALID_ARGUMENT, message
        assert message.startswith(f"{field}: must be "), message
