"""Kueue v0.17 queues, admits and checks the shim's JobSets, on the real control plane.

Kueue is built from its module and installed from its own manifests (tests/e2e/kueue.py); the
decider-backed AdmissionCheck runs as deploy/components/kueue-check runs it
(tests/e2e/kueue_scenarios.py). Every test has a ResourceFlavor, ClusterQueue and
AdmissionCheck of its own, and KWOK nodes of its own (tests/e2e/kueue_fixtures.py).
"""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf.json_format import MessageToDict

from decider_client import DeciderClient
from decider_client.observe import build_pod_sets_request
from tests.e2e import kueue_fixtures
from tests.e2e.framework import (
    EXIT_CODE,
    condition,
    conditions,
    eventually,
    has_condition,
    jobset,
    phases,
    replicated_job,
)
from tests.e2e.kueue_fixtures import (
    POOL_LABEL,
    SHEDDING_CONTROLLER,
    finish,
    make_queue,
    queued,
    remove_queue,
    restore,
    running,
    the_workload,
    without_decider_webhooks,
)
from tests.e2e.kueue_scenarios import (
    KUEUE,
    QUEUE_LABEL,
    check_state,
    create_cluster_scoped,
    priority_class,
    reserved_cpu,
    workloads,
)
from tools.controlplane import versions

pytestmark = [pytest.mark.e2e, pytest.mark.waits]

# The fixtures, by name (a module-scoped Kueue for this module, a queue per test).
kueue_env = kueue_fixtures.kueue_env
queue = kueue_fixtures.queue


def test_queued_jobset_admitted_resumed_on_the_flavor_and_quota_released(e2e, queue):
    kube, ns = e2e.kube, queue.ns
    created = kube.create_jobset(queued(ns, "trainer"))
    # Kueue's webhook creates it suspended; nothing runs before admission.
    assert created["spec"].get("suspend") is True, created["spec"]

    name = the_workload(e2e, ns, "trainer")["metadata"]["name"]
    wl_path = f"{KUEUE}/namespaces/{ns}/workloads/{name}"
    admitted = eventually("the Workload admitted", lambda: kube.get(wl_path),
                          lambda w: has_condition(w, "Admitted"), show=lambda w: (
                              conditions(w), (w.get("status") or {}).get("admissionChecks")))
    state = check_state(admitted, queue.check)
    assert state["state"] == "Ready", state
    assert state["message"] == (f"decider: JobSet {ns}/trainer is valid; its pod sets agree "
                                "(leader 1, workers 4)")
    assert [(p["name"], p["count"]) for p in admitted["spec"]["podSets"]] == [
        ("leader", 1), ("workers", 4)]
    cq_path = f"{KUEUE}/clusterqueues/{queue.cluster_queue}"
    eventually("5 CPUs reserved in the ClusterQueue", lambda: kube.get(cq_path),
               lambda cq: reserved_cpu(cq, queue.flavor) == "5",
               show=lambda cq: (cq.get("status") or {}).get("flavorsReservation"))

    # Resumed by Kueue with the flavor's node labels and toleration in every pod template.
    js = eventually("JobSet trainer resumed", lambda: kube.jobset(ns, "trainer"),
                    lambda j: j["spec"].get("suspend") is False, show=lambda j: j["spec"])
    for rjob in js["spec"]["replicatedJobs"]:
        pod = rjob["template"]["spec"]["template"]["spec"]
        assert pod.get("nodeSelector") == queue.labels, pod
        assert {"key": POOL_LABEL, "operator": "Equal", "value": queue.labels[POOL_LABEL],
                "effect": "NoSchedule"} in pod.get("tolerations", []), pod

    pods = eventually("5 pods Running", lambda: kube.pods(ns, "trainer"),
                      lambda ps: len(ps) == 5 and set(phases(ps).values()) == {"Running"},
                      show=phases)
    assert {p["spec"]["nodeName"] for p in pods} <= set(queue.nodes), \
        {p["metadata"]["name"]: p["spec"].get("nodeName") for p in pods}

    for pod in pods:
        kube.patch(f"/api/v1/namespaces/{ns}/pods/{pod['metadata']['name']}",
                   {"metadata": {"annotations": {EXIT_CODE: "0"}}})
    eventually("JobSet trainer Completed", lambda: kube.jobset(ns, "trainer"),
               lambda j: has_condition(j, "Completed"), show=conditions)
    eventually("the Workload Finished", lambda: kube.get(wl_path),
               lambda w: has_condition(w, "Finished"), show=conditions)
    eventually("the quota released", lambda: kube.get(cq_path),
               lambda cq: reserved_cpu(cq, queue.flavor) == "0",
               show=lambda cq: (cq.get("status") or {}).get("flavorsReservation"))


