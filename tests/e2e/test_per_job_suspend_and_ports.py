"""A child Job suspended and resumed alone (reconciliation mode Independent, docs/decisions.md
"Per-Job suspend"), and the headless Service declaring the containers' ports (#1300), kept in
sync when someone changes them, on a real control plane."""

from __future__ import annotations

import pytest

from tests.e2e.framework import (
    conditions,
    eventually,
    has_condition,
    jobset,
    phases,
    replicated_job,
)
from tests.e2e.lifecycle_support import alive, end, pods_of, rjob_status, running

pytestmark = [pytest.mark.e2e, pytest.mark.waits]

INDEPENDENT = {"jobset.sigs.k8s.io/reconciliation-mode": "Independent"}


def test_independent_mode_leaves_each_jobs_suspension_to_someone_else(e2e, ns):
    kube = e2e.kube
    jobs_path = f"/apis/batch/v1/namespaces/{ns}/jobs"
    waiting = replicated_job("waiting")
    # Row 1: a child Job is created with its template's suspend, whatever the JobSet says.
    waiting["template"]["spec"]["suspend"] = True
    body = jobset(ns, "solo", [replicated_job("w", replicas=2), waiting])
    body["metadata"]["annotations"] = INDEPENDENT
    kube.create_jobset(body)

    def suspended(js):
        return {j["metadata"]["name"]: j["spec"].get("suspend") for j in js}

    jobs = eventually("three Jobs", lambda: kube.jobs(ns, "solo"), lambda js: len(js) == 3,
                      show=suspended)
    assert suspended(jobs) == {"solo-w-0": False, "solo-w-1": False, "solo-waiting-0": True}
    pods = running(kube, ns, "solo", 2, rjob="w")
    other = next(p for p in pods if p["metadata"]["labels"]["batch.kubernetes.io/job-name"]
                 == "solo-w-1")
    js = eventually("the waiting Job counted suspended", lambda: kube.jobset(ns, "solo"),
                    lambda j: rjob_status(j, "waiting").get("suspended") == 1,
                    show=lambda j: (j or {}).get("status"))
    assert not has_condition(js, "Suspended"), conditions(js)
    assert pods_of(kube, ns, "solo", rjob="waiting") == []

    # Row 2: someone else (Kueue, here the test) suspends one Job: the Job controller takes its
    # pod, the decider counts it suspended and leaves it so; the JobSet is not Suspended.
    kube.patch(f"{jobs_path}/solo-w-0", {"spec": {"suspend": True}})
    eventually("solo-w-0's pod gone", lambda: alive(pods_of(kube, ns, "solo", job="solo-w-0")),
               lambda ps: ps == [], show=phases)
    js = eventually("w counted one suspended", lambda: kube.jobset(ns, "solo"),
                    lambda j: rjob_status(j, "w").get("suspended") == 1
                    and rjob_status(j, "w").get("active") == 1,
                    show=lambda j: (j or {}).get("status"))
    assert not has_condition(js, "Suspended"), conditions(js)
    assert kube.get(f"{jobs_path}/solo-w-0")["spec"]["suspend"] is True
    assert kube.get(f"{jobs_path}/solo-w-1")["spec"]["suspend"] is False

    # Row 3: resumed by someone else, one Job at a time; nothing else moves.
    kube.patch(f"{jobs_path}/solo-waiting-0", {"spec": {"suspend": False}})
    waiting_pods = running(kube, ns, "solo", 1, rjob="waiting")
    kube.patch(f"{jobs_path}/solo-w-0", {"spec": {"suspend": False}})
    w0 = running(kube, ns, "solo", 1, job="solo-w-0")
    eventually("nothing counted suspended", lambda: kube.jobset(ns, "solo"),
               lambda j: rjob_status(j, "w").get("suspended") == 0
               and rjob_status(j, "waiting").get("suspended") == 0
               and rjob_status(j, "w").get("ready") == 2,
               show=lambda j: (j or {}).get("status"))
    w1 = running(kube, ns, "solo", 1, job="solo-w-1")
    assert w1[0]["metadata"]["uid"] == other["metadata"]["uid"], "solo-w-1's pod was replaced"
    assert {j["metadata"]["name"]: j["spec"]["suspend"] for j in kube.jobs(ns, "solo")} == {
        "solo-w-0": False, "solo-w-1": False, "solo-waiting-0": False}

    end(kube, ns, w0 + w1 + waiting_pods)
    done = eventually("JobSet solo Completed", lambda: kube.jobset(ns, "solo"),
                      lambda j: has_condition(j, "Completed"), show=conditions)
    assert done["status"].get("restarts", 0) == 0


def container(name: str, ports: list[dict[str, object]]) -> dict[str, object]:
    return {"name": name, "image": "registry.invalid/e2e:1", "command": ["true"],
            "ports": ports}


def test_headless_service_declares_the_container_ports_and_keeps_them(e2e, ns):
    kube = e2e.kube
    path = f"/api/v1/namespaces/{ns}/services/ported"
    kube.create_jobset(jobset(ns, "ported", [
        replicated_job("a", container=container("a", [
            {"containerPort": 8080, "name": "http"},
            {"containerPort": 9090, "protocol": "UDP"}])),
        replicated_job("b", container=container("b", [
            {"containerPort": 8080},           # the same port and protocol: declared once
            {"containerPort": 8080, "protocol": "UDP"},
            {"containerPort": 7000, "protocol": "TCP"}]))]))
    want = [
        {"name": "tcp-8080", "port": 8080, "protocol": "TCP", "targetPort": 8080},
        {"name": "udp-9090", "port": 9090, "protocol": "UDP", "targetPort": 9090},
        {"name": "udp-8080", "port": 8080, "protocol": "UDP", "targetPort": 8080},
        {"name": "tcp-7000", "port": 7000, "protocol": "TCP", "targetPort": 7000}]
    service = eventually("the headless Service", lambda: kube.maybe(path), bool)
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["ports"] == want

    # The API server's defaults leave nothing to correct: once the pods run (many passes), the
    # Service was not written again.
    pods = running(kube, ns, "ported", 2)
    eventually("both replicated Jobs seen ready", lambda: kube.jobset(ns, "ported"),
               lambda j: rjob_status(j, "a").get("ready") == 1
               and rjob_status(j, "b").get("ready") == 1,
               show=lambda j: (j or {}).get("status"))
    assert kube.get(path)["metadata"]["resourceVersion"] == \
        service["metadata"]["resourceVersion"]

    # Someone changes the ports: the next pass puts the declared ones back.
    kube.patch(path, {"spec": {"ports": [{"name": "stale", "port": 1234, "protocol": "TCP"}]}})
    kube.patch(f"/apis/jobset.x-k8s.io/v1alpha2/namespaces/{ns}/jobsets/ported",
               {"metadata": {"annotations": {"e2e.jobset-decider.io/poke": "1"}}})
    synced = eventually("the Service's ports restored", lambda: kube.get(path),
                        lambda s: s["spec"].get("ports") == want,
                        show=lambda s: s["spec"].get("ports"))
    assert synced["metadata"]["uid"] == service["metadata"]["uid"], "replaced, not patched"

    end(kube, ns, pods)
    eventually("JobSet ported Completed", lambda: kube.jobset(ns, "ported"),
               lambda j: has_condition(j, "Completed"), show=conditions)
