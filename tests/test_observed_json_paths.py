"""An error about an object sent whole (`DecideRequest.observed_json`) names it as it was sent.

The server summarizes such objects into the typed lists and checks them there; an error must
still name `observed_json[i]` and the object's own field (`status.startTime`), not a typed field
the client never sent (`jobs[0].start_time`). Errors about typed entries keep their paths.
Each check below is made on a Job (or Pod) that has other objects before it, so its index in
observed_json differs from its index in the typed list.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import grpc
import pytest

from decider.contract import convert, limits
from decider.core import constants as c
from decider.core.errors import InvalidInput, TooLarge
from decider.service.server import BackgroundServer
from decider_api.v1 import decider_pb2 as pb
from decider_api.v1 import decider_pb2_grpc as pb_grpc
from decider_client import observe
from decider_client.errors import ObservationError
from support.builders import NOW, UID, jobset, rjob

Obj = dict[str, Any]

# A failed Job with an out-of-range index and no job-restart-attempt label reaches the failure
# policy's own label checks (core/failure_policy.py), which name the Job by its name.
JS = jobset(rjob("leader", 1), rjob("workers", 3),
            failurePolicy={"maxRestarts": 3,
                           "rules": [{"name": "again", "action": "RestartJob",
                                      "onJobFailureReasons": ["BackoffLimitExceeded"]}]})
IN_PLACE_JS = jobset(rjob("workers", 1),
                     failurePolicy={"maxRestarts": 3, "restartStrategy": "InPlaceRestart"})
SERVICE: Obj = {"apiVersion": "v1", "kind": "Service",
                "metadata": {"name": "js", "namespace": "default", "uid": "uid-svc"}}


def child(rjob_name: str, index: int) -> Obj:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": f"js-{rjob_name}-{index}", "namespace": "default",
                         "uid": f"uid-{rjob_name}-{index}", "resourceVersion": "3",
                         "creationTimestamp": "2026-01-01T10:00:00Z",
                         "labels": {c.REPLICATED_JOB_NAME: rjob_name,
                                    c.JOB_INDEX: str(index), c.RESTART_ATTEMPT: "0"},
                         "ownerReferences": [{"apiVersion": c.API_VERSION, "kind": c.KIND,
                                              "name": "js", "uid": UID, "controller": True}]},
            "spec": {"parallelism": 1, "completions": 1, "suspend": False,
                     "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}},
            "status": {"active": 1, "ready": 1, "startTime": "2026-01-01T10:00:00Z",
                       "conditions": [{"type": "Suspended", "status": "False",
                                       "lastTransitionTime": "2026-01-01T10:00:00Z"},
                                      {"type": "Complete", "status": "False",
                                       "lastTransitionTime": "2026-01-01T10:00:00Z"}]}}


def owned() -> list[Obj]:
    """The Service, then two Jobs: the second Job is jobs[1] typed, observed_json[2] whole."""
    return [copy.deepcopy(SERVICE), child("workers", 0), child("workers", 1)]


def _meta(key: str, value: Any) -> Callable[[list[Obj]], None]:
    return lambda objs: objs[2]["metadata"].__setitem__(key, value)


def _label(key: str, value: str | None) -> Callable[[list[Obj]], None]:
    def mutate(objs: list[Obj]) -> None:
        labels = objs[2]["metadata"]["labels"]
        if value is None:
            del labels[key]
        else:
            labels[key] = value
    return mutate


def _failed_out_of_range(objs: list[Obj]) -> None:
    objs[2]["metadata"]["labels"][c.JOB_INDEX] = "7"
    objs[2]["status"] = {"failed": 1, "conditions": [
        {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
         "message": "boom", "lastTransitionTime": "2026-01-01T11:00:00Z"}]}


def _duplicate(objs: list[Obj]) -> None:
    objs[2]["metadata"]["name"] = objs[1]["metadata"]["name"]


RESTART_JOB = {c.GATE_RESTART_JOB: True}

# (mutation of owned(), feature gates, the typed path, the path in the object sent whole)
CASES = [
    pytest.param(_meta("creationTimestamp", "bad"), {}, "jobs[1].creation_timestamp",
                 "observed_json[2].metadata.creationTimestamp", id="creation-timestamp"),
    pytest.param(_meta("deletionTimestamp", "bad"), {}, "jobs[1].deletion_timestamp",
                 "observed_json[2].metadata.deletionTimestamp", id="deletion-timestamp"),
    pytest.param(lambda objs: objs[2]["status"].__setitem__("startTime", "bad"), {},
                 "jobs[1].start_time", "observed_json[2].status.startTime", id="start-time"),
    pytest.param(lambda objs: objs[2]["status"]["conditions"][1].__setitem__(
                     "lastTransitionTime", "bad"), {},
                 "jobs[1].conditions[1].last_transition_time",
                 "observed_json[2].status.conditions[1].lastTransitionTime",
                 id="condition-transition-time"),
    pytest.param(_label(c.RESTART_ATTEMPT, "x"), {}, f"jobs[1].labels[{c.RESTART_ATTEMPT}]",
                 f"observed_json[2].metadata.labels[{c.RESTART_ATTEMPT}]",
                 id="restart-attempt-label"),
    pytest.param(_label(c.REPLICATED_JOB_NAME, None), RESTART_JOB,
                 f"jobs[1].labels[{c.REPLICATED_JOB_NAME}]",
                 f"observed_json[2].metadata.labels[{c.REPLICATED_JOB_NAME}]",
                 id="replicated-job-name-missing"),
    pytest.param(_label(c.JOB_INDEX, "one"), RESTART_JOB, f"jobs[1].labels[{c.JOB_INDEX}]",
                 f"observed_json[2].metadata.labels[{c.JOB_INDEX}]", id="job-index-not-integer"),
    pytest.param(lambda objs: (_label(c.JOB_INDEX, "7")(objs),
                               _label(c.JOB_RESTART_ATTEMPT, "0")(objs)), RESTART_JOB,
                 f"jobs[1].labels[{c.JOB_INDEX}]",
                 f"observed_json[2].metadata.labels[{c.JOB_INDEX}]",
                 id="job-index-out-of-bounds"),
    # The failure policy names a Job by its name: jobs[<name>].
    pytest.param(_failed_out_of_range, RESTART_JOB, f"jobs[js-workers-1].labels[{c.JOB_INDEX}]",
                 f"observed_json[2].metadata.labels[{c.JOB_INDEX}]",
                 id="failure-policy-job-index"),
    pytest.param(_duplicate, {}, "jobs[1].name", "observed_json[2].metadata.name",
                 id="duplicate-name"),
]


def _error(req: pb.DecideRequest) -> str:
    with pytest.raises(InvalidInput) as err:
        convert.decide_response(req)
    assert len(err.value.errors) == 1
    return str(err.value)


def _field(message: str) -> str:
    return message.partition(": ")[0]


@pytest.mark.parametrize("mutate,gates,typed,whole", CASES)
def test_an_object_sent_whole_is_named_by_its_json_path(
        mutate: Callable[[list[Obj]], None], gates: dict[str, bool], typed: str,
        whole: str) -> None:
    objs = owned()
    mutate(objs)
    raw = _error(observe.build_raw_decide_request(JS, objs, NOW, feature_gates=gates))
    assert _field(raw) == whole, raw
    # The same check, the same words: only the field is the client's.
    summarized = _error(observe.build_decide_request(JS, objs, NOW, feature_gates=gates))
    assert _field(summarized) == typed, summarized
    assert raw.removeprefix(whole) == summarized.removeprefix(typed)


@pytest.mark.parametrize("mutate,gates,typed,whole", CASES)
def test_in_a_mixed_request_each_form_keeps_its_own_names(
        mutate: Callable[[list[Obj]], None], gates: dict[str, bool], typed: str,
        whole: str) -> None:
    objs = owned()
    mutate(objs)
    # The good Job typed, the Service and the bad Job whole: the bad one is jobs[1] after
    # expansion (typed entries first), observed_json[1] as sent.
    req = observe.build_decide_request(JS, objs[1:2], NOW, feature_gates=gates)
    req.observed_json.extend(json.dumps(o) for o in (objs[0], objs[2]))
    got = _error(req)
    assert _field(got) == whole.replace("observed_json[2]", "observed_json[1]"), got
    # The bad Job typed, the good one whole after it: the typed path is unchanged (but a
    # repeated name is the later Job's, here the one sent whole).
    req = observe.build_decide_request(JS, [objs[0], objs[2]], NOW, feature_gates=gates)
    req.observed_json.append(json.dumps(objs[1]))
    got = _error(req)
    want = "observed_json[0].metadata.name" if mutate is _duplicate else \
        typed.replace("jobs[1]", "jobs[0]")
    assert _field(got) == want, got


def test_a_name_sent_whole_that_repeats_a_typed_one_is_named_as_sent() -> None:
    req = observe.build_decide_request(JS, [child("workers", 0)], NOW)
    req.observed_json.extend(json.dumps(o) for o in (SERVICE, child("workers", 0)))
    assert _field(_error(req)) == "observed_json[1].metadata.name"


def _pod(attempt: Any) -> Obj:
    """A pod of the JobSet (labelled with its name, as upstream lists a JobSet's pods)."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "js-workers-0-0-abc",
                         "labels": {"jobset.sigs.k8s.io/jobset-name": "js"},
                         "annotations": {c.IN_PLACE_RESTART_ATTEMPT: attempt}},
            "status": {"phase": "Running"}}