def test_check_rejects_a_jobset_created_while_the_webhook_was_down(e2e, queue):
    kube, ns = e2e.kube, queue.ns
    bad = queued(ns, "unchecked", failurePolicy={"maxRestarts": 1, "rules": [
        {"name": "r", "action": "RestartJobSet", "targetReplicatedJobs": ["nope"]}]})
    hooks = without_decider_webhooks(e2e)
    try:
        kube.create_jobset(bad)
    finally:
        restore(e2e, hooks)

    name = the_workload(e2e, ns, "unchecked")["metadata"]["name"]
    wl_path = f"{KUEUE}/namespaces/{ns}/workloads/{name}"
    # Kueue deactivates a Workload with a Rejected check (and at once resets the entry to
    # Pending): it never runs, and gives its quota back. The decider's message stays in
    # Kueue's event on the Workload, and in the check's event on the JobSet.
    deactivated = eventually("the Workload deactivated by the check", lambda: kube.get(wl_path),
                             lambda w: w["spec"].get("active") is False
                             and (condition(w, "Evicted") or {}).get("reason")
                             == "DeactivatedDueToAdmissionCheck",
                             show=lambda w: (w["spec"].get("active"), conditions(w)))
    assert queue.check in condition(deactivated, "Evicted")["message"]
    said = (f"decider Validate: JobSet {ns}/unchecked is invalid: spec.failurePolicy.rules[0]."
            "targetReplicatedJobs[0]: invalid replicatedJob name 'nope'")
    (kueue_event,) = eventually("Kueue's AdmissionCheckRejected event", lambda: [
        e for e in kube.events(ns) if e["reason"] == "AdmissionCheckRejected"
        and e["involvedObject"]["name"] == name], lambda es: len(es) == 1)
    assert said in kueue_event["message"], kueue_event["message"]
    ours = [e for e in kube.events(ns) if e["reason"] == "AdmissionCheckRejected"
            and e["involvedObject"]["kind"] == "JobSet"]
    assert ours and ours[0]["type"] == "Warning" and said in ours[0]["message"], ours
    eventually("no quota held", lambda: kube.get(f"{KUEUE}/clusterqueues/"
                                                 f"{queue.cluster_queue}"),
               lambda cq: reserved_cpu(cq, queue.flavor) == "0",
               show=lambda cq: (cq.get("status") or {}).get("flavorsReservation"))
    assert kube.jobset(ns, "unchecked")["spec"].get("suspend") is True
    assert kube.jobs(ns, "unchecked") == []


def test_check_retries_after_the_pushback_while_the_decider_sheds(e2e, ns, kueue_env):
    kube = e2e.kube
    own = make_queue(e2e, ns, controller=SHEDDING_CONTROLLER)
    shedding = kueue_env.shedding
    shedding.shedding.set()
    try:
        kube.create_jobset(queued(ns, "busy"))
        name = the_workload(e2e, ns, "busy")["metadata"]["name"]
        wl_path = f"{KUEUE}/namespaces/{ns}/workloads/{name}"
        # Kueue evicts a Workload with a Retry check and resets the entry to Pending at once,
        # keeping requeueAfterSeconds and counting the retry: those stay.
        retried = eventually("the check retried after the pushback", lambda: kube.get(wl_path),
                             lambda w: (check_state(w, own.check).get("retryCount") or 0) >= 1,
                             show=lambda w: (w.get("status") or {}).get("admissionChecks"))
        state = check_state(retried, own.check)
        assert state["requeueAfterSeconds"] == 2, state
        told = [e for e in kube.events(ns) if e["reason"] == "AdmissionCheckRetry"
                and e["involvedObject"]["name"] == "busy"]
        assert told and "RESOURCE_EXHAUSTED" in told[0]["message"] \
            and "pushback 2s" in told[0]["message"] \
            and "requeued after 2s" in told[0]["message"], told
        assert shedding.shed >= 1
        assert kube.jobset(ns, "busy")["spec"].get("suspend") is True
        # The decider recovers: the next time Kueue asks, the check is Ready and it runs.
        shedding.shedding.clear()
        eventually("the Workload admitted after the decider recovered", lambda: kube.get(
            wl_path), lambda w: has_condition(w, "Admitted"), show=lambda w: (
                conditions(w), (w.get("status") or {}).get("admissionChecks")))
        eventually("JobSet busy resumed", lambda: kube.jobset(ns, "busy"),
                   lambda j: j["spec"].get("suspend") is False, show=lambda j: j["spec"])
    finally:
        shedding.shedding.clear()
        kube.delete(f"/apis/jobset.x-k8s.io/v1alpha2/namespaces/{ns}/jobsets/busy")
        remove_queue(e2e, own)


