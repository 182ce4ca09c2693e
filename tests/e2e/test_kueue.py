"""Kueue v0.17 queues, admits and checks the shim's JobSets, on the real control plane.

Kueue is built from its module and installed from its own manifests (tests/e2e/kueue.py); the
decider-backed AdmissionCheck runs as deploy/components/kueue-check runs it
(tests/e2e/kueue_scenarios.py). Every test has a ResourceFlavor, ClusterQueue and
AdmissionCheck of its own, and KWOK nodes of its own that carry the flavor's label and taint.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

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
from tests.e2e.kueue import Kueue
from tests.e2e.kueue_scenarios import (
    KUEUE,
    QUEUE_LABEL,
    SheddingDecider,
    admission_check,
    check_state,
    cluster_queue,
    create_cluster_scoped,
    flavor,
    local_queue,
    reserved_cpu,
    start_check,
    workloads,
)
from tools.controlplane.product import kubectl

pytestmark = [pytest.mark.e2e, pytest.mark.waits]

CHECK_CONTROLLER = "jobset-decider.x-k8s.io/admission-check"
SHEDDING_CONTROLLER = "e2e.jobset-decider.io/shedding-check"
POOL_LABEL = "e2e.jobset-decider.io/pool"


@dataclass
class KueueEnv:
    kueue: Kueue
    shedding: SheddingDecider


@pytest.fixture(scope="module")
def kueue_env(e2e: Any) -> Iterator[KueueEnv]:
    """Kueue and two check controllers (one asking the decider, one a decider that sheds
    while told to), for this module only: Kueue's pod webhook would otherwise stand in front of
    every other test's pods."""
    cluster = e2e.cluster
    kueue = Kueue(cluster.kubeconfig, cluster.dir / "kueue", kubectl=kubectl(),
                  processes=cluster.state)
    try:
        kueue.install()
        start_check(cluster, e2e.product["decider_address"], CHECK_CONTROLLER, "kueue-check")
        with SheddingDecider(e2e.product["decider_address"], pushback_ms=2000) as shedding:
            start_check(cluster, f"127.0.0.1:{shedding.port}", SHEDDING_CONTROLLER,
                        "kueue-check-shedding", ("--decider-timeout=3",))
            yield KueueEnv(kueue, shedding)
    finally:
        for name in ("kueue-check", "kueue-check-shedding"):
            if any(p["name"] == name for p in cluster.state.processes):
                cluster.state.stop(name)
        kueue.uninstall()


@dataclass
class Queue:
    ns: str
    flavor: str
    cluster_queue: str
    check: str
    nodes: list[str]
    labels: dict[str, str]


def make_queue(e2e: Any, ns: str, cpus: int = 8,
               controller: str = CHECK_CONTROLLER) -> Queue:
    """A flavor whose nodes (2 KWOK nodes, labelled and tainted) only this test uses, a
    ClusterQueue of `cpus` CPUs in it asking `controller`'s AdmissionCheck, a LocalQueue."""
    kube = e2e.kube
    suffix = secrets.token_hex(3)
    labels = {POOL_LABEL: f"pool-{suffix}"}
    taint = (POOL_LABEL, f"pool-{suffix}")
    nodes = e2e.cluster.add_nodes(2, prefix=f"kueue-{suffix}", labels=labels)
    for node in nodes:
        kube.patch(f"/api/v1/nodes/{node}", {"spec": {"taints": [
            {"key": taint[0], "value": taint[1], "effect": "NoSchedule"}]}})
    queue = Queue(ns, f"flavor-{suffix}", f"cq-{suffix}", f"check-{suffix}", nodes, labels)
    create_cluster_scoped(kube, flavor(queue.flavor, labels, taint))
    create_cluster_scoped(kube, admission_check(queue.check, controller))
    create_cluster_scoped(kube, cluster_queue(queue.cluster_queue, ns, queue.flavor, cpus,
                                              [queue.check]))
    kube.create(f"{KUEUE}/namespaces/{ns}/localqueues", local_queue(ns, "user-queue",
                                                                     queue.cluster_queue))
    eventually(f"ClusterQueue {queue.cluster_queue} Active", lambda: kube.get(
        f"{KUEUE}/clusterqueues/{queue.cluster_queue}"),
        lambda cq: has_condition(cq, "Active"), show=conditions)
    return queue


