"""A shim-managed JobSet's life on a real control plane: created, its headless Service and
Jobs, pods scheduled onto KWOK nodes and Running, the pods succeed, the JobSet Completed."""

from __future__ import annotations

import pytest

from tests.e2e.framework import (
    EXIT_CODE,
    conditions,
    eventually,
    has_condition,
    jobset,
    phases,
    replicated_job,
)

pytestmark = [pytest.mark.e2e, pytest.mark.waits]


def test_control_plane_is_the_pinned_release_with_kwok_nodes(e2e):
    version = e2e.kube.get("/version")
    assert version["gitVersion"] == e2e.cluster.version
    nodes = e2e.kube.items("/api/v1/nodes")
    assert nodes and all(n["metadata"]["annotations"].get("kwok.x-k8s.io/node") == "fake"
                         for n in nodes)
    served = {g["name"]: [v["version"] for v in g["versions"]]
              for g in e2e.kube.get("/apis")["groups"]}
    for api in e2e.cluster.state.data["runtime_config"]:
        group, version = api.split("/")
        assert version in served.get(group, []), (api, served.get(group))


def test_jobset_runs_to_completed(e2e, ns):
    kube = e2e.kube
    created = kube.create_jobset(jobset(ns, "life", [
        replicated_job("leader"),
        replicated_job("workers", replicas=2, parallelism=2, completions=2)]))
    uid = created["metadata"]["uid"]

    service = eventually("the headless Service life", lambda: kube.maybe(
        f"/api/v1/namespaces/{ns}/services/life"), bool)
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["selector"] == {"jobset.sigs.k8s.io/jobset-name": "life"}
    assert [r["uid"] for r in service["metadata"]["ownerReferences"] if r.get("controller")] \
        == [uid]

    jobs = eventually("three Jobs", lambda: kube.jobs(ns, "life"), lambda js: len(js) == 3,
                      show=lambda js: [j["metadata"]["name"] for j in js])
    assert sorted(j["metadata"]["name"] for j in jobs) == [
        "life-leader-0", "life-workers-0", "life-workers-1"]
    for job in jobs:
        owners = [r for r in job["metadata"]["ownerReferences"] if r.get("controller")]
        assert [(o["kind"], o["uid"]) for o in owners] == [("JobSet", uid)]

    # 1 leader pod + 2 Jobs x 2 pods, each scheduled by kube-scheduler onto a KWOK node.
    pods = eventually("5 pods Running", lambda: kube.pods(ns, "life"),
                      lambda ps: len(ps) == 5 and set(phases(ps).values()) == {"Running"},
                      show=phases)
    node_names = {n["metadata"]["name"] for n in kube.items("/api/v1/nodes")}
    assert {p["spec"]["nodeName"] for p in pods} <= node_names
    js = kube.jobset(ns, "life")
    assert not has_condition(js, "Completed"), conditions(js)

    # The pods end on the test's terms: KWOK's stage makes an annotated pod succeed.
    for pod in pods:
        kube.patch(f"/api/v1/namespaces/{ns}/pods/{pod['metadata']['name']}",
                   {"metadata": {"annotations": {EXIT_CODE: "0"}}})
    eventually("every Job Complete", lambda: kube.jobs(ns, "life"),
               lambda js: all(has_condition(j, "Complete") for j in js),
               show=lambda js: {j["metadata"]["name"]: conditions(j) for j in js})
    done = eventually("JobSet life Completed", lambda: kube.jobset(ns, "life"),
                      lambda j: has_condition(j, "Completed"), show=conditions)
    assert done["status"].get("terminalState") == "Completed"
    assert not has_condition(done, "Failed")
