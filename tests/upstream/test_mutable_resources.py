"""Container resources mutable while suspended (KEP-1150, gate
MutablePodResourcesForSuspendedJobSets), the controller's half, ported from #1273 @7659f19a:
TestMergeContainerResources, the resume of resumeJob, and the integration entry "jobset is created
and its jobs go through a series of updates" with containerResources. The webhook's half is in
test_validate_lifecycle.py. Ids name the upstream case."""

from __future__ import annotations

import copy
import dataclasses
import json
from typing import Any

import pytest

from decider.contract import convert
from decider.core import constants as c
from decider.core.errors import InvalidInput
from decider.core.model import PodTemplateSummary
from decider.core.pod_resources import merged
from decider_client import observe
from support.builders import NOW, job, jobset, rjob, run
from upstream.fixtures import two_rjobs
from upstream.sim import World

GATE = {c.GATE_MUTABLE_POD_RESOURCES: True}
CPU1 = {"requests": {"cpu": "1"}}
CPU2 = {"requests": {"cpu": "2"}}
CLAIMS = [{"name": "original-claim"}]


@pytest.mark.parametrize(("have", "template", "want"), [
    pytest.param(None, [{"name": "c", "resources": CPU2}], None,
                 id="no job containers is a no-op"),
    pytest.param([{"name": "c", "image": "image:v1", "resources": CPU1}],
                 [{"name": "c", "resources": CPU2}],
                 [{"name": "c", "image": "image:v1", "resources": CPU2}],
                 id="resources updated for container matched by name"),
    pytest.param([{"name": "c", "resources": {**CPU1, "claims": CLAIMS}}],
                 [{"name": "c", "resources": CPU2}],
                 [{"name": "c", "resources": {**CPU2, "claims": CLAIMS}}],
                 id="resources.claims are preserved from the job container, not overwritten by "
                    "the template"),
    pytest.param([{"name": "c", "resources": CPU1}], [{"name": "other", "resources": CPU2}], None,
                 id="container with no match in template is left unchanged"),
    pytest.param([{"name": "init", "resources": CPU1}, {"name": "c", "resources": CPU1}],
                 [{"name": "c", "resources": CPU2}],
                 [{"name": "init", "resources": CPU1}, {"name": "c", "resources": CPU2}],
                 id="only containers matched by name are updated, others are left as-is"),
    # Requests and limits are replaced whole: a key the template dropped goes, and a template
    # without them leaves none.
    pytest.param([{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"},
                                              "limits": {"cpu": "1"}}}],
                 [{"name": "c", "resources": CPU2}],
                 [{"name": "c", "resources": CPU2}], id="requests and limits replaced whole"),
    pytest.param([{"name": "c", "resources": CPU1}], [{"name": "c"}],
                 [{"name": "c", "resources": {}}], id="a template without resources clears them"),
])
def test_merge_container_resources(have: list[Any] | None, template: list[Any],
                                   want: list[Any] | None) -> None:
    assert merged(copy.deepcopy(have), template) == want


def _pod(resources: dict[str, Any]) -> dict[str, Any]:
    return {"spec": {"restartPolicy": "OnFailure",
                     "containers": [{"name": "test-container", "image": "busybox",
                                     "resources": resources}]}}


def _suspended_job(resources: dict[str, Any]) -> Any:
    j = job("rjob", 0, suspend=True)
    containers = _pod(resources)["spec"]["containers"]
    return dataclasses.replace(j, pod_template=PodTemplateSummary(containers=containers))


@pytest.mark.parametrize(("gates", "containers", "event"), [
    pytest.param(GATE, [{"name": "test-container", "image": "busybox", "resources": CPU2}], True,
                 id="gate on: the resume writes the template's resources into the Job"),
    pytest.param({}, None, False, id="gate off: the resume leaves them alone"),
])
def test_resume_propagates_resources(gates: dict[str, bool], containers: list[Any] | None,
                                     event: bool) -> None:
    js = jobset(rjob("rjob", 1, pod=_pod(CPU2)))
    plan = run(js, [_suspended_job(CPU1)], gates=gates)
    (resume,) = [a for a in plan.actions if a.type == "ResumeJob"]
    got = ((resume.patch["spec"].get("template") or {}).get("spec") or {}).get("containers")
    assert got == containers
    assert resume.patch["spec"]["suspend"] is False
    resized = [e for e in plan.explanation if "take the container resources" in e]
    assert resized == (["1 of them take the container resources replicated job rjob now asks "
                        "(changed while suspended)"] if containers else [])
    if event:
        assert resume.on_failure is not None
        assert (resume.on_failure.type, resume.on_failure.reason) == ("Warning",
                                                                     "FailedResourcePropagation")
        assert resume.on_failure.message == (
            "Failed to propagate mutated resources to child Job js-rjob-0: {error}. Ensure "
            "MutablePodResourcesForSuspendedJobs is enabled on the API server.")
    else:
        assert resume.on_failure is None


