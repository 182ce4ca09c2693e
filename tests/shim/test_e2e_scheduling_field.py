"""A JobSet that asks for gang scheduling with spec.scheduling runs under the shim."""

from __future__ import annotations

from tests.shim.helpers import jobset, rjob, wait_for


def test_a_jobset_with_spec_scheduling_gets_its_gang_and_jobs(cluster, shims):
    """The shim's admission refused it as an unknown field: no Workload, PodGroup or Job."""
    shims.start()
    body = jobset("sg", rjob("workers", 2, parallelism=2))
    body["spec"]["scheduling"] = {}
    cluster.create_jobset(body)
    wait_for(lambda: cluster.job_names("sg-") == ["sg-workers-0", "sg-workers-1"], what="jobs")
    made = {r.path.rsplit("/", 1)[-1] for r in cluster.creates("/(workloads|podgroups)$")}
    assert made == {"workloads", "podgroups"}, made
    assert not [e for e in cluster.event_objects("sg") if e["reason"] == "InvalidJobSet"]
