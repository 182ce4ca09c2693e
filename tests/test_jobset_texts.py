"""A JobSet text decided before is found by its text (decider/contract/jobset_texts.py): the same
answers, the limits that judged it part of the key, the core's copy never written to."""

from __future__ import annotations

import pytest
from upstream.raw_parity import job_object

from decider.contract import convert
from decider.contract.jobset_texts import TEXTS
from decider.contract.limits import Limits
from decider.core.errors import InvalidInput
from decider.core.spec_cache import CACHES
from decider.service import dispatch
from decider_client import observe
from support.builders import NOW, job, jobset, rjob
from support.spec_cache_check import verify


def _request(replicas: int = 3) -> bytes:
    js = jobset(rjob("workers", replicas), failurePolicy={"maxRestarts": 2})
    return observe.build_decide_request(js, [], NOW).SerializeToString()


def test_the_same_text_gets_the_same_answer_from_the_first_time_on() -> None:
    payload = _request()
    answers = [dispatch.answer("Decide", payload, Limits()).body for _ in range(4)]
    assert len(set(answers)) == 1
    # From the second decision on, the text leads to the core's own copy.
    text = observe.build_decide_request(
        jobset(rjob("workers", 3), failurePolicy={"maxRestarts": 2}), [], NOW).jobset_json
    assert TEXTS.get(text, Limits()) is not None
    for cache in CACHES:
        cache.enabled = False
    try:
        assert dispatch.answer("Decide", payload, Limits()).body == answers[0]
    finally:
        for cache in CACHES:
            cache.enabled = True
    verify()


def test_limits_are_part_of_the_key() -> None:
    payload = _request(replicas=5)
    for _ in range(3):
        assert dispatch.answer("Decide", payload, Limits()).code == dispatch.OK
    strict = dispatch.answer("Decide", payload, Limits(max_replicas=4))
    assert strict.code == dispatch.INVALID_ARGUMENT
    assert "spec.replicatedJobs[0].replicas" in strict.message


def test_jobs_and_status_still_count_with_a_known_text() -> None:
    js = jobset(rjob("workers", 2))
    plain = observe.build_decide_request(js, [], NOW)
    for _ in range(3):
        convert.decide_response(plain)
    owned = [job_object(job("workers", 0)), job_object(job("workers", 1, state="failed"))]
    with_jobs = observe.build_decide_request(js, owned, NOW)
    assert with_jobs.jobset_json == plain.jobset_json
    assert convert.decide_response(with_jobs).status.terminal_state == "Failed"


def test_an_invalid_jobset_text_is_never_remembered() -> None:
    req = observe.build_decide_request(jobset(rjob("w", 1)), [], NOW)
    req.jobset_json = req.jobset_json.replace('"replicas":1', '"replicas":"one"')
    for _ in range(3):
        with pytest.raises(InvalidInput, match=r"spec.replicatedJobs\[0\].replicas"):
            convert.decide_response(req)
    assert TEXTS.get(req.jobset_json, Limits()) is None
