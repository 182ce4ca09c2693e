"""Failure policy and suspension on a real control plane: the Job controller's own
podFailurePolicy fails a Job on an exit code, the JobSet's rule turns that into FailJobSet; a
suspended JobSet's Jobs make no pods until it is resumed, and lose them when suspended again."""

from __future__ import annotations

import pytest

from tests.e2e.framework import (
    EXIT_CODE,
    JOBSETS,
    condition,
    conditions,
    eventually,
    has_condition,
    jobset,
    phases,
    replicated_job,
)

pytestmark = [pytest.mark.e2e, pytest.mark.waits]


def running(kube, ns, name, count):
    return eventually(f"{count} pods of {name} Running", lambda: kube.pods(ns, name),
                      lambda ps: len(ps) == count
                      and set(phases(ps).values()) == {"Running"}, show=phases)


def test_exit_code_rule_fails_the_jobset_without_restarting(e2e, ns):
    kube = e2e.kube
    workers = replicated_job("workers", replicas=2)
    # The Job controller's own rule: exit code 3 fails the Job (reason PodFailurePolicy).
    workers["template"]["spec"]["podFailurePolicy"] = {"rules": [
        {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [3]}}]}
    kube.create_jobset(jobset(ns, "fatal", [workers], failurePolicy={
        "maxRestarts": 3,
        "rules": [{"name": "fatal_exit", "action": "FailJobSet",
                   "onJobFailureReasons": ["PodFailurePolicy"]}]}))
    pods = running(kube, ns, "fatal", 2)
    victim = sorted(p["metadata"]["name"] for p in pods)[0]
    kube.patch(f"/api/v1/namespaces/{ns}/pods/{victim}",
               {"metadata": {"annotations": {EXIT_CODE: "3"}}})

    failed_job = eventually("a Job Failed by its podFailurePolicy", lambda: kube.jobs(
        ns, "fatal"), lambda js: any(has_condition(j, "Failed") for j in js),
        show=lambda js: {j["metadata"]["name"]: conditions(j) for j in js})
    reasons = {condition(j, "Failed")["reason"] for j in failed_job if has_condition(j, "Failed")}
    assert reasons == {"PodFailurePolicy"}
    js = eventually("JobSet fatal Failed", lambda: kube.jobset(ns, "fatal"),
                    lambda j: has_condition(j, "Failed"), show=conditions)
    assert condition(js, "Failed")["reason"] == "FailJobSetFailurePolicyAction", conditions(js)
    assert js["status"].get("terminalState") == "Failed"
    # The rule, not maxRestarts, decided: nothing was restarted.
    assert js["status"].get("restarts", 0) == 0
    assert {j["metadata"]["labels"].get("jobset.sigs.k8s.io/restart-attempt")
            for j in kube.jobs(ns, "fatal")} == {"0"}


def test_suspend_and_resume(e2e, ns):
    kube = e2e.kube
    path = f"{JOBSETS}/namespaces/{ns}/jobsets/paused"
    kube.create_jobset(jobset(ns, "paused", [replicated_job("w", replicas=2)], suspend=True))
    jobs = eventually("2 suspended Jobs", lambda: kube.jobs(ns, "paused"),
                      lambda js: len(js) == 2 and all(j["spec"].get("suspend") for j in js),
                      show=lambda js: {j["metadata"]["name"]: j["spec"].get("suspend")
                                       for j in js})
    eventually("JobSet paused Suspended", lambda: kube.jobset(ns, "paused"),
               lambda j: has_condition(j, "Suspended"), show=conditions)
    # A suspended Job has no pods: the Job controller says so in its own condition.
    eventually("the Jobs' Suspended condition", lambda: kube.jobs(ns, "paused"),
               lambda js: all(has_condition(j, "Suspended") for j in js),
               show=lambda js: [conditions(j) for j in js])
    assert kube.pods(ns, "paused") == [], phases(kube.pods(ns, "paused"))
    assert len(jobs) == 2

    kube.patch(path, {"spec": {"suspend": False}})
    running(kube, ns, "paused", 2)
    js = eventually("JobSet paused resumed", lambda: kube.jobset(ns, "paused"),
                    lambda j: has_condition(j, "Suspended", "False"), show=conditions)
    assert condition(js, "Suspended")["reason"] == "ResumeJobs", conditions(js)

    kube.patch(path, {"spec": {"suspend": True}})
    eventually("the pods gone once suspended again", lambda: kube.pods(ns, "paused"),
               lambda ps: ps == [], show=phases)
    eventually("JobSet paused Suspended again", lambda: kube.jobset(ns, "paused"),
               lambda j: has_condition(j, "Suspended"), show=conditions)

    kube.patch(path, {"spec": {"suspend": False}})
    pods = running(kube, ns, "paused", 2)
    for pod in pods:
        kube.patch(f"/api/v1/namespaces/{ns}/pods/{pod['metadata']['name']}",
                   {"metadata": {"annotations": {EXIT_CODE: "0"}}})
    eventually("JobSet paused Completed", lambda: kube.jobset(ns, "paused"),
               lambda j: has_condition(j, "Completed"), show=conditions)
