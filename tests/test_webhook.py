"""The admission webhook answers real AdmissionReview JSON over HTTPS, computed by the same core
as the Validate RPC: mutate is a JSONPatch of exactly Validate's defaults, validate allows or
denies with every field error as the API server shows a denial (422 Invalid, causes)."""

from __future__ import annotations

import base64
import copy
import http.client
import json
import logging
import os
import socket
import ssl
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from decider.contract import admission_review as ar
from decider.service.server import BackgroundServer
from decider.webhook.server import WebhookConfig, request_timeout
from decider_api.v1 import decider_pb2 as pb
from decider_client import DeciderClient
from fakekube.patch import json_patch
from support.certs import make_pki
from support.waiting import HANG_GUARD

pytestmark = pytest.mark.waits

MUTATE = "/mutate-jobset-x-k8s-io-v1alpha2-jobset"
VALIDATE = "/validate-jobset-x-k8s-io-v1alpha2-jobset"


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory):
    return make_pki(tmp_path_factory.mktemp("webhook-pki"))


@pytest.fixture(scope="module")
def server(pki):
    hook = WebhookConfig(port=0, host="127.0.0.1", cert_file=str(pki.server_cert),
                         key_file=str(pki.server_key), max_body_bytes=256 * 1024)
    with BackgroundServer("127.0.0.1:0", webhook=hook) as srv:
        yield srv


@pytest.fixture(scope="module")
def gated_server(pki):
    hook = WebhookConfig(port=0, host="127.0.0.1", cert_file=str(pki.server_cert),
                         key_file=str(pki.server_key), feature_gates={"RestartJob": True})
    with BackgroundServer("127.0.0.1:0", webhook=hook) as srv:
        yield srv


def post(server: BackgroundServer, pki, path: str, body: Any,
         content_type: str = "application/json", method: str = "POST",
         query: str = "?timeout=10s") -> tuple[int, dict[str, Any]]:
    ctx = ssl.create_default_context(cafile=str(pki.ca))
    conn = http.client.HTTPSConnection("localhost", server.webhook_port, context=ctx, timeout=30)
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    try:
        conn.request(method, path + query, body=data if method == "POST" else None,
                     headers={"Content-Type": content_type})
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


def jobset(name: str = "trainer", **spec: Any) -> dict[str, Any]:
    """A JobSet as the API server passes it to webhooks: CRD defaults applied, nothing else."""
    body: dict[str, Any] = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "metadata": {"name": name, "namespace": "default", "uid": str(uuid.uuid4()),
                     "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"replicatedJobs": [
            {"name": "workers", "replicas": 2, "groupName": "default",
             "template": {"spec": {"parallelism": 2, "completions": 2, "template": {"spec": {
                 "containers": [{"name": "w", "image": "busybox"}]}}}}}]},
    }
    body["spec"].update(spec)
    return body


def review(obj: dict[str, Any] | None, operation: str = "CREATE",
           old: dict[str, Any] | None = None) -> dict[str, Any]:
    request: dict[str, Any] = {
        "uid": str(uuid.uuid4()),
        "kind": {"group": "jobset.x-k8s.io", "version": "v1alpha2", "kind": "JobSet"},
        "resource": {"group": "jobset.x-k8s.io", "version": "v1alpha2", "resource": "jobsets"},
        "requestKind": {"group": "jobset.x-k8s.io", "version": "v1alpha2", "kind": "JobSet"},
        "name": ((obj or old or {}).get("metadata") or {}).get("name", ""),
        "namespace": "default", "operation": operation,
        "userInfo": {"username": "alice"}, "object": obj, "oldObject": old, "dryRun": False,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
    }
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def validate_rpc(server: BackgroundServer, obj: dict[str, Any],
                 old: dict[str, Any] | None = None, gates: dict | None = None
                 ) -> pb.ValidateResponse:
    request = pb.ValidateRequest(object_json=json.dumps(obj))
    request.options.feature_gates.update(gates or {})
    if old is not None:
        request.old_object_json = json.dumps(old)
    with DeciderClient(server.target, timeout=30) as client:
        return client.validate(request)


# ---- mutate ---------------------------------------------------------------------------------

