"""Upstream failure_policy_test.go: first failed job, rule applicability, rule/job search and the
five actions' effect on status — each observed through a full decide pass."""

from __future__ import annotations

from typing import Any

import pytest

from decider.core import constants as c
from decider.core.errors import InvalidInput
from decider.core.model import JobCondition
from support.builders import condition, events, job, jobset, rjob, run

H = "2026-01-01T{:02d}:00:00Z"


def failed(
    rj: str, idx: int, hour: int, reason: str = "BackoffLimitExceeded", message: str = "", **kw: Any
) -> Any:
    return job(
        rj, idx, state="failed", reason=reason, message=message, failed_at=H.format(hour), **kw
    )


def policy(*rules: dict[str, Any], max_restarts: int = 5, **kw: Any) -> dict[str, Any]:
    return {"maxRestarts": max_restarts, "rules": list(rules), **kw}


def fail_rule(**kw: Any) -> dict[str, Any]:
    return {"name": "match", "action": "FailJobSet", **kw}


# ---- findFirstFailedJob ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("jobs", "first"),
    [
        pytest.param([failed("w", 0, 11)], "js-w-0", id="single-failed-job"),
        pytest.param(
            [failed("w", 0, 9), failed("w", 1, 7)],
            "js-w-1",
            id="multiple-failed-jobs-earliest-wins",
        ),
        pytest.param(
            [failed("w", 0, 7), failed("w", 1, 7)],
            "js-w-0",
            id="equal-failure-times-keep-list-order",
        ),
        pytest.param(
            [failed("w", 0, 9), failed("w", 1, 8), failed("w", 2, 10)],
            "js-w-1",
            id="earliest-in-the-middle",
        ),
    ],
)
def test_find_first_failed_job(jobs: list[Any], first: str) -> None:
    plan = run(jobset(rjob("w", 3)), jobs)
    assert condition(plan, c.FAILED)["message"] == (
        f"jobset failed due to one or more job failures (first failed job: {first})"
    )


def test_first_failed_job_compares_instants_across_utc_offsets() -> None:
    # 11:30+02:00 is 09:30Z: earlier than 10:00Z although its wall-clock reading is later.
    early = job("w", 0, state="failed", failed_at="2026-01-01T11:30:00+02:00")
    late = job("w", 1, state="failed", failed_at="2026-01-01T10:00:00Z")
    plan = run(jobset(rjob("w", 2)), [late, early])
    assert condition(plan, c.FAILED)["message"].endswith("(first failed job: js-w-0)")


def test_first_failed_job_compares_instants_at_the_edge_of_the_timestamp_range() -> None:
    # 0001-01-01T00:00:00+01:00 is an hour before year 1 in UTC: Go's time reads and compares
    # it; converting it to UTC overflowed Python's datetime (an INTERNAL error over gRPC).
    early = job("w", 0, state="failed", failed_at="0001-01-01T00:00:00+01:00")
    late = job("w", 1, state="failed", failed_at="9999-12-31T23:59:59-01:00")
    plan = run(jobset(rjob("w", 2)), [late, early])
    assert condition(plan, c.FAILED)["message"].endswith("(first failed job: js-w-0)")


def test_first_failed_job_ignores_jobs_without_failed_condition() -> None:
    # A Job with FailureTarget only is not failed: the JobSet keeps running.
    pending = job("w", 0)
    pending.conditions.append(
        JobCondition(
            type="FailureTarget", status="True", reason=BLE, last_transition_time=H.format(9)
        )
    )
    plan = run(jobset(rjob("w", 1)), [pending])
    assert condition(plan, c.FAILED) is None


# ---- ruleIsApplicable ----------------------------------------------------------------------

BLE, DE = "BackoffLimitExceeded", "DeadlineExceeded"


