"""Limits on a request and the JSON it carries: each refusal names the field and the limit."""

from __future__ import annotations

import json

import pytest
import yaml
from test_server import EXAMPLE

from decider.contract import convert, gang, json_input, limits, validate
from decider.contract.limits import Limits
from decider.core.errors import InvalidInput, TooLarge
from decider_api.v1 import decider_pb2 as pb
from decider_client import observe
from support.builders import NOW


def _jobset(**spec: object) -> dict:
    js = yaml.safe_load(EXAMPLE.read_text())
    js["spec"].update(spec)
    return js


def _request(js: dict | None = None) -> pb.DecideRequest:
    return observe.build_decide_request(js or _jobset(), [], NOW)


@pytest.mark.parametrize("text,field,message", [
    ('{"a": {"b": ["\\ud800"]}}', "x.a.b[0]: ", "lone surrogate"),
    ('{"a": {"k\\udc00": 1}}', "x.a: ", 'key "k\\udc00" is not valid Unicode'),
    ('{"a": [1e999]}', "x.a[0]: ", "number out of range"),
    # A deep path is cut short: the message stays one readable line.
    ("[" * 101 + "]" * 101, "x[0][0][0][0]", "...: is nested more than 100 levels"),
    ("[" * 5000 + "]" * 5000, "x: ", "nested more than 100 levels"),
    ("", "x: ", "Required value"),
    ("{", "x: ", "is not valid JSON"),
], ids=["lone-surrogate-value", "lone-surrogate-key", "infinity", "depth-101", "depth-5000",
        "empty", "malformed"])
def test_json_input_refuses_naming_the_place(text: str, field: str, message: str) -> None:
    with pytest.raises(InvalidInput) as exc:
        json_input.load(text, "x")
    assert str(exc.value).startswith(field)
    assert message in str(exc.value)
    # The message itself must be sendable: no lone surrogate in it.
    str(exc.value).encode("utf-8")


@pytest.mark.parametrize("text", [
    '{"a": "\\ud83d\\ude00"}',  # a well-formed pair is one character
    '{"a": "\\\\ud800"}',  # an escaped backslash, then plain text
    "[" * 100 + "]" * 100,
    '{"a": 1e308, "b": -0.0}',
], ids=["surrogate-pair", "escaped-backslash", "depth-100", "large-finite"])
def test_json_input_accepts(text: str) -> None:
    json_input.load(text, "x")


def test_bare_paths_name_fields_as_the_core_does() -> None:
    with pytest.raises(InvalidInput, match=r"^metadata\.name: "):
        json_input.load('{"metadata": {"name": "a\\ud800"}}', "jobset_json", in_field_paths=True)


@pytest.mark.parametrize("seconds,nanos,field", [
    (253_402_300_800, 0, "now.seconds"),
    (-62_135_596_801, 0, "now.seconds"),
    (0, 1_000_000_000, "now.nanos"),
    (0, -1, "now.nanos"),
], ids=["after-9999", "before-0001", "nanos-too-big", "nanos-negative"])
def test_now_out_of_range(seconds: int, nanos: int, field: str) -> None:
    req = _request()
    req.now.seconds, req.now.nanos = seconds, nanos
    with pytest.raises(InvalidInput, match=rf"^{field}: .* outside"):
        convert.decide_response(req)


def test_now_at_the_ends_of_the_range_is_decided() -> None:
    for seconds, nanos in ((253_402_300_799, 999_999_999), (-62_135_596_800, 0)):
        req = _request()
        req.now.seconds, req.now.nanos = seconds, nanos
        assert convert.decide_response(req).actions