@pytest.fixture
def queue(e2e: Any, ns: str, kueue_env: KueueEnv) -> Iterator[Queue]:
    made = make_queue(e2e, ns)
    yield made
    remove_queue(e2e, made)


def remove_queue(e2e: Any, queue: Queue) -> None:
    kube = e2e.kube
    for path in (f"{KUEUE}/clusterqueues/{queue.cluster_queue}",
                 f"{KUEUE}/admissionchecks/{queue.check}",
                 f"{KUEUE}/resourceflavors/{queue.flavor}",
                 *[f"/api/v1/nodes/{n}" for n in queue.nodes]):
        if kube.maybe(path) is not None:
            kube.delete(path)


def queued(ns: str, name: str, **spec: Any) -> dict[str, Any]:
    """A shim-managed JobSet for LocalQueue user-queue: a leader and 2 workers of 2 pods, one
    CPU each (5 CPUs)."""
    cpu = {"name": "main", "image": "registry.invalid/e2e:1", "command": ["true"],
           "resources": {"requests": {"cpu": "1"}}}
    js = jobset(ns, name, [replicated_job("leader", container=cpu),
                           replicated_job("workers", replicas=2, parallelism=2, completions=2,
                                          container=cpu)], **spec)
    js["metadata"]["labels"] = {QUEUE_LABEL: "user-queue"}
    return js


def the_workload(e2e: Any, ns: str, name: str) -> dict[str, Any]:
    found = eventually(f"the Workload of JobSet {name}", lambda: workloads(e2e.kube, ns, name),
                       lambda ws: len(ws) == 1,
                       show=lambda ws: [w["metadata"]["name"] for w in ws])
    return found[0]


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
    queue = make_queue(e2e, ns, controller=SHEDDING_CONTROLLER)
    shedding = kueue_env.shedding
    shedding.shedding.set()
    try:
        kube.create_jobset(queued(ns, "busy"))
        name = the_workload(e2e, ns, "busy")["metadata"]["name"]
        wl_path = f"{KUEUE}/namespaces/{ns}/workloads/{name}"
        # Kueue evicts a Workload with a Retry check and resets the entry to Pending at once,
        # keeping requeueAfterSeconds and counting the retry: those stay.
        retried = eventually("the check retried after the pushback", lambda: kube.get(wl_path),
                             lambda w: (check_state(w, queue.check).get("retryCount") or 0) >= 1,
                             show=lambda w: (w.get("status") or {}).get("admissionChecks"))
        state = check_state(retried, queue.check)
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
        remove_queue(e2e, queue)


DECIDER_HOOKS = ("mutatingwebhookconfigurations/jobset-decider-mutating",
                 "validatingwebhookconfigurations/jobset-decider-validating")
ADMISSION = "/apis/admissionregistration.k8s.io/v1"


def without_decider_webhooks(e2e: Any) -> list[tuple[str, dict[str, Any]]]:
    """The decider's webhook configurations removed (the webhook "down"); what was removed."""
    saved = []
    for hook in DECIDER_HOOKS:
        obj = e2e.kube.get(f"{ADMISSION}/{hook}")
        e2e.kube.delete(f"{ADMISSION}/{hook}")
        saved.append((hook.split("/")[0], obj))
    return saved


def restore(e2e: Any, saved: list[tuple[str, dict[str, Any]]]) -> None:
    for plural, obj in saved:
        meta = obj["metadata"]
        obj["metadata"] = {k: meta[k] for k in ("name", "labels", "annotations") if k in meta}
        e2e.kube.create(f"{ADMISSION}/{plural}", obj)


def test_per_job_admission_in_the_independent_mode(e2e, ns, kueue_env):
    """Seed 000 as far as Kueue v0.17 goes: a JobSet without a queue name, in the Independent
    mode, whose Job templates carry one. Kueue's batch/job integration treats each Job as its
    own workload (its owner has no queue name), suspends it at creation and admits the Jobs one
    by one within the quota; the shim leaves each Job's suspend to Kueue, where upstream's
    controller would resume every Job of the running JobSet at once."""
    kube = e2e.kube
    queue = make_queue(e2e, ns, cpus=2)
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
        assert pod.get("nodeSelector") == queue.labels, pod  # Kueue's flavor, on the Job
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
        remove_queue(e2e, queue)