@pytest.mark.parametrize(
    ("rule", "rj", "reason", "message", "applies"),
    [
        pytest.param({}, "rj1", BLE, "", True, id="any-target-any-reason"),
        pytest.param(
            {"onJobFailureReasons": [BLE]}, "rj1", BLE, "", True, id="any-target-reason-matches"
        ),
        pytest.param(
            {"onJobFailureReasons": [BLE]},
            "rj1",
            DE,
            "",
            False,
            id="any-target-reason-mismatch-falls-to-default",
        ),
        pytest.param(
            {"targetReplicatedJobs": ["rj1"]}, "rj1", BLE, "", True, id="target-matches-any-reason"
        ),
        pytest.param(
            {"targetReplicatedJobs": ["rj1"], "onJobFailureReasons": [BLE]},
            "rj1",
            BLE,
            "",
            True,
            id="target-and-reason-match",
        ),
        pytest.param(
            {"targetReplicatedJobs": ["rj1"], "onJobFailureReasons": [BLE]},
            "rj1",
            DE,
            "",
            False,
            id="target-matches-reason-mismatch",
        ),
        pytest.param(
            {"targetReplicatedJobs": ["rj1"]},
            "rj2",
            BLE,
            "",
            False,
            id="target-mismatch-any-reason",
        ),
        pytest.param(
            {"targetReplicatedJobs": ["rj1"], "onJobFailureReasons": [BLE]},
            "rj2",
            BLE,
            "",
            False,
            id="target-mismatch-reason-matches",
        ),
        pytest.param(
            {"targetReplicatedJobs": ["rj1"], "onJobFailureReasons": [BLE]},
            "rj2",
            DE,
            "",
            False,
            id="target-and-reason-mismatch",
        ),
        pytest.param(
            {"onJobFailureMessagePatterns": ["^job failed because.*"]},
            "rj1",
            BLE,
            "job failed because of a bug",
            True,
            id="message-pattern-matches",
        ),
        pytest.param(
            {"onJobFailureMessagePatterns": ["^job failed because.*"]},
            "rj1",
            BLE,
            "another error message",
            False,
            id="message-pattern-mismatch",
        ),
        pytest.param(
            {"onJobFailureReasons": [BLE], "onJobFailureMessagePatterns": [".*bug.*"]},
            "rj1",
            BLE,
            "job failed because of a bug",
            True,
            id="reason-and-message-pattern-match",
        ),
        pytest.param(
            {"onJobFailureReasons": [BLE], "onJobFailureMessagePatterns": [".*bug.*"]},
            "rj1",
            BLE,
            "job failed due to something else",
            False,
            id="reason-matches-message-pattern-mismatch",
        ),
        pytest.param(
            {"onJobFailureMessagePatterns": ["bug"]},
            "rj1",
            BLE,
            "a bug here",
            True,
            id="message-pattern-is-an-unanchored-search",
        ),
        pytest.param(
            {"onJobFailureMessagePatterns": ["nomatch", "exit code 4[0-9]"]},
            "rj1",
            BLE,
            "container exit code 42",
            True,
            id="message-any-pattern-suffices",
        ),
        pytest.param(
            {"onJobFailureMessagePatterns": ["(unclosed"]},
            "rj1",
            BLE,
            "(unclosed",
            False,
            id="message-invalid-regex-never-matches",
        ),
    ],
)
def test_rule_is_applicable(
    rule: dict[str, Any], rj: str, reason: str, message: str, applies: bool
) -> None:
    js = jobset(rjob("rj1"), rjob("rj2"), failurePolicy=policy(fail_rule(**rule)))
    plan = run(js, [failed(rj, 0, 10, reason=reason, message=message)])
    if applies:
        assert condition(plan, c.FAILED)["reason"] == "FailJobSetFailurePolicyAction"
    else:
        assert condition(plan, c.FAILED) is None
        assert condition(plan, c.RESTARTING)["reason"] == "DefaultFailurePolicy"


def test_job_without_replicated_job_label_matches_no_rule() -> None:
    lone = failed("rj1", 0, 10, labels={c.REPLICATED_JOB_NAME: ""})
    plan = run(jobset(rjob("rj1"), failurePolicy=policy(fail_rule())), [lone])
    assert condition(plan, c.FAILED) is None
    assert condition(plan, c.RESTARTING)["reason"] == "DefaultFailurePolicy"


# ---- findFirstFailedPolicyRuleAndJob ---------------------------------------------------------

R1 = {"name": "rule1", "action": "RestartJobSet", "onJobFailureReasons": [BLE]}
R2 = {"name": "rule2", "action": "RestartJobSet", "onJobFailureReasons": [DE]}
R3 = {"name": "rule3", "action": "RestartJobSet", "onJobFailureReasons": ["FailedIndexes"]}
UNMATCHED = {"name": "nomatch", "action": "RestartJobSet", "targetReplicatedJobs": ["fake"]}
J1 = ("w", 0, 6, BLE)
J1_EARLIER = ("w", 1, 0, BLE)
J2 = ("w", 2, 9, DE)
J3 = ("w", 3, 11, "FailedIndexes")