@pytest.mark.parametrize("spec,field,needle", [
    ({"replicatedJobs": [{"name": "w", "replicas": 2**31 - 1,
                          "template": {"spec": {"template": {}}}}]},
     "spec.replicatedJobs[0].replicas", "100,000"),
    ({"replicatedJobs": [{"name": f"w{i}", "replicas": 60_000,
                          "template": {"spec": {"template": {}}}} for i in range(2)]},
     "spec.replicatedJobs", "120,000 Jobs in all"),
    ({"replicatedJobs": [{"name": f"w{i}", "template": {"spec": {"template": {}}}}
                         for i in range(10_001)]},
     "spec.replicatedJobs", "at most 10,000 items"),
], ids=["replicas-per-replicated-job", "jobs-in-all", "replicated-jobs"])
def test_jobset_size_limits(spec: dict, field: str, needle: str) -> None:
    js = _jobset(**spec)
    with pytest.raises(InvalidInput) as exc:
        convert.decide_response(_request(js))
    assert str(exc.value).startswith(f"{field}: ") and needle in str(exc.value)
    # The same JobSet is refused at admission, with the same field, as a field error.
    resp = validate.validate_response(pb.ValidateRequest(object_json=json.dumps(js)))
    assert not resp.valid
    assert any(e.field == field and needle in e.message for e in resp.errors)
    escaped = field.replace("[", r"\[").replace("]", r"\]")
    with pytest.raises(InvalidInput, match=escaped):
        gang.plan_gang_response(pb.PlanGangRequest(object_json=json.dumps(js)))
    with pytest.raises(InvalidInput, match=escaped):
        gang.pod_sets_response(pb.PodSetsRequest(object_json=json.dumps(js)))


def test_limits_are_the_callers() -> None:
    js = _jobset()
    js["spec"]["replicatedJobs"][1]["replicas"] = 5
    with pytest.raises(InvalidInput, match=r"replicas: must be less than or equal to 4 "):
        convert.decide_response(_request(js), Limits(max_replicas=4))
    assert convert.decide_response(_request(js), Limits(max_replicas=5)).actions


@pytest.mark.parametrize("mutate,field,error", [
    (lambda r: setattr(r, "jobset_json", json.dumps({"x": "a" * 4096})), "jobset_json",
     TooLarge),
    (lambda r: [r.jobs.add(name=f"j{i}") for i in range(11)], "jobs", TooLarge),
    (lambda r: [r.pods.add(name=f"p{i}") for i in range(11)], "pods", TooLarge),
    (lambda r: r.objects.add(kind="Service", name="s", object_json=json.dumps({"x": "a" * 4096})),
     "objects[0].object_json", TooLarge),
    (lambda r: r.jobs.add(name="j").conditions.add(type="Failed", message="m" * 5000),
     "jobs[0].conditions[0].message", InvalidInput),
    (lambda r: r.jobs.add(name="j").labels.__setitem__("k", "v" * 5000),
     "jobs[0].labels[k]", InvalidInput),
    (lambda r: r.jobs.add(name="j" * 254), "jobs[0].name", InvalidInput),
], ids=["object-bytes", "observed-jobs", "observed-pods", "observed-object-bytes",
        "condition-message", "label-value", "job-name"])
def test_request_size_limits(mutate, field: str, error: type[Exception]) -> None:
    req = _request()
    mutate(req)
    small = Limits(max_object_bytes=4000, max_observed=10, max_string_bytes=4000)
    with pytest.raises(error) as exc:
        convert.decide_response(req, small)
    assert str(exc.value).startswith(f"{field}: ")


def test_a_plan_over_the_message_limit_is_refused_before_it_is_built() -> None:
    js = _jobset()
    js["spec"]["replicatedJobs"][1]["replicas"] = 50_000
    with pytest.raises(TooLarge) as exc:
        convert.decide_response(_request(js), Limits(max_message_bytes=1024 * 1024))
    assert str(exc.value).startswith("spec.replicatedJobs[1]: creating 50,000 Job(s)")
    assert "over the limit of 1,048,576 bytes" in str(exc.value)


def test_check_object_bytes_counts_utf8_bytes() -> None:
    # 1,000 characters of three bytes each: under a 2,000-character limit, over 2,000 bytes.
    with pytest.raises(TooLarge, match="3,000 bytes"):
        limits.check_object_bytes("€" * 1000, "x", Limits(max_object_bytes=2000))
    limits.check_object_bytes("€" * 600, "x", Limits(max_object_bytes=2000))