def test_mutate_answers_a_jsonpatch_of_exactly_the_defaults_validate_applies(server, pki):
    obj = jobset(failurePolicy={"maxRestarts": 2, "rules": [{"action": "FailJobSet"}]})
    sent = review(obj)
    status, answer = post(server, pki, MUTATE, sent)
    assert status == 200
    assert answer["apiVersion"] == "admission.k8s.io/v1" and answer["kind"] == "AdmissionReview"
    response = answer["response"]
    assert response["uid"] == sent["request"]["uid"]
    assert response["allowed"] is True
    assert response["patchType"] == "JSONPatch"
    patch = json.loads(base64.b64decode(response["patch"]))
    # The patch takes the object to what Validate returns, and nothing else.
    defaulted = json.loads(validate_rpc(server, obj).object_json)
    assert json_patch(obj, patch) == defaulted
    assert {op["op"] for op in patch} <= {"add", "replace"}
    paths = {op["path"] for op in patch}
    assert {"/spec/successPolicy", "/spec/startupPolicy", "/spec/network",
            "/spec/replicatedJobs/0/template/spec/completionMode",
            "/spec/replicatedJobs/0/template/spec/template/spec/restartPolicy",
            "/spec/failurePolicy/restartStrategy",
            "/spec/failurePolicy/rules/0/name"} <= paths
    assert defaulted["spec"]["failurePolicy"]["rules"][0]["name"] == "failurePolicyRule0"


def test_mutate_of_a_defaulted_jobset_allows_it_without_a_patch(server, pki):
    obj = json.loads(validate_rpc(server, jobset()).object_json)
    _, answer = post(server, pki, MUTATE, review(obj))
    assert answer["response"]["allowed"] is True
    assert "patch" not in answer["response"]


def test_mutate_defaults_on_create_only(server, pki):
    obj = jobset()
    _, answer = post(server, pki, MUTATE, review(obj, "UPDATE", old=obj))
    assert answer["response"] == {"uid": answer["response"]["uid"], "allowed": True}


def test_mutate_never_vetoes_even_an_invalid_jobset(server, pki):
    obj = jobset(successPolicy={"operator": "All", "targetReplicatedJobs": ["nope"]})
    _, answer = post(server, pki, MUTATE, review(obj))
    assert answer["response"]["allowed"] is True


# ---- validate -------------------------------------------------------------------------------

def test_validate_allows_a_valid_jobset(server, pki):
    _, answer = post(server, pki, VALIDATE, review(jobset()))
    assert answer["response"]["allowed"] is True
    assert "status" not in answer["response"]


def test_validate_denies_with_every_field_error_as_the_api_server_shows_it(server, pki):
    obj = jobset()
    obj["spec"]["replicatedJobs"].append(copy.deepcopy(obj["spec"]["replicatedJobs"][0]))
    obj["spec"]["replicatedJobs"][0]["replicas"] = -1
    expected = validate_rpc(server, obj).errors
    assert len(expected) >= 2
    status, answer = post(server, pki, VALIDATE, review(obj))
    assert status == 200
    response = answer["response"]
    assert response["allowed"] is False
    st = response["status"]
    assert (st["code"], st["reason"], st["status"]) == (422, "Invalid", "Failure")
    listed = ", ".join(f"{e.field}: {e.message}" for e in expected)
    assert st["message"] == f'JobSet.jobset.x-k8s.io "trainer" is invalid: [{listed}]'
    assert st["details"]["name"] == "trainer"
    assert (st["details"]["group"], st["details"]["kind"]) == ("jobset.x-k8s.io", "JobSet")
    assert [(c["field"], c["message"]) for c in st["details"]["causes"]] == [
        (e.field, e.message) for e in expected]
    reasons = {c["field"]: c["reason"] for c in st["details"]["causes"]}
    assert reasons["spec.replicatedJobs[1]"] == "FieldValueDuplicate"


def test_validate_one_error_is_not_bracketed(server, pki):
    obj = jobset(successPolicy={"operator": "All", "targetReplicatedJobs": ["nope"]})
    _, answer = post(server, pki, VALIDATE, review(obj))
    message = answer["response"]["status"]["message"]
    assert message.startswith('JobSet.jobset.x-k8s.io "trainer" is invalid: spec.successPolicy')