@pytest.mark.parametrize(
    ("rules", "fails", "reason", "first"),
    [
        pytest.param([], [J1], "DefaultFailurePolicy", "js-w-0", id="no-rules-default-action"),
        pytest.param([R2], [J1], "DefaultFailurePolicy", "js-w-0", id="one-rule-not-matching"),
        pytest.param([R1, R2, R3], [J1], "FailurePolicy_rule1", "js-w-0", id="first-rule-matches"),
        pytest.param([R1, R2, R3], [J2], "FailurePolicy_rule2", "js-w-2", id="second-rule-matches"),
        pytest.param([R1, R2, R3], [J3], "FailurePolicy_rule3", "js-w-3", id="third-rule-matches"),
        pytest.param(
            [],
            [J1, J2],
            "DefaultFailurePolicy",
            "js-w-0",
            id="two-failed-no-rules-earliest-overall",
        ),
        pytest.param(
            [R2],
            [J1, J1_EARLIER],
            "DefaultFailurePolicy",
            "js-w-1",
            id="two-failed-rule-matches-neither",
        ),
        pytest.param(
            [R1],
            [J1, J1_EARLIER],
            "FailurePolicy_rule1",
            "js-w-1",
            id="two-failed-rule-matches-both-earliest-wins",
        ),
        pytest.param(
            [UNMATCHED, R1],
            [J1, J1_EARLIER],
            "FailurePolicy_rule1",
            "js-w-1",
            id="first-rule-unmatched-second-matches-both",
        ),
        pytest.param(
            [R2, R1],
            [J1_EARLIER, J2],
            "FailurePolicy_rule2",
            "js-w-2",
            id="rule-order-beats-failure-time",
        ),
    ],
)
def test_find_first_failed_policy_rule_and_job(
    rules: list[dict[str, Any]], fails: list[tuple[str, int, int, str]], reason: str, first: str
) -> None:
    js = jobset(rjob("w", 4), failurePolicy=policy(*rules))
    plan = run(js, [failed(rj, i, h, reason=r) for rj, i, h, r in fails])
    cond = condition(plan, c.RESTARTING)
    assert (cond["status"], cond["reason"]) == ("True", reason)
    assert cond["message"] == (
        f"applying RestartJobSet failure policy action (first failed job: {first})"
    )
    assert plan.status["restarts"] == 1


# ---- applyFailurePolicyRuleAction --------------------------------------------------------------


def rj_status(jr: list[int] | None = None, jrc: list[int] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": "rjob",
        "ready": 0,
        "succeeded": 0,
        "failed": 1,
        "active": 0,
        "suspended": 0,
    }
    if jr is not None:
        out["jobRestarts"] = jr
    if jrc is not None:
        out["jobRestartsCountTowardsMax"] = jrc
    return out


