"""Failure-policy rules on a real control plane (issue 28, item 3): RestartJob by a rule on the
Job's failure reason, and a rule matched through a pod condition the API server set.

Both run on a control plane of their own (module-scoped, lifecycle_support.gated_control_plane)
whose product runs with the `RestartJob` gate, given where a user gives it: the shim's
`--feature-gates` and the decider's `--webhook-feature-gates` (the webhook refuses a RestartJob
rule without it). The session's product runs with no gate, as deploy/ installs it.

The pod condition is the real one: the Eviction API adds `DisruptionTarget`
(`EvictionByEvictionAPI`) before it deletes the pod. What a kubelet would then do, KWOK does
not: its stages (tools/controlplane/kwok-stages.yaml) leave a pod being deleted alone until its
finalizers are gone, and the Job controller keeps its tracking finalizer on a terminating pod
until the pod is terminal (a Job with a podFailurePolicy replaces and counts only Failed pods).
So the test plays the kubelet's part: it ends the evicted pod's container (exit code 143, the
SIGTERM it would have got) and writes the pod Failed, keeping the API server's condition."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.conftest import E2E
from tests.e2e.framework import (
    condition,
    conditions,
    eventually,
    has_condition,
    jobset,
    phases,
    replicated_job,
)
from tests.e2e.lifecycle_support import (
    RESTART_ATTEMPT,
    end,
    gated_control_plane,
    own_namespace,
    running,
)

pytestmark = [pytest.mark.e2e, pytest.mark.waits]

JOB_RESTART_ATTEMPT = "jobset.sigs.k8s.io/job-restart-attempt"


@pytest.fixture(scope="module")
def plane() -> Iterator[E2E]:
    with gated_control_plane(os.environ.get("E2E_KUBERNETES_VERSION", "v1.37.2"),
                             gates="RestartJob=true", tag="rules") as cp:
        yield cp


@pytest.fixture
def rns(plane: E2E, request: pytest.FixtureRequest) -> Iterator[str]:
    """The conftest's `ns`, on this module's control plane."""
    with own_namespace(plane, request, "e2e-rules") as name:
        yield name


def fail_job_on(rjob: dict[str, Any], rule: dict[str, Any]) -> dict[str, Any]:
    """The replicated Job's Jobs fail by their own podFailurePolicy (reason PodFailurePolicy)."""
    rjob["template"]["spec"]["podFailurePolicy"] = {"rules": [{"action": "FailJob", **rule}]}
    return rjob


def jobs_by_name(jobs: list[dict[str, Any]]) -> dict[str, tuple[str, str | None, str | None,
                                                                   bool]]:
    return {j["metadata"]["name"]: (j["metadata"]["uid"],
                                    j["metadata"]["labels"].get(RESTART_ATTEMPT),
                                    j["metadata"]["labels"].get(JOB_RESTART_ATTEMPT),
                                    bool(j["metadata"].get("deletionTimestamp")))
            for j in jobs}


def uids(objs: list[dict[str, Any]]) -> dict[str, str]:
    return {o["metadata"]["name"]: o["metadata"]["uid"] for o in objs}


def jobset_events(kube, ns: str, reason: str) -> list[dict[str, Any]]:
    return [e for e in kube.events(ns)
            if e["involvedObject"].get("kind") == "JobSet" and e.get("reason") == reason]