def test_validate_update_is_checked_against_the_old_object(server, pki):
    old = json.loads(validate_rpc(server, jobset()).object_json)
    new = copy.deepcopy(old)
    new["spec"]["replicatedJobs"][0]["replicas"] = 5
    _, answer = post(server, pki, VALIDATE, review(new, "UPDATE", old=old))
    assert answer["response"]["allowed"] is False
    causes = answer["response"]["status"]["details"]["causes"]
    expected = validate_rpc(server, new, old=old).errors
    assert [(c["field"], c["message"]) for c in causes] == [(e.field, e.message)
                                                            for e in expected]
    assert ("spec.replicatedJobs", "field is immutable") in [(c["field"], c["message"])
                                                             for c in causes]
    suspended = copy.deepcopy(old)
    suspended["spec"]["suspend"] = True
    _, answer = post(server, pki, VALIDATE, review(suspended, "UPDATE", old=old))
    assert answer["response"]["allowed"] is True


def test_validate_allows_delete(server, pki):
    _, answer = post(server, pki, VALIDATE, review(None, "DELETE", old=jobset()))
    assert answer["response"]["allowed"] is True


def test_the_webhook_decides_with_its_feature_gates(server, gated_server, pki):
    obj = jobset(failurePolicy={"rules": [{"name": "r", "action": "RestartJob"}]})
    _, refused = post(server, pki, VALIDATE, review(obj))
    assert refused["response"]["allowed"] is False
    assert "RestartJob feature gate is disabled" in refused["response"]["status"]["message"]
    _, admitted = post(gated_server, pki, VALIDATE, review(obj))
    assert admitted["response"]["allowed"] is True


def test_a_malformed_object_is_denied_naming_the_field(server, pki):
    obj = jobset()
    obj["spec"]["replicatedJobs"][0]["name"] = "\ud800"
    _, answer = post(server, pki, VALIDATE, review(obj))
    st = answer["response"]["status"]
    assert (st["code"], st["reason"]) == (422, "Invalid")
    assert st["details"]["causes"][0]["field"].startswith("spec.replicatedJobs[0].name")


# ---- what is not a review -------------------------------------------------------------------

@pytest.mark.parametrize(("body", "expected"), [
    (b"{not json", "the body is not valid JSON"),
    (b"\xff\xfe", "the body is not"),
    (b"[1, 2]", "the body must be a JSON object"),
    (json.dumps({"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview"}).encode(),
     "expected apiVersion admission.k8s.io/v1 kind AdmissionReview"),
    (json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}).encode(),
     "request: required"),
    (json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                 "request": {"uid": "u", "operation": "CREATE",
                             "kind": {"group": "", "version": "v1", "kind": "Pod"},
                             "object": {}}}).encode(),
     "request.kind: this webhook admits jobset.x-k8s.io JobSet"),
    (json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                 "request": {"uid": "u", "operation": "UPDATE",
                             "kind": {"group": "jobset.x-k8s.io", "version": "v1alpha2",
                                      "kind": "JobSet"},
                             "object": {}}}).encode(),
     "request.oldObject: required for UPDATE"),
    (b"[" * 100_000, "the body is not valid JSON"),
])
def test_a_body_that_is_not_a_review_is_400_with_a_status_naming_why(server, pki, body, expected):
    status, answer = post(server, pki, VALIDATE, body)
    assert status == 400
    assert answer["kind"] == "Status" and answer["code"] == 400
    assert answer["reason"] == "BadRequest"
    assert expected in answer["message"]
    assert "Traceback" not in answer["message"]


def test_too_large_a_body_is_413(server, pki):
    obj = jobset()
    obj["metadata"]["annotations"] = {"big": "x" * 300_000}
    status, answer = post(server, pki, VALIDATE, review(obj))
    assert status == 413
    assert "--webhook-max-body-bytes=262144" in answer["message"]


def test_other_content_types_paths_and_methods_get_a_status(server, pki):
    status, answer = post(server, pki, VALIDATE, review(jobset()), content_type="text/plain")
    assert (status, answer["reason"]) == (415, "UnsupportedMediaType")
    status, answer = post(server, pki, "/validate-v1-pod", review(jobset()))
    assert (status, answer["kind"]) == (404, "Status")
    status, answer = post(server, pki, VALIDATE, b"", method="GET")
    assert (status, answer["kind"]) == (405, "Status")
    assert MUTATE in answer["message"]


