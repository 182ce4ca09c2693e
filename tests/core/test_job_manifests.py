"""A Job written from pieces (job_manifests.JobJson) is json's writing of the built Job.

The pieces are the manifest written once with markers for the per-Job strings; these tests
write Jobs both ways for templates and JobSets that put the markers' neighbours to the test:
names and labels needing escapes or non-ASCII, template labels that are also per-Job keys,
exclusive placement (a per-Job node selector), the RestartJob gate (a per-Job attempt), PVCs,
a template holding a marker of its own, and templates orjson does not write as json does.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from decider.contract import convert
from decider.core import constants as c
from decider.core.child_jobs import ReplicatedJobBuilder
from decider.core.children import RestartCounters
from decider.core.job_manifests import JobJson, LazyJobAction
from decider.core.jobset import parse_jobset
from decider.core.spec_cache import CACHES
from decider_api.v1 import decider_pb2 as pb
from support.builders import jobset, rjob, run

INDEXES = [0, 1, 7, 10, 99, 12345]


def _builders(js: dict[str, Any], gate: bool = False) -> list[ReplicatedJobBuilder]:
    parsed = parse_jobset(copy.deepcopy(js))
    status = parsed.status
    counters = RestartCounters(parsed, status, "jobRestarts") if gate else None
    return [ReplicatedJobBuilder(parsed, r, status, counters) for r in parsed.replicated_jobs]


def _written_jobs(response: pb.DecideResponse) -> list[str]:
    return [a.object_json for a in response.actions if a.type == pb.ACTION_TYPE_CREATE_JOB]


def _same_both_ways(js: dict[str, Any], gate: bool = False) -> int:
    """How many Jobs were written from pieces (and checked)."""
    checked = 0
    for builder in _builders(js, gate):
        sample = convert._dumps(builder.build(3)).encode()
        pieces = JobJson.of(builder, sample) if builder.plain else None
        for i in INDEXES:
            expected = convert._dumps(builder.build(i)).encode()
            if pieces is not None:
                assert pieces.render(i) == expected, (builder.rjob.name, i)
                checked += 1
            assert builder.json(i) in (None, expected)
    return checked


def test_names_needing_escapes_and_non_ascii() -> None:
    js = jobset(rjob('w"\\é', 3, job_meta={"labels": {"é": "\u2028", "q": '"'}}),
                name="js-ü", namespace='ns"1')
    js["metadata"]["uid"] = "uid-\x01"
    assert _same_both_ways(js) == len(INDEXES)


def test_template_labels_that_are_per_job_keys_and_exclusive_placement() -> None:
    pod = {"metadata": {"labels": {c.JOB_INDEX: "spoof", "app": "x"},
                        "annotations": {c.JOB_KEY: "spoof"}},
           "spec": {"containers": [{"name": "m", "volumeMounts": [{"name": "data"}]}],
                    "nodeSelector": {"pool": "a"}, "tolerations": [{"key": "t"}]}}
    js = jobset(rjob("w", 4, pod=pod, job_meta={"labels": {c.JOB_GLOBAL_INDEX: "x"}}),
                rjob("v", 2, group="g"),
                volumeClaimPolicies=[{"templates": [{"metadata": {"name": "data"},
                                                     "spec": {}}]}],
                coordinator={"replicatedJob": "w", "jobIndex": 0, "podIndex": 0})
    js["metadata"]["annotations"] = {c.EXCLUSIVE_TOPOLOGY: "rack",
                                     c.NODE_SELECTOR_STRATEGY: "true"}
    assert _same_both_ways(js) == 2 * len(INDEXES)


def test_restart_job_gate_attempts_per_index() -> None:
    js = jobset(rjob("w", 3), status={"replicatedJobsStatus": [
        {"name": "w", "ready": 0, "succeeded": 0, "failed": 0, "active": 0, "suspended": 0,
         "jobRestarts": [2, 0, 5]}]})
    assert _same_both_ways(js, gate=True) == len(INDEXES)


def test_independent_and_suspended() -> None:
    js = jobset(rjob("w", 2), suspend=True)
    js["metadata"]["annotations"] = {c.RECONCILIATION_MODE: c.RECONCILIATION_MODE_INDEPENDENT}
    assert _same_both_ways(js) == len(INDEXES)


def test_a_template_holding_a_marker_is_built_instead() -> None:
    pod = {"metadata": {"labels": {"x": "\x00jobset-decider:index\x00"}},
           "spec": {"containers": [{"name": "\x00jobset-decider:name\x00"}]}}
    js = jobset(rjob("w", 3, pod=pod))
    for builder in _builders(js):
        assert JobJson.of(builder, convert._dumps(builder.build(0)).encode()) is None
    assert _same_both_ways(js) == 0
    # The plan still holds every Job, written from the built manifest.
    plan = run(js)
    response = convert.plan_to_proto(plan)
    assert _written_jobs(response) == [
        convert._dumps(a.object) for a in plan.actions if a.type == "CreateJob"]


@pytest.mark.parametrize("value", [1.5, 1e-05, 2**64, -(2**63) - 1])
def test_a_template_json_writes_differently_is_written_by_json(value: Any) -> None:
    pod = {"spec": {"containers": [{"name": "m", "args": [value]}]}}
    js = jobset(rjob("w", 3, pod=pod))
    assert not any(b.plain for b in _builders(js))
    plan = run(js)
    response = convert.plan_to_proto(plan)
    assert _written_jobs(response) == [
        convert._dumps(a.object) for a in plan.actions if a.type == "CreateJob"]


def test_reading_the_object_builds_it_and_the_answer_writes_what_was_read() -> None:
    plan = run(jobset(rjob("w", 3)))
    action = next(a for a in plan.actions if a.type == "CreateJob")
    assert isinstance(action, LazyJobAction)
    assert action.wire_json() is not None
    action.object["metadata"]["labels"]["changed"] = "yes"
    assert action.wire_json() is None
    written = _written_jobs(convert.plan_to_proto(plan))[0]
    assert '"changed":"yes"' in written


_TEXT = st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=8)


@settings(max_examples=150, deadline=None)
@given(labels=st.dictionaries(_TEXT, _TEXT, max_size=4),
       annotations=st.dictionaries(_TEXT, _TEXT, max_size=4),
       name=st.from_regex(r"[a-z][a-z0-9-]{0,8}", fullmatch=True),
       replicas=st.integers(min_value=1, max_value=4),
       exclusive=st.booleans(), gate=st.booleans())
def test_any_labels_and_names(labels: dict[str, str], annotations: dict[str, str], name: str,
                              replicas: int, exclusive: bool, gate: bool) -> None:
    for cache in CACHES:
        cache.clear()
    pod = {"metadata": {"labels": labels, "annotations": annotations},
           "spec": {"containers": [{"name": "m", "image": next(iter(labels), "i")}]}}
    js = jobset(rjob(name, replicas, pod=pod, job_meta={"labels": annotations}), name=name)
    if exclusive:
        js["metadata"]["annotations"] = {c.EXCLUSIVE_TOPOLOGY: "rack",
                                         c.NODE_SELECTOR_STRATEGY: "true"}
    _same_both_ways(js, gate=gate)