def test_a_pod_sent_whole_is_named_by_its_json_path() -> None:
    """An annotation that is no string is refused where the object was sent (an annotation
    Atoi refuses is upstream's reconcile error, not the request's: test_stored_state.py)."""
    objs = [copy.deepcopy(SERVICE), child("workers", 0), _pod("0"), _pod(7)]
    gates = {c.GATE_IN_PLACE_RESTART: True}
    raw = _error(observe.build_raw_decide_request(IN_PLACE_JS, objs, NOW, feature_gates=gates))
    assert _field(raw) == f"observed_json[3].metadata.annotations[{c.IN_PLACE_RESTART_ATTEMPT}]"
    with pytest.raises(ObservationError) as typed:
        observe.build_decide_request(IN_PLACE_JS, objs, NOW, feature_gates=gates)
    assert typed.value.field == f"pods[1].metadata.annotations[{c.IN_PLACE_RESTART_ATTEMPT}]"


@pytest.mark.parametrize("typed,whole", [
    ("jobs[1].pod_template.tolerations[2].toleration_seconds",
     "observed_json[1].spec.template.spec.tolerations[2].tolerationSeconds"),
    ("jobs[1].pod_template.scheduling_gates[0]",
     "observed_json[1].spec.template.spec.schedulingGates[0].name"),
    ("jobs[1].pod_template.node_selector[pool]",
     "observed_json[1].spec.template.spec.nodeSelector[pool]"),
    ("jobs[1].conditions[0].reason", "observed_json[1].status.conditions[0].reason"),
    ("jobs[1]", "observed_json[1]"),
    ("pods[0].phase", "observed_json[2].status.phase"),
    ("objects[0].object_json.spec.minMember", "observed_json[0].spec.minMember"),
    ("objects[0].object_json", "observed_json[0]"),
    # Not in the table: the typed name, under the object's.
    ("jobs[1].not_a_field", "observed_json[1].not_a_field"),
    # Typed entries, and fields about no entry, are left as they are.
    ("jobs[0].start_time", "jobs[0].start_time"),
    ("jobs[js-workers-0].labels[x]", "jobs[js-workers-0].labels[x]"),
    ("jobs[2].name", "jobs[2].name"),
    ("jobs", "jobs"),
    ("spec.replicatedJobs[0].name", "spec.replicatedJobs[0].name"),
], ids=lambda v: v)
def test_typed_paths_map_to_json_paths(typed: str, whole: str) -> None:
    # One typed Job (jobs[0]); whole: a Service, a Job (jobs[1]) and a Pod.
    req = observe.build_decide_request(JS, [child("workers", 0)], NOW)
    req.observed_json.extend(json.dumps(o) for o in (SERVICE, child("workers", 1), _pod("0")))
    _, origins = convert._expand(req, limits.DEFAULT)
    assert origins is not None
    assert origins.field(typed) == whole


def test_too_large_names_the_object_sent_whole() -> None:
    req = observe.build_raw_decide_request(JS, owned(), NOW)
    _, origins = convert._expand(req, limits.DEFAULT)
    assert origins is not None
    renamed = origins.renamed(TooLarge("objects[0].object_json", "9 bytes, over the limit"))
    assert isinstance(renamed, TooLarge)
    assert (renamed.field, str(renamed)) == ("observed_json[0]",
                                              "observed_json[0]: 9 bytes, over the limit")


@pytest.mark.waits
def test_grpc_names_the_field_sent() -> None:
    objs = owned()
    objs[2]["status"]["startTime"] = "bad"
    with BackgroundServer() as srv, grpc.insecure_channel(srv.target) as ch:
        stub = pb_grpc.DeciderStub(ch)
        with pytest.raises(grpc.RpcError) as err:
            stub.Decide(observe.build_raw_decide_request(JS, objs, NOW), timeout=30)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert err.value.details().startswith("observed_json[2].status.startTime: 'bad' is not")