def test_restart_job_rule_recreates_only_the_failed_job(plane, rns):
    kube, ns = plane.kube, rns
    name = "solo"
    workers = fail_job_on(replicated_job("w", replicas=2),
                          {"onExitCodes": {"operator": "In", "values": [7]}})
    kube.create_jobset(jobset(ns, name, [workers, replicated_job("ps")], failurePolicy={
        "maxRestarts": 2,
        "rules": [{"name": "restart_one", "action": "RestartJob",
                   "onJobFailureReasons": ["PodFailurePolicy"]}]}))
    pods = running(kube, ns, name, 3)
    jobs = kube.jobs(ns, name)
    # The gate puts attempt 0 on every Job from the start.
    assert {v[2] for v in jobs_by_name(jobs).values()} == {"0"}, jobs_by_name(jobs)
    victim_job = f"{name}-w-1"
    before = uids(jobs)
    bystanders = {n: u for n, u in before.items() if n != victim_job}
    victim_pod = [p for p in pods if p["metadata"]["labels"].get(
        "batch.kubernetes.io/job-name") == victim_job]
    assert len(victim_pod) == 1, [p["metadata"]["name"] for p in pods]
    kept_pods = {n: u for n, u in uids(pods).items()
                 if n != victim_pod[0]["metadata"]["name"]}
    end(kube, ns, victim_pod, code=7)

    # The decision shows when a new Job of w-1's name exists. Only w-1 was deleted and made
    # again, one Job attempt on; the others keep their uids and the JobSet's attempt stays 0
    # (a restart of the whole JobSet would have made every Job again, restart-attempt 1).
    jobs = eventually(f"a new Job {victim_job}", lambda: kube.jobs(ns, name),
                      lambda js: jobs_by_name(js).get(victim_job, (before[victim_job],))[0]
                      != before[victim_job], show=jobs_by_name)
    seen = jobs_by_name(jobs)
    assert seen[victim_job][1:] == ("0", "1", False), seen
    assert {n: v for n, v in seen.items() if n != victim_job} == {
        n: (u, "0", "0", False) for n, u in bystanders.items()}, seen
    fresh = next(j for j in jobs if j["metadata"]["name"] == victim_job)
    assert fresh["metadata"]["annotations"][JOB_RESTART_ATTEMPT] == "1"
    pod_meta = fresh["spec"]["template"]["metadata"]
    assert pod_meta["labels"][JOB_RESTART_ATTEMPT] == "1"
    assert pod_meta["annotations"][JOB_RESTART_ATTEMPT] == "1"

    def counts(j: dict[str, Any] | None) -> dict[str, Any]:
        status = (j or {}).get("status") or {}
        return {"restarts": status.get("restarts", 0),
                "restartsCountTowardsMax": status.get("restartsCountTowardsMax", 0),
                **{r["name"]: (r.get("jobRestarts"), r.get("jobRestartsCountTowardsMax"))
                   for r in status.get("replicatedJobsStatus") or ()}}

    js = eventually("jobRestarts [0, 1] for w", lambda: kube.jobset(ns, name),
                    lambda j: counts(j).get("w", (None,))[0] == [0, 1], show=counts)
    seen = counts(js)
    # One Job's restart, counted against maxRestarts; the JobSet itself never restarted, and
    # the other replicated Job has no restart (no list, as it never had one, or zeros).
    assert seen["w"] == ([0, 1], [0, 1]), seen
    assert (seen["restarts"], seen["restartsCountTowardsMax"]) == (0, 0), seen
    assert not any(seen["ps"][0] or ()) and not any(seen["ps"][1] or ()), seen
    assert not has_condition(js, "Failed") and not has_condition(js, "RestartingJobSet"), (
        conditions(js))
    warned = eventually("a RestartJobFailurePolicyAction event on the JobSet",
                        lambda: jobset_events(kube, ns, "RestartJobFailurePolicyAction"), bool)
    assert {e["type"] for e in warned} == {"Warning"}, warned
    assert warned[0]["message"] == ("applying RestartJob failure policy action "
                                    f"(first failed job: {victim_job})"), warned
    assert not jobset_events(kube, ns, "RestartJobSetFailurePolicyAction")

    # The new Job's pod runs beside the untouched ones, which were never replaced.
    pods = running(kube, ns, name, 3)
    now = uids(pods)
    assert {n: u for n, u in now.items() if n in kept_pods} == kept_pods, (now, kept_pods)
    new_pod = [p for p in pods if p["metadata"]["name"] not in kept_pods]
    assert [p["metadata"]["labels"].get(JOB_RESTART_ATTEMPT) for p in new_pod] == ["1"]

    end(kube, ns, pods)
    done = eventually(f"JobSet {name} Completed", lambda: kube.jobset(ns, name),
                      lambda j: has_condition(j, "Completed"), show=conditions)
    assert counts(done)["w"] == ([0, 1], [0, 1])
    assert uids(kube.jobs(ns, name)) == {**bystanders, victim_job: fresh["metadata"]["uid"]}


def evict(kube, ns: str, pod: str) -> None:
    kube.create(f"/api/v1/namespaces/{ns}/pods/{pod}/eviction", {
        "apiVersion": "policy/v1", "kind": "Eviction",
        "metadata": {"name": pod, "namespace": ns}})


def kubelet_ends(kube, ns: str, pod: dict[str, Any], code: int) -> None:
    """What a kubelet writes once it has killed a deleted pod's containers: each terminated,
    the pod Failed (a strategic merge: the API server's DisruptionTarget condition stays)."""
    name = pod["metadata"]["name"]
    kube.call("PATCH", f"/api/v1/namespaces/{ns}/pods/{name}/status", {"status": {
        "phase": "Failed",
        "conditions": [{"type": t, "status": "False", "reason": "PodFailed"}
                       for t in ("Ready", "ContainersReady")],
        "containerStatuses": [{
            "name": c["name"], "ready": False, "started": False,
            "state": {"running": None, "terminated": {
                "exitCode": code, "reason": "Error",
                "startedAt": pod["status"]["startTime"]}}}
            for c in pod["spec"]["containers"]]}},
        content_type="application/strategic-merge-patch+json")


