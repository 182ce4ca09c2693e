"""In-place restart's max-restarts check on a JobSet that has no pod attempt yet."""

from __future__ import annotations

from decider.core.decide import decide
from decider.core.model import Observed, Options
from support.builders import NOW, jobset, rjob


def test_no_pod_attempt_yet_and_more_counted_restarts_than_restarts_does_not_crash() -> None:
    """restartsCountTowardsMax above restarts (a hand-written status) made the check's
    explanation take max() of no attempts: a ValueError instead of a plan (found by the
    property tests)."""
    js = jobset(rjob("w", 1, parallelism=1, completions=1))
    js["spec"]["failurePolicy"] = {"restartStrategy": "InPlaceRestart"}
    js["status"] = {"restartsCountTowardsMax": 1}
    plan = decide(Observed(jobset=js, now=NOW,
                           options=Options(feature_gates={"InPlaceRestart": True})))
    assert any("in-place restart attempt 0 exceeds maxRestarts 0" in s for s in plan.explanation)