def test_per_job_admission_in_the_independent_mode(e2e, ns, kueue_env):
    """Seed 000 as far as Kueue v0.17 goes: a JobSet without a queue name, in the Independent
    mode, whose Job templates carry one. Kueue's batch/job integration treats each Job as its
    own workload (its owner has no queue name), suspends it at creation and admits the Jobs one
    by one within the quota; the shim leaves each Job's suspend to Kueue, where upstream's
    controller would resume every Job of the running JobSet at once."""
    kube = e2e.kube
    own = make_queue(e2e, ns, cpus=2)
    try:
        two_cpus = {"name": "main", "image": "registry.invalid/e2e:1", "command": ["true"],
                    "resources": {"requests": {"cpu": "2"}}}
        rjobs = [replicated_job("first", container=two_cpus),
                 replicated_job("second", container=two_cpus)]
        for rjob in rjobs:
            rjob["template"]["metadata"] = {"labels": {QUEUE_LABEL: "user-queue"}}
        js = jobset(ns, "apart", rjobs)
        js["metadata"]["annotations"] = {"jobset.sigs.k8s.io/reconciliation-mode": "Independent"}
        kube.create_jobset(js)

        def suspended(jobs: list[dict[str, Any]]) -> dict[str, bool]:
            return {j["metadata"]["name"]: bool(j["spec"].get("suspend")) for j in jobs}

        # Quota for one: Kueue admits one Job; the other stays suspended, and the shim does
        # not resume it.
        jobs = eventually("one Job admitted, one held", lambda: kube.jobs(ns, "apart"),
                          lambda js_: len(js_) == 2
                          and sorted(suspended(js_).values()) == [False, True],
                          show=suspended)
        job_workloads = [w for w in kube.items(f"{KUEUE}/namespaces/{ns}/workloads")
                         if any(r.get("kind") == "Job" for r in
                                w["metadata"].get("ownerReferences") or [])]
        assert len(job_workloads) == 2, [w["metadata"]["name"] for w in job_workloads]
        assert [[p["name"] for p in w["spec"]["podSets"]] for w in job_workloads] == [
            ["main"], ["main"]]
        assert workloads(kube, ns, "apart") == []  # no JobSet-level Workload in this mode
        running = next(j for j in jobs if not j["spec"].get("suspend"))
        held = next(j for j in jobs if j["spec"].get("suspend"))
        pod = running["spec"]["template"]["spec"]
        assert pod.get("nodeSelector") == own.labels, pod  # Kueue's flavor, on the Job
        js_now = kube.jobset(ns, "apart")
        assert not has_condition(js_now, "Suspended"), conditions(js_now)

        # The admitted Job finishes: its quota goes to the held one, which Kueue resumes.
        pods = eventually("the admitted Job's pod Running", lambda: [
            p for p in kube.pods(ns, "apart")
            if p["metadata"]["labels"].get("job-name") == running["metadata"]["name"]],
            lambda ps: len(ps) == 1 and phases(ps) and set(phases(ps).values()) == {"Running"},
            show=phases)
        kube.patch(f"/api/v1/namespaces/{ns}/pods/{pods[0]['metadata']['name']}",
                   {"metadata": {"annotations": {EXIT_CODE: "0"}}})
        eventually(f"Job {held['metadata']['name']} admitted after the first finished",
                   lambda: kube.jobs(ns, "apart"),
                   lambda js_: not suspended(js_).get(held["metadata"]["name"], True),
                   show=suspended)
        second = eventually("the second Job's pod Running", lambda: [
            p for p in kube.pods(ns, "apart")
            if p["metadata"]["labels"].get("job-name") == held["metadata"]["name"]],
            lambda ps: len(ps) == 1 and set(phases(ps).values()) == {"Running"}, show=phases)
        kube.patch(f"/api/v1/namespaces/{ns}/pods/{second[0]['metadata']['name']}",
                   {"metadata": {"annotations": {EXIT_CODE: "0"}}})
        eventually("JobSet apart Completed", lambda: kube.jobset(ns, "apart"),
                   lambda j: has_condition(j, "Completed"), show=conditions)
    finally:
        remove_queue(e2e, own)