def test_unchanged_resources_send_no_containers() -> None:
    plan = run(jobset(rjob("rjob", 1, pod=_pod(CPU1))), [_suspended_job(CPU1)], gates=GATE)
    (resume,) = [a for a in plan.actions if a.type == "ResumeJob"]
    assert "containers" not in (resume.patch["spec"].get("template") or {}).get("spec", {})
    # The event is still the one to record should the resume be refused (upstream records it
    # whenever the gate is on and the Job's update fails).
    assert resume.on_failure is not None


@pytest.mark.parametrize(("suspended_jobset", "gates", "sent"), [
    pytest.param(False, GATE, True, id="a JobSet that may resume, under the gate: sent"),
    pytest.param(True, GATE, False, id="a suspended (queued) JobSet resumes nothing: not sent"),
    pytest.param(False, {}, False, id="gate off: not sent"),
])
def test_only_suspended_jobs_carry_their_containers_to_the_decider(
        suspended_jobset: bool, gates: dict[str, bool], sent: bool) -> None:
    js = two_rjobs(suspend=suspended_jobset)
    running = {"apiVersion": "batch/v1", "kind": "Job",
               "metadata": {"name": "test-js-replicated-job-a-0", "namespace": "jobset-ns-1",
                            "labels": {}},
               "spec": {"suspend": False, "template": _pod(CPU1)}}
    suspended = copy.deepcopy(running)
    suspended["metadata"]["name"] = "test-js-replicated-job-b-0"
    suspended["spec"]["suspend"] = True
    req = observe.build_decide_request(js, [running, suspended], NOW, feature_gates=gates)
    by_name = {j.name: j.pod_template for j in req.jobs}
    assert by_name["test-js-replicated-job-a-0"].containers_json == ""
    want = _pod(CPU1)["spec"]["containers"] if sent else None
    got = by_name["test-js-replicated-job-b-0"].containers_json
    assert (json.loads(got) if got else None) == want
    observed = convert.observed_from_proto(req)
    assert [j.pod_template.containers for j in observed.jobs if j.suspend] == [want]
    # Sent whole, the server summarizes them by the same rule: the same request.
    raw = observe.build_raw_decide_request(js, [running, suspended], NOW, feature_gates=gates)
    assert convert.decide_response(raw).SerializeToString(deterministic=True) == \
        convert.decide_response(req).SerializeToString(deterministic=True)


def test_containers_json_that_is_not_a_list_is_refused_naming_the_job() -> None:
    req = observe.build_decide_request(jobset(rjob("rjob", 1)), [], NOW)
    req.jobs.add(name="js-rjob-0").pod_template.containers_json = "{}"
    with pytest.raises(InvalidInput) as err:
        convert.observed_from_proto(req).jobs[0].pod_template  # noqa: B018
    assert err.value.errors[0].field == "jobs[name=js-rjob-0].pod_template.containers_json"


def test_jobset_jobs_go_through_a_resource_update_while_suspended() -> None:
    # test/integration/controller: suspend, change the pod templates (Kueue's directives and,
    # under the gate, container resources), resume: every Job runs with the new resources.
    w = World(jobset=two_rjobs(suspend=True), gates=GATE)
    w.settle()
    for r in w.jobset["spec"]["replicatedJobs"]:
        pod = r["template"]["spec"]["template"]["spec"]
        pod["containers"][0]["resources"] = {"requests": {"cpu": "2"}}
        pod["nodeSelector"] = {"zone": "a"}
    w.update_spec(suspend=False)
    w.settle()
    for j in w.jobs.values():
        assert j["spec"]["suspend"] is False
        assert j["spec"]["template"]["spec"]["containers"][0]["resources"] == \
            {"requests": {"cpu": "2"}}
        assert j["spec"]["template"]["spec"]["nodeSelector"] == {"zone": "a"}
