"""Junk through the whole adapter: any request gets a response or InvalidInput naming a field
(gRPC INVALID_ARGUMENT), and any Kubernetes objects a client observes become a request or an
ObservationError naming a field; never another exception."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from decider.contract import convert
from decider.core import constants as c
from decider.core.errors import InvalidInput
from decider_api.v1 import decider_pb2 as pb
from decider_client import observe
from decider_client.errors import ObservationError
from properties.strategies import (
    GATES,
    JS_NAME,
    examples,
    jobsets,
    junk,
    mutated,
    observeds,
    to_request,
)
from support.builders import NOW, UID

SETTINGS = settings(max_examples=examples(80), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _decides_or_invalid(req: pb.DecideRequest) -> None:
    try:
        convert.decide_response(req)
    except InvalidInput as exc:
        assert exc.errors and all(e.field for e in exc.errors), f"no field named: {exc}"


def _json(value: Any) -> str:
    return json.dumps(value)


jobset_texts = st.one_of(
    junk.map(_json),
    mutated(jobsets()).map(_json),
    st.text(max_size=20),
    st.just("[" * 5000 + "]" * 5000),
)


@SETTINGS
@given(jobset_texts)
def test_junk_jobset_json(text: str) -> None:
    _decides_or_invalid(pb.DecideRequest(jobset_json=text, now=observe.timestamp(NOW)))


_texts = st.one_of(st.text(max_size=6), st.sampled_from(
    ["", "0", "1", "-1", "x", "True", "False", "Failed", "Complete", c.REASON_FAILED_JOBS]))
_label_keys = st.one_of(_texts, st.sampled_from(
    [c.REPLICATED_JOB_NAME, c.RESTART_ATTEMPT, c.JOB_INDEX, c.JOB_RESTART_ATTEMPT, c.JOBSET_NAME]))
_int32 = st.integers(min_value=-(2**31), max_value=2**31 - 1)


@st.composite
def junk_job(draw: st.DrawFn) -> pb.ObservedJob:
    msg = pb.ObservedJob(
        name=draw(st.sampled_from([f"{JS_NAME}-a-0", f"{JS_NAME}-w-1", "x", ""])),
        uid=draw(_texts), controller_uid=draw(st.sampled_from([UID, "", "other"])),
        labels=draw(st.dictionaries(_label_keys, _texts, max_size=5)),
        annotations=draw(st.dictionaries(_texts, _texts, max_size=2)),
        active=draw(_int32), ready=draw(_int32), succeeded=draw(_int32), failed=draw(_int32),
        conditions=[pb.Condition(type=draw(_texts), status=draw(_texts), reason=draw(_texts),
                                 message=draw(_texts), last_transition_time=draw(_texts))
                    for _ in range(draw(st.integers(0, 3)))],
        deletion_timestamp=draw(_texts), start_time=draw(_texts))
    for attr, value in (("suspend", st.booleans()), ("parallelism", _int32),
                        ("completions", _int32)):
        if draw(st.booleans()):
            setattr(msg, attr, draw(value))
    if draw(st.booleans()):
        msg.pod_template.CopyFrom(pb.PodTemplateSummary(
            labels=draw(st.dictionaries(_texts, _texts, max_size=2)),
            tolerations=[pb.Toleration(key=draw(_texts), operator=draw(_texts))],
            scheduling_gates=draw(st.lists(_texts, max_size=2))))
    return msg


@st.composite
def junk_requests(draw: st.DrawFn) -> pb.DecideRequest:
    req = to_request(draw(observeds()))
    if draw(st.booleans()):
        req.jobs.extend(draw(st.lists(junk_job(), max_size=4)))
    if draw(st.booleans()):
        req.objects.append(pb.ObservedObject(
            kind=draw(_texts), name=draw(_texts),
            object_json=draw(st.one_of(junk.map(_json), _texts))))
    if draw(st.booleans()):
        req.pods.append(pb.ObservedPod(
            name=draw(_texts), phase=draw(_texts),
            annotations=draw(st.dictionaries(st.one_of(_texts, st.just(
                c.IN_PLACE_RESTART_ATTEMPT)), _texts, max_size=2)),
            max_container_restarts=draw(_int32)))
    if draw(st.booleans()):
        req.options.feature_gates.update(draw(st.dictionaries(
            st.one_of(st.sampled_from(GATES), _texts), st.booleans(), max_size=3)))
    if draw(st.integers(0, 9)) == 0:
        req.ClearField("now")
    return req


@SETTINGS
@given(junk_requests())
def test_junk_typed_request_fields(req: pb.DecideRequest) -> None:
    _decides_or_invalid(req)


def _k8s_job(index: int) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": f"{JS_NAME}-w-{index}", "uid": f"uid-{index}",
                         "labels": {c.REPLICATED_JOB_NAME: "w", c.RESTART_ATTEMPT: "0",
                                    c.JOB_INDEX: str(index)},
                         "ownerReferences": [{"uid": UID, "controller": True}]},
            "spec": {"suspend": False, "parallelism": 1, "completions": 1,
                     "template": {"metadata": {"labels": {"a": "b"}},
                                  "spec": {"tolerations": [{"key": "k",
                                                            "tolerationSeconds": 3}],
                                           "schedulingGates": [{"name": "g"}]}}},
            "status": {"active": 1, "ready": 1, "conditions": [
                {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
                 "lastTransitionTime": "2026-01-01T11:00:00Z"}]}}


_k8s_pod = {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "annotations": {c.IN_PLACE_RESTART_ATTEMPT: "1"}},
            "status": {"phase": "Running", "containerStatuses": [{"restartCount": 2}],
                       "initContainerStatuses": []}}
_k8s_service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": JS_NAME}}
k8s_objects = st.one_of(
    mutated(st.sampled_from([_k8s_job(0), _k8s_job(1), _k8s_pod, _k8s_service])),
    st.sampled_from([_k8s_job(0), _k8s_pod, _k8s_service]),
    junk,
)


@SETTINGS
@given(st.one_of(jobsets(), mutated(jobsets()), junk), st.lists(k8s_objects, max_size=4),
       st.dictionaries(st.one_of(st.sampled_from(GATES), _texts), st.booleans(), max_size=2))
def test_junk_kubernetes_objects(jobset: Any, owned: list[Any], gates: dict[str, bool]) -> None:
    try:
        req = observe.build_decide_request(jobset, owned, NOW, feature_gates=gates)
    except ObservationError as exc:
        assert exc.field, f"ObservationError without a field: {exc}"
        return
    _decides_or_invalid(req)