def workload_path(e2e: Any, ns: str, jobset_name: str) -> str:
    return f"{KUEUE}/namespaces/{ns}/workloads/" + the_workload(e2e, ns, jobset_name)[
        "metadata"]["name"]


def test_a_second_jobset_beyond_the_quota_waits_then_runs(e2e, queue):
    kube, ns = e2e.kube, queue.ns
    kube.create_jobset(queued(ns, "first"))
    first = running(kube, ns, "first", 5)
    kube.create_jobset(queued(ns, "second"))
    # 5 + 5 CPUs > 8: Kueue reserves nothing for the second, which stays suspended, no pod.
    path = workload_path(e2e, ns, "second")
    eventually("the second Workload pending for quota", lambda: kube.get(path),
               lambda w: (condition(w, "QuotaReserved") or {}).get("status") == "False",
               show=conditions)
    assert kube.jobset(ns, "second")["spec"].get("suspend") is True
    assert kube.pods(ns, "second") == [] and not has_condition(kube.get(path), "Admitted")

    finish(kube, ns, first)
    eventually("JobSet first Completed", lambda: kube.jobset(ns, "first"),
               lambda j: has_condition(j, "Completed"), show=conditions)
    eventually("the second admitted once the first finished", lambda: kube.get(path),
               lambda w: has_condition(w, "Admitted"), show=conditions)
    finish(kube, ns, running(kube, ns, "second", 5))
    eventually("JobSet second Completed", lambda: kube.jobset(ns, "second"),
               lambda j: has_condition(j, "Completed"), show=conditions)