@pytest.mark.parametrize(
    ("action", "rule_name", "max_restarts", "start", "want", "want_cond", "want_event"),
    [
        pytest.param(
            "FailJobSet",
            "r",
            0,
            {},
            {"restarts": 0, "restartsCountTowardsMax": 0, "terminalState": "Failed"},
            (
                "Failed",
                "True",
                "FailJobSetFailurePolicyAction",
                "applying FailJobSet failure policy action",
            ),
            ("Warning", "FailJobSetFailurePolicyAction"),
            id="fail-jobset",
        ),
        pytest.param(
            "RestartJobSet",
            None,
            5,
            {"restarts": 1, "restartsCountTowardsMax": 1},
            {"restarts": 2, "restartsCountTowardsMax": 2, "terminalState": ""},
            (
                "RestartingJobSet",
                "True",
                "DefaultFailurePolicy",
                "applying RestartJobSet failure policy action",
            ),
            ("Warning", "RestartJobSetFailurePolicyAction"),
            id="restart-jobset-below-max-counts-towards-max",
        ),
        pytest.param(
            "RestartJobSet",
            "Rule1",
            5,
            {"restarts": 1, "restartsCountTowardsMax": 1},
            {"restarts": 2, "restartsCountTowardsMax": 2, "terminalState": ""},
            (
                "RestartingJobSet",
                "True",
                "FailurePolicy_Rule1",
                "applying RestartJobSet failure policy action",
            ),
            ("Warning", "RestartJobSetFailurePolicyAction"),
            id="restart-jobset-rule-sets-failure-policy-rule-reason",
        ),
        pytest.param(
            "RestartJobSet",
            "r",
            2,
            {"restarts": 2, "restartsCountTowardsMax": 2},
            {"restarts": 2, "restartsCountTowardsMax": 2, "terminalState": "Failed"},
            (
                "Failed",
                "True",
                "ReachedMaxRestarts",
                "jobset failed due to reaching max number of restarts",
            ),
            ("Warning", "ReachedMaxRestarts"),
            id="restart-jobset-at-max-fails",
        ),
        pytest.param(
            "RestartJobSetAndIgnoreMaxRestarts",
            "r",
            1,
            {"restarts": 1, "restartsCountTowardsMax": 1},
            {"restarts": 2, "restartsCountTowardsMax": 1, "terminalState": ""},
            (
                "RestartingJobSet",
                "True",
                "FailurePolicy_r",
                "applying RestartJobSetAndIgnoreMaxRestarts failure policy action",
            ),
            ("Warning", "RestartJobSetAndIgnoreMaxRestartsFailurePolicyAction"),
            id="restart-jobset-ignore-max-does-not-count",
        ),
    ],
)
def test_apply_jobset_action(
    action: str,
    rule_name: str | None,
    max_restarts: int,
    start: dict[str, Any],
    want: dict[str, Any],
    want_cond: tuple[str, str, str, str],
    want_event: tuple[str, str],
) -> None:
    # rule None: the action is reached as the default, through a rule no Job satisfies.
    rules = (
        [{"name": rule_name, "action": action}]
        if rule_name
        else [{"name": "never", "action": "FailJobSet", "targetReplicatedJobs": ["other"]}]
    )
    fp = policy(*rules, max_restarts=max_restarts)
    js = jobset(rjob("rjob"), rjob("other"), failurePolicy=fp, status=dict(start))
    plan = run(js, [failed("rjob", 0, 10, attempt=start.get("restarts", 0))])
    for key, value in want.items():
        assert plan.status[key] == value
    ctype, status, reason, base = want_cond
    cond = condition(plan, ctype)
    assert (cond["status"], cond["reason"]) == (status, reason)
    assert cond["message"] == f"{base} (first failed job: js-rjob-0)"
    assert want_event in events(plan)


def test_restart_jobset_and_ignore_max_as_default_unreachable_but_rule_reason_is_named() -> None:
    fp = policy({"name": "Keep", "action": "RestartJobSetAndIgnoreMaxRestarts"}, max_restarts=0)
    plan = run(jobset(rjob("rjob"), failurePolicy=fp), [failed("rjob", 0, 10)])
    assert condition(plan, c.RESTARTING)["reason"] == "FailurePolicy_Keep"
    assert (plan.status["restarts"], plan.status["restartsCountTowardsMax"]) == (1, 0)


GATE = {"RestartJob": True}