def test_pod_condition_rule_fails_the_jobset(plane, rns):
    kube, ns = plane.kube, rns
    name = "evicted"
    workers = fail_job_on(replicated_job("w", replicas=2), {"onPodConditions": [
        {"type": "DisruptionTarget", "status": "True"}]})
    # The first rule would restart on an exit code, the second fails on the condition: the
    # Job's failure message (not only its reason, PodFailurePolicy for both) must pick.
    kube.create_jobset(jobset(ns, name, [workers], failurePolicy={
        "maxRestarts": 2,
        "rules": [
            {"name": "exit_code", "action": "RestartJobSet",
             "onJobFailureReasons": ["PodFailurePolicy"],
             "onJobFailureMessagePatterns": ["failed with exit code"]},
            {"name": "disrupted", "action": "FailJobSet",
             "onJobFailureReasons": ["PodFailurePolicy"],
             "onJobFailureMessagePatterns": ["has condition DisruptionTarget"]}]}))
    pods = running(kube, ns, name, 2)
    victim = sorted(pods, key=lambda p: p["metadata"]["name"])[0]
    pod_name = victim["metadata"]["name"]
    victim_job = victim["metadata"]["labels"]["batch.kubernetes.io/job-name"]
    evict(kube, ns, pod_name)

    def disruption(p: dict[str, Any] | None) -> dict[str, Any] | None:
        return condition(p, "DisruptionTarget")

    evicted = eventually(f"pod {pod_name} evicted", lambda: kube.maybe(
        f"/api/v1/namespaces/{ns}/pods/{pod_name}"),
        lambda p: p is not None and bool(p["metadata"].get("deletionTimestamp")),
        show=lambda p: p and (p["metadata"].get("deletionTimestamp"), p.get("status")))
    assert disruption(evicted) is not None and disruption(evicted)["status"] == "True"
    assert disruption(evicted)["reason"] == "EvictionByEvictionAPI", disruption(evicted)
    # Terminating but not Failed: the Job's podFailurePolicy waits for a terminal phase.
    job = kube.get(f"/apis/batch/v1/namespaces/{ns}/jobs/{victim_job}")
    assert not has_condition(job, "Failed") and not has_condition(job, "FailureTarget"), (
        conditions(job))

    kubelet_ends(kube, ns, evicted, code=143)
    # The decision: the JobSet fails by the second rule, or (a wrong match) restarts.
    js = eventually(f"JobSet {name} Failed or restarted", lambda: kube.jobset(ns, name),
                    lambda j: has_condition(j, "Failed") or bool(
                        (j.get("status") or {}).get("restarts")),
                    show=lambda j: (conditions(j), (j.get("status") or {}).get("restarts")))
    assert has_condition(js, "Failed"), (conditions(js), js["status"].get("restarts"))
    assert condition(js, "Failed")["reason"] == "FailJobSetFailurePolicyAction", conditions(js)
    assert condition(js, "Failed")["message"] == (
        f"applying FailJobSet failure policy action (first failed job: {victim_job})")

    # The failed Job stays (only active Jobs are deleted once the JobSet is finished).
    failed = eventually(f"Job {victim_job} Failed", lambda: kube.get(
        f"/apis/batch/v1/namespaces/{ns}/jobs/{victim_job}"),
        lambda j: has_condition(j, "Failed"), show=conditions)
    reason = condition(failed, "Failed")
    assert reason["reason"] == "PodFailurePolicy", conditions(failed)
    assert reason["message"] == (f"Pod {ns}/{pod_name} has condition DisruptionTarget "
                                 "matching FailJob rule at index 0"), reason
    assert js["status"].get("terminalState") == "Failed"
    assert js["status"].get("restarts", 0) == 0, js["status"]
    assert {j["metadata"]["labels"].get(RESTART_ATTEMPT) for j in kube.jobs(ns, name)} <= {"0"}
    # The evicted pod goes once the Job controller lets go of it (KWOK deletes it then).
    eventually(f"pod {pod_name} gone", lambda: [
        p for p in kube.pods(ns, name) if p["metadata"]["name"] == pod_name], lambda ps: not ps,
        show=phases)
    assert not jobset_events(kube, ns, "RestartJobSetFailurePolicyAction")
