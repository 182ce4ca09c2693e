"""TTL cleanup of JobSets another controller manages (#1315, merged, fixes #1310; ungated), as
jobset_controller.go @4f0cbded has it: the managedBy early return still runs
executeTTLAfterFinishedPolicy once the other controller wrote Completed or Failed. Its two
integration tests, and the edges of the same path."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from decider.core.errors import InvalidInput
from support.builders import NOW, jobset, rjob, run

EXTERNAL = "kueue.x-k8s.io/multikueue"


def _js(ttl: int | None, finished_at: str | None, kind: str = "Completed",
        manager: str = EXTERNAL) -> dict[str, Any]:
    status: dict[str, Any] = {}
    if finished_at is not None:
        status = {"terminalState": kind, "conditions": [
            {"type": kind, "status": "True", "reason": "ByExternal", "message": "",
             "lastTransitionTime": finished_at}]}
    spec: dict[str, Any] = {"managedBy": manager}
    if ttl is not None:
        spec["ttlSecondsAfterFinished"] = ttl
    return jobset(rjob("w", 1), status=status, **spec)


@pytest.mark.parametrize(("js", "deleted", "requeue"), [
    pytest.param(_js(0, "2026-01-01T11:59:00Z"), True, None,
                 id="externally managed JobSet is deleted after its TTL expires once a terminal "
                    "condition is written"),
    pytest.param(_js(None, "2026-01-01T11:00:00Z"), False, None,
                 id="terminal externally managed JobSet with no TTL is retained"),
    pytest.param(_js(60, "2026-01-01T11:59:30Z", kind="Failed"), False, timedelta(seconds=30),
                 id="before the TTL: requeued for exactly the time left"),
    pytest.param(_js(60, None), False, None,
                 id="not finished: nothing (the other controller owns it all)"),
    pytest.param(_js(60, "2026-01-01T10:00:00Z", kind="Failed"), True, None,
                 id="a Failed condition counts as a Completed one does"),
])
def test_ttl_of_an_externally_managed_jobset(js: dict[str, Any], deleted: bool,
                                             requeue: timedelta | None) -> None:
    plan = run(js)
    assert [a.type for a in plan.actions] == (["DeleteJobSet"] if deleted else [])
    assert plan.requeue_after == (requeue or timedelta(0))
    # Nothing else of the JobSet is touched: not its status, not its Jobs.
    assert plan.status["conditions"] == js["status"].get("conditions", [])
    if deleted:
        (action,) = plan.actions
        assert (action.name, action.uid, action.propagation_policy) == ("js", "uid-js-1",
                                                                        "Foreground")


def test_our_own_jobsets_are_not_external() -> None:
    plan = run(_js(0, "2026-01-01T11:59:00Z", manager="jobset-decider.io/shim"),
               controller="jobset-decider.io/shim")
    # The ordinary finished path: replicatedJobsStatus written, then the JobSet deleted.
    assert [a.type for a in plan.actions] == ["UpdateStatus", "DeleteJobSet"]


def test_an_unreadable_finish_time_is_an_error_as_upstream_returns_one() -> None:
    js = _js(10, "2026-01-01T11:59:00Z")
    js["status"]["conditions"][0]["lastTransitionTime"] = ""
    with pytest.raises(InvalidInput, match="unable to find the time when the JobSet"):
        run(js, now=NOW)