@pytest.mark.parametrize(
    ("action", "max_restarts", "start", "rjs", "want_rjs", "fails"),
    [
        pytest.param(
            "RestartJob",
            5,
            {},
            rj_status([0], [0]),
            ([1], [1]),
            False,
            id="restart-job-below-max-increments-both-counters",
        ),
        pytest.param(
            "RestartJob",
            2,
            {"restarts": 1, "restartsCountTowardsMax": 1},
            rj_status([1], [1]),
            ([1], [1]),
            True,
            id="restart-job-combined-budget-spent-fails",
        ),
        pytest.param(
            "RestartJobSet",
            2,
            {"restarts": 1, "restartsCountTowardsMax": 1},
            rj_status([1], [1]),
            ([1], [1]),
            True,
            id="restart-jobset-counts-previous-individual-restarts",
        ),
        pytest.param(
            "RestartJobAndIgnoreMaxRestarts",
            1,
            {},
            rj_status([1], [0]),
            ([2], [0]),
            False,
            id="restart-job-ignore-max-does-not-count",
        ),
        pytest.param(
            "RestartJob",
            5,
            {},
            rj_status(),
            ([1], [1]),
            False,
            id="restart-job-materializes-empty-counters",
        ),
    ],
)
def test_apply_job_action(
    action: str,
    max_restarts: int,
    start: dict[str, Any],
    rjs: dict[str, Any],
    want_rjs: tuple[list[int], list[int]],
    fails: bool,
) -> None:
    status = {**start, "replicatedJobsStatus": [rjs]}
    js = jobset(
        rjob("rjob"),
        failurePolicy=policy({"name": "r", "action": action}, max_restarts=max_restarts),
        status=status,
    )
    f = failed(
        "rjob",
        0,
        10,
        attempt=start.get("restarts", 0),
        job_attempt=(rjs.get("jobRestarts") or [0])[0],
    )
    plan = run(js, [f], gates=GATE)
    entry = next(e for e in plan.status["replicatedJobsStatus"] if e["name"] == "rjob")
    assert entry.get("jobRestarts") == want_rjs[0]
    assert (entry.get("jobRestartsCountTowardsMax") or [0]) == want_rjs[1]
    assert plan.status["restarts"] == start.get("restarts", 0)
    assert plan.status["restartsCountTowardsMax"] == start.get("restartsCountTowardsMax", 0)
    if fails:
        assert condition(plan, c.FAILED)["reason"] == "ReachedMaxRestarts"
        assert plan.status["terminalState"] == "Failed"
    else:
        assert condition(plan, c.FAILED) is None
        assert condition(plan, c.RESTARTING) is None
        assert events(plan) == [("Warning", f"{action}FailurePolicyAction")]


@pytest.mark.parametrize("action", ["RestartJob", "RestartJobAndIgnoreMaxRestarts"])
def test_restart_job_actions_need_the_gate(action: str) -> None:
    js = jobset(rjob("rjob"), failurePolicy=policy({"name": "r", "action": action}))
    with pytest.raises(InvalidInput, match="feature gate RestartJob is disabled"):
        run(js, [failed("rjob", 0, 10)])


def test_budget_without_gate_ignores_per_job_counters() -> None:
    # Gate off: only restartsCountTowardsMax counts; stale per-Job counters are dropped.
    status = {
        "restarts": 1,
        "restartsCountTowardsMax": 1,
        "replicatedJobsStatus": [rj_status([3], [3])],
    }
    js = jobset(rjob("rjob"), failurePolicy=policy(max_restarts=2), status=status)
    plan = run(js, [failed("rjob", 0, 10, attempt=1)])
    assert (plan.status["restarts"], plan.status["restartsCountTowardsMax"]) == (2, 2)
    assert "jobRestarts" not in plan.status["replicatedJobsStatus"][0]


def test_max_restarts_zero_default_action_fails_with_reached_max() -> None:
    plan = run(jobset(rjob("w"), failurePolicy=policy(max_restarts=0)), [failed("w", 0, 10)])
    assert condition(plan, c.FAILED)["reason"] == "ReachedMaxRestarts"


def test_only_one_restart_per_pass_even_with_several_failures() -> None:
    js = jobset(rjob("w", 3), failurePolicy=policy(max_restarts=5))
    plan = run(js, [failed("w", 0, 10), failed("w", 1, 9), failed("w", 2, 11)])
    assert (plan.status["restarts"], plan.status["restartsCountTowardsMax"]) == (1, 1)
    assert condition(plan, c.RESTARTING)["message"].endswith("(first failed job: js-w-1)")


def test_same_restarting_condition_again_emits_only_the_action_event() -> None:
    msg = "applying RestartJobSet failure policy action (first failed job: js-w-0)"
    status = {
        "restarts": 1,
        "restartsCountTowardsMax": 1,
        "conditions": [
            {
                "type": c.RESTARTING,
                "status": "True",
                "reason": "DefaultFailurePolicy",
                "message": msg,
                "lastTransitionTime": "2026-01-01T10:00:00Z",
            }
        ],
    }
    js = jobset(rjob("w", 1), failurePolicy=policy(max_restarts=5), status=status)
    plan = run(js, [failed("w", 0, 11, attempt=1)])
    assert events(plan) == [("Warning", "RestartJobSetFailurePolicyAction")]
    assert condition(plan, c.RESTARTING)["lastTransitionTime"] == "2026-01-01T10:00:00Z"
    assert plan.status["restarts"] == 2
