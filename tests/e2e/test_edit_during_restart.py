"""A JobSet edited while it restarts (issue 28): a Job fails, the JobSet restarts (every Job of
attempt 0 deleted in the foreground, then attempt 1 created under the same names), and while
the old Jobs are still being deleted the user suspends the JobSet, alone or together with a
change of its pod template that the webhook allows while suspended (labels, nodeSelector).

The old Jobs are held by a finalizer of the test's own, so "while the old Jobs are being
deleted" lasts as long as the test says: attempt 1 cannot be created before they are gone
(its Jobs' names are theirs). Upstream's semantics: the new attempt's Jobs are created
suspended from the edited spec, none of their pods runs before the resume, and the restart is
counted once."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from tests.e2e.framework import (
    EXIT_CODE,
    JOBSETS,
    Kube,
    condition,
    conditions,
    eventually,
    has_condition,
    jobset,
    phases,
    replicated_job,
)

pytestmark = [pytest.mark.e2e, pytest.mark.waits]

NAME = "edited"
# A finalizer of the test's own: an old Job carrying it stays (deletionTimestamp set) after
# the garbage collector has taken its pods, until the test removes it.
HOLD = "e2e.jobset-decider.io/hold-old-attempt"
ATTEMPT = "jobset.sigs.k8s.io/restart-attempt"
EDIT_LABEL = "e2e.jobset-decider.io/edited"
HOSTNAME = "kubernetes.io/hostname"


class Seen:
    """Every Job any poll of the test saw, by uid: the history the assertions on
    "nothing recreated, no attempt skipped or duplicated" are made on."""

    def __init__(self, kube: Kube, ns: str) -> None:
        self.kube, self.ns = kube, ns
        self.jobs: dict[str, tuple[str, str]] = {}  # uid -> (name, restart-attempt)

    def list_jobs(self) -> list[dict[str, Any]]:
        jobs = self.kube.jobs(self.ns, NAME)
        for j in jobs:
            self.jobs[j["metadata"]["uid"]] = (j["metadata"]["name"],
                                               j["metadata"]["labels"].get(ATTEMPT, ""))
        return jobs

    def of_attempt(self, attempt: str) -> dict[str, str]:
        return {uid: name for uid, (name, a) in self.jobs.items() if a == attempt}


def _job_path(ns: str, name: str) -> str:
    return f"/apis/batch/v1/namespaces/{ns}/jobs/{name}"


def _set_hold(kube: Kube, ns: str, name: str, on: bool) -> None:
    """Add or remove HOLD on a Job, conditional on its resourceVersion (the garbage collector
    edits the same list: foregroundDeletion), tried again on a conflict."""

    def attempt() -> bool:
        job = kube.maybe(_job_path(ns, name))
        if job is None:
            return not on
        fins = [f for f in job["metadata"].get("finalizers") or [] if f != HOLD]
        if on:
            fins.append(HOLD)
        try:
            kube.patch(_job_path(ns, name), {"metadata": {
                "resourceVersion": job["metadata"]["resourceVersion"], "finalizers": fins}})
        except ApiException as exc:
            if exc.status in (404, 409):
                return False
            raise
        return True

    eventually(f"finalizer {HOLD} {'on' if on else 'off'} Job {name}", attempt, bool)


def _release_all(kube: Kube, ns: str) -> None:
    for job in kube.jobs(ns, NAME):
        if HOLD in (job["metadata"].get("finalizers") or []):
            _set_hold(kube, ns, job["metadata"]["name"], on=False)


def _end(kube: Kube, ns: str, pods: list[dict[str, Any]], code: int) -> None:
    for pod in pods:
        kube.patch(f"/api/v1/namespaces/{ns}/pods/{pod['metadata']['name']}",
                   {"metadata": {"annotations": {EXIT_CODE: str(code)}}})


def _running(kube: Kube, ns: str, count: int) -> list[dict[str, Any]]:
    return eventually(f"{count} pods of {NAME} Running", lambda: kube.pods(ns, NAME),
                      lambda ps: len(ps) == count
                      and set(phases(ps).values()) == {"Running"}, show=phases)


def _job_view(j: dict[str, Any]) -> dict[str, Any]:
    meta = j["metadata"]
    return {"name": meta["name"], "attempt": meta["labels"].get(ATTEMPT),
            "deleting": bool(meta.get("deletionTimestamp")),
            "finalizers": meta.get("finalizers"), "suspend": j["spec"].get("suspend"),
            "conditions": conditions(j)}


def _pod_events(kube: Kube, ns: str, job_uid: str, reason: str) -> int:
    """How many times the Job controller recorded `reason` (SuccessfulCreate: a pod made,
    SuccessfulDelete: a pod deleted) for this Job; an event repeated is counted in `count`."""
    return sum(ev.get("count") or 1 for ev in kube.events(ns)
               if (ev.get("involvedObject") or {}).get("uid") == job_uid
               and ev.get("reason") == reason)


def _job_events(kube: Kube, ns: str) -> list[str]:
    return [f"{(ev.get('involvedObject') or {}).get('name')} {ev.get('reason')} "
            f"x{ev.get('count')}: {ev.get('message')}" for ev in kube.events(ns)
            if (ev.get("involvedObject") or {}).get("kind") == "Job"]


@pytest.mark.parametrize("edit", [False, True],
                         ids=["suspended-restart-creates-the-new-attempt-suspended",
                              "template-edited-while-suspended-reaches-the-new-attempt"])
def test_jobset_edited_while_its_old_jobs_are_being_deleted(e2e, ns, edit):
    kube = e2e.kube
    seen = Seen(kube, ns)
    path = f"{JOBSETS}/namespaces/{ns}/jobsets/{NAME}"
    # maxRestarts 3, not 1: a restart counted twice would show as restarts 2, not be capped
    # into a Failed JobSet.
    kube.create_jobset(jobset(ns, NAME, [replicated_job("w", replicas=2)],
                              failurePolicy={"maxRestarts": 3}))
    first = _running(kube, ns, 2)
    old = eventually("the 2 Jobs of attempt 0", seen.list_jobs, lambda js: len(js) == 2,
                     show=lambda js: [_job_view(j) for j in js])
    old_uids = {j["metadata"]["uid"] for j in old}
    try:
        for job in old:
            _set_hold(kube, ns, job["metadata"]["name"], on=True)
        # Pod 0 fails: its Job fails (backoffLimit 0) and the JobSet restarts.
        _end(kube, ns, first[:1], 1)

        # The restart is under way and held: restarts 1, both old Jobs deleted in the
        # foreground with their pods gone (the garbage collector dropped foregroundDeletion),
        # kept only by HOLD, and no Job of attempt 1 (their names are taken).
        eventually("the restart recorded", lambda: kube.jobset(ns, NAME),
                   lambda j: (j.get("status") or {}).get("restarts", 0) >= 1,
                   show=lambda j: j.get("status"))

        def held(now: tuple[list[dict[str, Any]], list[dict[str, Any]]]) -> bool:
            jobs, pods = now
            return {j["metadata"]["uid"] for j in jobs} == old_uids and pods == [] and all(
                j["metadata"].get("deletionTimestamp")
                and j["metadata"].get("finalizers") == [HOLD] for j in jobs)

        def restarted_again() -> bool:
            js = kube.jobset(ns, NAME) or {}
            return (js.get("status") or {}).get("restarts", 0) > 1 or has_condition(js, "Failed")

        # (Stops early when the JobSet restarts again, so the assertion below says why.)
        eventually("attempt 0's Jobs held by the finalizer alone, their pods gone",
                   lambda: (seen.list_jobs(), kube.pods(ns, NAME)),
                   lambda now: held(now) or restarted_again(),
                   show=lambda now: ([_job_view(j) for j in now[0]], phases(now[1])))
        # Once: the failed Job, kept by HOLD, is of a previous attempt, not a new failure.
        js = kube.jobset(ns, NAME)
        assert js["status"]["restarts"] == 1 and not has_condition(js, "Failed"), js["status"]

        # The user's edit, mid-restart: suspend, and with `edit` a change of the pod template
        # in the same write (upstream's webhook lets a JobSet "getting suspended" change its
        # pod templates' labels, annotations, nodeSelector, tolerations and scheduling gates).
        node = sorted(n["metadata"]["name"] for n in kube.items("/api/v1/nodes"))[-1]
        change: dict[str, Any] = {"suspend": True}
        if edit:
            rjobs = copy.deepcopy(kube.jobset(ns, NAME)["spec"]["replicatedJobs"])
            pod = rjobs[0]["template"]["spec"]["template"]
            pod.setdefault("metadata", {}).setdefault("labels", {})[EDIT_LABEL] = "after"
            pod["spec"]["nodeSelector"] = {HOSTNAME: node}
            # Not without the suspend: refused as immutable, and nothing changes.
            with pytest.raises(ApiException) as refused:
                kube.patch(path, {"spec": {"replicatedJobs": rjobs}})
            assert refused.value.status == 422, refused.value.body
            assert "field is immutable" in refused.value.body, refused.value.body
            change["replicatedJobs"] = rjobs
        kube.patch(path, {"spec": change})
        # The shim has acted on the edited JobSet (a Suspended condition is written only for
        # it) before the old Jobs may go: upstream's informer would see the edit first too.
        js = eventually("JobSet Suspended during the restart", lambda: kube.jobset(ns, NAME),
                        lambda j: has_condition(j, "Suspended"), show=conditions)
        assert js["status"]["restarts"] == 1, js["status"]
        assert {j["metadata"]["uid"] for j in seen.list_jobs()} == old_uids

        for old_name in sorted(seen.of_attempt("0").values()):
            _set_hold(kube, ns, old_name, on=False)

        new = eventually("attempt 1's 2 Jobs, created suspended", seen.list_jobs,
                         lambda js: sorted(j["metadata"]["labels"].get(ATTEMPT) for j in js)
                         == ["1", "1"] and all(has_condition(j, "Suspended") for j in js),
                         show=lambda js: [_job_view(j) for j in js])
    finally:
        _release_all(kube, ns)
    assert all(j["spec"]["suspend"] is True for j in new), [_job_view(j) for j in new]
    assert kube.pods(ns, NAME) == [], phases(kube.pods(ns, NAME))
    for job in new:
        pod = job["spec"]["template"]
        labels = (pod.get("metadata") or {}).get("labels") or {}
        if edit:
            assert labels.get(EDIT_LABEL) == "after", labels
            assert pod["spec"].get("nodeSelector") == {HOSTNAME: node}, pod["spec"]
        else:
            assert EDIT_LABEL not in labels and not pod["spec"].get("nodeSelector"), pod

    kube.patch(path, {"spec": {"suspend": False}})
    fresh = _running(kube, ns, 2)
    assert not {p["metadata"]["uid"] for p in fresh} & {p["metadata"]["uid"] for p in first}
    if edit:
        assert {p["metadata"]["labels"].get(EDIT_LABEL) for p in fresh} == {"after"}
        assert {p["spec"]["nodeName"] for p in fresh} == {node}, phases(fresh)
    _end(kube, ns, fresh, 0)
    done = eventually(f"JobSet {NAME} Completed", lambda: kube.jobset(ns, NAME),
                      lambda j: has_condition(j, "Completed"), show=conditions)
    final = seen.list_jobs()

    assert done["status"]["restarts"] == 1, done["status"]
    assert condition(done, "Completed")["reason"] == "AllJobsCompleted", conditions(done)
    # No attempt skipped or duplicated, no old Job made again: attempt 0 is the two Jobs first
    # seen, attempt 1 the two that completed, and no other Job was ever seen.
    assert {a for _, a in seen.jobs.values()} == {"0", "1"}, seen.jobs
    assert set(seen.of_attempt("0")) == old_uids, seen.jobs
    assert set(seen.of_attempt("1")) == {j["metadata"]["uid"] for j in final}, seen.jobs
    names = sorted(f"{NAME}-w-{i}" for i in range(2))
    assert sorted(seen.of_attempt("0").values()) == sorted(seen.of_attempt("1").values()) == names
    # Created suspended: each new Job made one pod, after the resume, and deleted none (a Job
    # created running and then suspended would have made and deleted one first).
    # (Events are recorded asynchronously: wait for each Job's first.)
    for job in final:
        uid = job["metadata"]["uid"]
        made = eventually(f"Job {job['metadata']['name']}'s SuccessfulCreate event",
                          lambda uid=uid: _pod_events(kube, ns, uid, "SuccessfulCreate"),
                          lambda n: n >= 1)
        assert made == 1, _job_events(kube, ns)
        assert _pod_events(kube, ns, uid, "SuccessfulDelete") == 0, _job_events(kube, ns)
