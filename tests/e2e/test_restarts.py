"""Faults a real control plane has: the API server restarted under running JobSets, the shim
killed and started again. Nothing is lost: the shim's watches come back and what happened
meanwhile is acted on."""

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


def finish(kube, ns, name, pods):
    for pod in pods:
        kube.patch(f"/api/v1/namespaces/{ns}/pods/{pod['metadata']['name']}",
                   {"metadata": {"annotations": {EXIT_CODE: "0"}}})
    return eventually(f"JobSet {name} Completed", lambda: kube.jobset(ns, name),
                      lambda j: has_condition(j, "Completed"), show=conditions)


def running(kube, ns, name, count):
    return eventually(f"{count} pods of {name} Running", lambda: kube.pods(ns, name),
                      lambda ps: len(ps) == count
                      and set(phases(ps).values()) == {"Running"}, show=phases)


def test_jobsets_carry_on_across_an_api_server_restart(e2e, ns):
    kube = e2e.kube
    kube.create_jobset(jobset(ns, "before", [replicated_job("w", replicas=2)]))
    pods = running(kube, ns, "before", 2)

    e2e.cluster.restart("kube-apiserver")

    # The shim's watches were cut: a JobSet made now is seen only once they are back.
    kube.create_jobset(jobset(ns, "after", [replicated_job("w")]))
    after = running(kube, ns, "after", 1)
    # A pod ending after the restart reaches the JobSet through the Job controller and shim.
    finish(kube, ns, "before", pods)
    finish(kube, ns, "after", after)


def test_a_jobset_made_while_the_shim_is_down_is_acted_on_when_it_is_back(e2e, ns):
    kube = e2e.kube
    e2e.cluster.state.kill("shim")
    try:
        kube.create_jobset(jobset(ns, "meanwhile", [replicated_job("w", replicas=2)]))
        assert kube.jobs(ns, "meanwhile") == []
    finally:
        # Same identity as before (POD_NAME): it takes its own Lease back at once.
        e2e.cluster.restart("shim")
    pods = running(kube, ns, "meanwhile", 2)
    done = finish(kube, ns, "meanwhile", pods)
    assert sorted(j["metadata"]["name"] for j in kube.jobs(ns, "meanwhile")) == [
        "meanwhile-w-0", "meanwhile-w-1"]
    assert done["status"].get("restarts", 0) == 0