@pytest.mark.parametrize("raw", [
    b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
    b"GET /" + b"a" * 20_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
    b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\n",
], ids=["negative-content-length", "request-line-too-long", "bad-chunk"])
def test_malformed_http_is_400_and_one_info_line_not_an_error(server, pki, raw, caplog):
    """aiohttp logs what it cannot parse at ERROR with a traceback: anyone reaching the port
    could page the operator. It is the client's fault: one INFO line."""
    caplog.set_level(logging.INFO)
    ctx = ssl.create_default_context(cafile=str(pki.ca))
    with socket.create_connection(("127.0.0.1", server.webhook_port), timeout=10) as sock, \
            ctx.wrap_socket(sock, server_hostname="localhost") as tls:
        tls.sendall(raw)
        assert tls.recv(100).startswith(b"HTTP/1.0 400")
    deadline = time.monotonic() + HANG_GUARD
    while time.monotonic() < deadline and not any(
            "malformed HTTP from 127.0.0.1 refused (400)" in r.getMessage()
            for r in caplog.records):
        time.sleep(0.02)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
    (line,) = [r for r in caplog.records if "malformed HTTP" in r.getMessage()]
    assert (line.name, line.levelno, line.exc_info) == ("decider.webhook", logging.INFO, None)
    assert post(server, pki, VALIDATE, review(jobset()))[0] == 200


def test_a_client_that_leaves_mid_body_is_one_info_line_not_an_error(server, pki, caplog):
    """A client that gives up (its own deadline) while its body is on the way: aiohttp's read
    raised ConnectionResetError out of the handler, logged at ERROR with a traceback each time
    (19 in the fuzz run of bench/fuzz_rpc.py). Nobody is left to answer: one INFO line."""
    caplog.set_level(logging.INFO)
    ctx = ssl.create_default_context(cafile=str(pki.ca))
    with socket.create_connection(("127.0.0.1", server.webhook_port), timeout=10) as sock, \
            ctx.wrap_socket(sock, server_hostname="localhost") as tls:
        tls.sendall(f"POST {VALIDATE} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    "Content-Length: 5000\r\n\r\n{\"apiVersion\": ".encode())
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not any(
            "the client left before its body arrived" in r.getMessage() for r in caplog.records):
        time.sleep(0.02)
    (line,) = [r for r in caplog.records if "left before its body" in r.getMessage()]
    assert (line.name, line.levelno, line.exc_info) == ("decider.webhook", logging.INFO, None)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
    assert post(server, pki, VALIDATE, review(jobset()))[0] == 200


def test_the_grpc_side_still_answers_beside_the_webhook(server, pki):
    assert validate_rpc(server, jobset()).valid
    assert post(server, pki, VALIDATE, review(jobset()))[0] == 200


def test_the_api_servers_timeout_bounds_the_review():
    assert request_timeout("10s", 30) == 10
    assert request_timeout("500ms", 30) == 0.5
    assert request_timeout("1m", 30) == 30
    assert request_timeout("", 7) == 7
    assert request_timeout("nonsense", 7) == 7


def test_cause_types_follow_apimachinery():
    assert ar.cause_type("Required value") == "FieldValueRequired"
    assert ar.cause_type('duplicate value "a"') == "FieldValueDuplicate"
    assert ar.cause_type('unsupported value "X": supported values: "A"') == \
        "FieldValueNotSupported"
    assert ar.cause_type("field is immutable") == "FieldValueInvalid"
    assert ar.cause_type('Invalid value: "string": spec.x in body must be of type array: '
                         '"string"') == "FieldValueTypeInvalid"


def test_json_patch_escapes_keys_and_keeps_json_types():
    before = {"metadata": {"annotations": {"a/b": "1", "c~d": "2"}}, "x": 1, "n": None}
    after = {"metadata": {"annotations": {"a/b": "1", "c~d": "3", "e/f": "4"}}, "x": True}
    patch = ar.json_patch(before, after)
    assert patch == [{"op": "replace", "path": "/metadata/annotations/c~0d", "value": "3"},
                     {"op": "add", "path": "/metadata/annotations/e~1f", "value": "4"},
                     {"op": "replace", "path": "/x", "value": True}]


def test_certificates_are_read_again_when_they_change(tmp_path: Path, pki):
    import shutil

    from decider.webhook.server import Webhook

    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    shutil.copy(pki.server_cert, cert)
    shutil.copy(pki.server_key, key)
    hook = Webhook(None, WebhookConfig(port=0, cert_file=str(cert), key_file=str(key)), 10)
    assert not hook.reload_if_changed()
    (tmp_path / "other").mkdir()
    other = make_pki(tmp_path / "other")
    shutil.copy(other.server_cert, cert)
    shutil.copy(other.server_key, key)
    os.utime(cert, (1, 1))
    assert hook.reload_if_changed()