def test_preempted_by_priority_then_resumed_with_its_counters(e2e, ns, kueue_env):
    kube = e2e.kube
    own = make_queue(e2e, ns, preemption={"withinClusterQueue": "LowerPriority"})
    low, high = f"low-{own.flavor}", f"high-{own.flavor}"
    create_cluster_scoped(kube, priority_class(low, 100))
    create_cluster_scoped(kube, priority_class(high, 1000))
    try:
        js = queued(ns, "batch")
        js["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = low
        kube.create_jobset(js)
        running(kube, ns, "batch", 5)
        urgent = queued(ns, "urgent")
        urgent["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = high
        kube.create_jobset(urgent)

        # Kueue suspends the low-priority JobSet; the shim stops its Jobs as upstream does
        # (each Job suspended, its pods gone), and counts no restart.
        eventually("JobSet batch suspended by Kueue", lambda: kube.jobset(ns, "batch"),
                   lambda j: j["spec"].get("suspend") is True, show=lambda j: j["spec"])
        eventually("batch's Jobs suspended, their pods gone", lambda: (
            kube.jobs(ns, "batch"), kube.pods(ns, "batch")),
            lambda seen: len(seen[0]) == 3 and all(j["spec"].get("suspend") for j in seen[0])
            and seen[1] == [], show=lambda seen: (
                {j["metadata"]["name"]: j["spec"].get("suspend") for j in seen[0]},
                phases(seen[1])))
        finish(kube, ns, running(kube, ns, "urgent", 5))
        eventually("JobSet urgent Completed", lambda: kube.jobset(ns, "urgent"),
                   lambda j: has_condition(j, "Completed"), show=conditions)

        # Re-admitted once the quota is free: resumed, with the flavor again, and finished.
        resumed = eventually("JobSet batch resumed", lambda: kube.jobset(ns, "batch"),
                             lambda j: j["spec"].get("suspend") is False,
                             show=lambda j: j["spec"])
        pod = resumed["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
        assert pod.get("nodeSelector") == own.labels, pod
        finish(kube, ns, running(kube, ns, "batch", 5))
        done = eventually("JobSet batch Completed", lambda: kube.jobset(ns, "batch"),
                          lambda j: has_condition(j, "Completed"), show=conditions)
        assert done["status"].get("restarts", 0) == 0, done["status"]
        assert {r["name"]: r.get("succeeded", 0) for r in
                done["status"]["replicatedJobsStatus"]} == {"leader": 1, "workers": 2}
    finally:
        for name in (low, high):
            kube.delete(f"{KUEUE}/workloadpriorityclasses/{name}")
        remove_queue(e2e, own)


def test_failure_policy_restart_is_not_a_readmission(e2e, queue):
    kube, ns = e2e.kube, queue.ns
    kube.create_jobset(queued(ns, "retrier", failurePolicy={"maxRestarts": 1}))
    pods = running(kube, ns, "retrier", 5)
    path = workload_path(e2e, ns, "retrier")
    admitted = condition(kube.get(path), "Admitted")
    assert admitted and admitted["status"] == "True", admitted

    worker = next(p for p in pods if "workers" in p["metadata"]["name"])
    finish(kube, ns, [worker], "3")
    restarted = eventually("JobSet retrier restarted once", lambda: kube.jobset(ns, "retrier"),
                           lambda j: (j.get("status") or {}).get("restarts") == 1,
                           show=lambda j: (j.get("status") or {}).get("restarts"))
    assert restarted["spec"].get("suspend") is False
    again = running(kube, ns, "retrier", 5)
    assert {p["spec"]["nodeName"] for p in again} <= set(queue.nodes)
    # The Workload kept its admission throughout: no eviction, the same Admitted condition.
    workload = kube.get(path)
    assert condition(workload, "Admitted") == admitted, conditions(workload)
    assert not has_condition(workload, "Evicted"), conditions(workload)
    finish(kube, ns, again)
    eventually("JobSet retrier Completed", lambda: kube.jobset(ns, "retrier"),
               lambda j: has_condition(j, "Completed"), show=conditions)


def test_gang_jobsets_pod_sets_on_kueues_workload_equal_the_deciders(e2e, queue):
    """A spec.scheduling JobSet (a Basic driver, 2 x 4 workers as one gang in one rack): the
    pod sets Kueue writes on its Workload are the decider's PodSets, field for field. The
    product here runs without JobSetWorkloadAwareSchedulingAPI, so the JobSet is created with
    the decider's webhook down and nothing runs it; only the two views are compared."""
    kube, ns = e2e.kube, queue.ns
    cpu = {"name": "main", "image": "registry.invalid/e2e:1", "command": ["true"],
           "resources": {"requests": {"cpu": "1"}}}
    js = queued(ns, "gang", scheduling={"replicatedJobs": [
        {"targetReplicatedJobs": ["driver"], "schedulingPolicy": {"basic": {}}},
        {"targetReplicatedJobs": ["workers"], "schedulingPolicy": {"gang": {}},
         "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/rack"}]}}]})
    js["spec"]["replicatedJobs"] = [
        replicated_job("driver", container=cpu),
        replicated_job("workers", replicas=2, parallelism=4, completions=4, container=cpu)]
    hooks = without_decider_webhooks(e2e)
    try:
        created = kube.create_jobset(js)
    finally:
        restore(e2e, hooks)
    assert "scheduling" in created["spec"], created["spec"]  # Kueue's webhook kept it
    workload = the_workload(e2e, ns, "gang")
    with DeciderClient(e2e.product["decider_address"], timeout=30) as decider:
        answer = decider.pod_sets(build_pod_sets_request(
            kube.jobset(ns, "gang"), versions.release(e2e.cluster.version).scheduling_api_version,
            {"JobSetWorkloadAwareSchedulingAPI": True}))
    ours = [(p.name, p.count, p.min_count if p.HasField("min_count") else None,
             MessageToDict(p.topology_request)) for p in answer.pod_sets]
    kueues = [(p["name"], p["count"], p.get("minCount"), p.get("topologyRequest", {}))
              for p in workload["spec"]["podSets"]]
    assert kueues == ours
    assert [(p.name, p.count) for p in answer.pod_sets] == [("driver", 1), ("workers", 8)]
    # The gang the decider puts over the workers covers exactly Kueue's count: no mismatch.
    workers = answer.pod_sets[1]
    assert workers.gang.min_count == 8 and not workers.warnings, workers
