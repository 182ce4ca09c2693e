"""The plan guard's identity rules: an object the JobSet controls cannot say it is another's.

Each refused row is a real plan of the decider with one identity changed to another JobSet's
(`victim`) or another Job's; each must be refused with rule `identity`, and the same plan
unchanged passes. Real plans with every identity the decider writes (a coordinator, a custom
subdomain, DNS hostnames off, every gang target and generation, a resume with Kueue's
directives) pass.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from decider.contract import convert
from decider_api.v1 import decider_pb2 as pb
from decider_client.observe import build_decide_request
from shim.config import gang_kinds
from shim.guard import PlanGuard
from tests.shim.test_guard import CONTROLLER, NOW, make_jobset

Obj = dict[str, Any]
V1ALPHA1 = "scheduling.k8s.io/v1alpha1"
V1ALPHA2 = "scheduling.k8s.io/v1alpha2"
V1BETA1 = "scheduling.k8s.io/v1beta1"
VICTIM_UID = "uid-victim"
NAME = "jobset.sigs.k8s.io/jobset-name"
UIDL = "jobset.sigs.k8s.io/jobset-uid"
RJOB = "jobset.sigs.k8s.io/replicatedjob-name"
INDEX = "jobset.sigs.k8s.io/job-index"
KEY = "jobset.sigs.k8s.io/job-key"
COORD = "jobset.sigs.k8s.io/coordinator"
NSJOB = "alpha.jobset.sigs.k8s.io/namespaced-job"
GANG_POLICY = {"jobset-decider.io/gang-policy": "JobSetGangPerReplicatedJob"}
CREATE_JOB = pb.ACTION_TYPE_CREATE_JOB


def guard(version: str = V1ALPHA2, target: str = "kubernetes") -> PlanGuard:
    return PlanGuard({kind: gv for gv, kind in gang_kinds(version, target)})


def decide(js: Obj, owned: list[Obj] = (), version: str = V1ALPHA2,
           target: str = "kubernetes") -> pb.DecideResponse:
    req = build_decide_request(js, list(owned), NOW, CONTROLLER, {}, gang_api_version=version,
                               gang_target=target)
    return convert.decide_response(req)


def gang_jobset(**spec: Any) -> Obj:
    js = make_jobset(**spec)
    js["metadata"]["annotations"] = dict(GANG_POLICY)
    return js


JS = make_jobset(coordinator={"replicatedJob": "workers", "jobIndex": 0, "podIndex": 0})
PLAN = decide(JS)
GANG_JS = gang_jobset()
NO_DNS = make_jobset(network={"enableDNSHostnames": False})


def _index(plan: pb.DecideResponse, t: int, kind: str = "") -> int:
    for i, a in enumerate(plan.actions):
        if a.type == t and (not kind or json.loads(a.object_json)["kind"] == kind):
            return i
    raise AssertionError(f"no action of type {t} {kind}")


@dataclass
class Case:
    """A plan changed from `base`, judged as the JobSet `jobset` decided it, controlling
    `owned`, by a shim configured for `version` and `target`."""

    plan: pb.DecideResponse
    base: pb.DecideResponse
    jobset: Obj = field(default_factory=lambda: JS)
    version: str = V1ALPHA2
    target: str = "kubernetes"
    owned: list[Obj] = field(default_factory=list)

    def check(self, plan: pb.DecideResponse) -> Any:
        return guard(self.version, self.target).check(self.jobset, self.owned, plan)


def changed(plan: pb.DecideResponse, t: int, change: Callable[[Obj], Any],
            kind: str = "") -> pb.DecideResponse:
    """`plan` with the manifest of its first create of type `t` (and kind) changed."""
    out = pb.DecideResponse()
    out.CopyFrom(plan)
    a = out.actions[_index(out, t, kind)]
    obj = json.loads(a.object_json)
    change(obj)
    a.object_json = json.dumps(obj)
    if obj["metadata"].get("name") and a.name:
        a.name = obj["metadata"]["name"]
    return out


def job(change: Callable[[Obj], Any], js: Obj = JS, **config: Any) -> Case:
    """The first Job of the plan the decider makes for `js` (under `config`) changed."""
    base = decide(js, version=config.get("version", V1ALPHA2),
                  target=config.get("target", "kubernetes"))
    return Case(changed(base, CREATE_JOB, change), base, js, **config)


def create(t: int, change: Callable[[Obj], Any], js: Obj = JS, **config: Any) -> Case:
    """The first create of type `t` of the plan the decider makes for `js` changed."""
    base = decide(js, version=config.get("version", V1ALPHA2),
                  target=config.get("target", "kubernetes"))
    return Case(changed(base, t, change), base, js, **config)


def _set(*path: str, value: Any) -> Callable[[Obj], None]:
    def change(obj: Obj) -> None:
        node = obj
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = value
    return change


def job_labels(key: str, value: str) -> Callable[[Obj], None]:
    return _set("metadata", "labels", key, value=value)


def pod_labels(key: str, value: str) -> Callable[[Obj], None]:
    return _set("spec", "template", "metadata", "labels", key, value=value)


def pod_spec(key: str, value: Any) -> Callable[[Obj], None]:
    return _set("spec", "template", "spec", key, value=value)


def renamed(name: str) -> Callable[[Obj], None]:
    """The Job renamed, with every label that follows from the name made consistent."""
    def change(obj: Obj) -> None:
        obj["metadata"]["name"] = name
        key = hashlib.sha1(f"default/{name}".encode()).hexdigest()
        index = name.rsplit("-", 1)[1]
        for m in (obj["metadata"], obj["spec"]["template"]["metadata"]):
            for part in ("labels", "annotations"):
                m[part][KEY] = key
                m[part][INDEX] = index
    return change


RUNNING = []
for _a in PLAN.actions:
    if _a.type == CREATE_JOB:
        _obj = json.loads(_a.object_json)
        _obj["metadata"]["uid"] = f"uid-{_obj['metadata']['name']}"
        _obj["spec"]["suspend"] = True
        RUNNING.append(_obj)


def resume(labels: Obj | None = None, node_selector: Obj | None = None) -> Case:
    return Case(resume_plan(labels, node_selector), resume_plan(), owned=RUNNING)


def resume_plan(labels: Obj | None = None, node_selector: Obj | None = None) -> pb.DecideResponse:
    target = RUNNING[0]["metadata"]
    template: Obj = {}
    if labels is not None:
        template["metadata"] = {"labels": labels}
    if node_selector is not None:
        template["spec"] = {"nodeSelector": node_selector}
    return pb.DecideResponse(actions=[pb.Action(
        type=pb.ACTION_TYPE_RESUME_JOB, name=target["name"], uid=target["uid"],
        api_version="batch/v1", kind="Job",
        patch_json=json.dumps({"spec": {"suspend": False, "template": template}}))])


SVC = pb.ACTION_TYPE_CREATE_SERVICE
PVC = pb.ACTION_TYPE_CREATE_PVC
WL = pb.ACTION_TYPE_CREATE_WORKLOAD
PG = pb.ACTION_TYPE_CREATE_POD_GROUP
VICTIM_KEY = hashlib.sha1(b"default/victim-workers-0").hexdigest()
GANG = {"js": GANG_JS}
G1 = {**GANG, "version": V1ALPHA1}
G2 = {**GANG, "version": V1ALPHA2}
GB = {**GANG, "version": V1BETA1}
GP = {**GANG, "target": "scheduler-plugins"}
GV = {**GANG, "target": "volcano"}


def _pod_annotation(key: str, value: str) -> Callable[[Obj], None]:
    return _set("spec", "template", "metadata", "annotations", key, value=value)


REFUSED = [
    # A Job's labels and annotations, and its pods'.
    pytest.param(job(job_labels(NAME, "victim")), id="job-label-jobset-name"),
    pytest.param(job(job_labels(UIDL, VICTIM_UID)), id="job-label-jobset-uid"),
    pytest.param(job(_set("metadata", "annotations", NAME, value="victim")),
                 id="job-annotation-jobset-name"),
    pytest.param(job(pod_labels(NAME, "victim")), id="pod-label-jobset-name"),
    pytest.param(job(pod_labels(UIDL, VICTIM_UID)), id="pod-label-jobset-uid"),
    pytest.param(job(_pod_annotation(NAME, "victim")), id="pod-annotation-jobset-name"),
    pytest.param(job(pod_labels(RJOB, "leader")), id="pod-label-replicatedjob-name"),
    pytest.param(job(pod_labels(INDEX, "1")), id="pod-label-job-index"),
    pytest.param(job(pod_labels(KEY, VICTIM_KEY)), id="pod-label-job-key-of-another-job"),
    pytest.param(job(pod_labels(COORD, "victim-workers-0-0.victim")),
                 id="pod-label-coordinator-of-another-jobset"),
    pytest.param(job(pod_labels(COORD, "victim-workers-0-0.victim"), make_jobset()),
                 id="pod-label-coordinator-without-one"),
    # Its name (and so its pods' hostnames), and the index in it.
    pytest.param(job(renamed("victim-workers-0")), id="job-name-of-another-jobset"),
    pytest.param(job(renamed("js-workers-7")), id="job-name-index-past-replicas"),
    pytest.param(job(renamed("js-workers-01")), id="job-name-index-not-canonical"),
    # Its pods' DNS names.
    pytest.param(job(pod_spec("hostname", "victim-workers-0-0")), id="pod-hostname"),
    pytest.param(job(pod_spec("subdomain", "victim")), id="pod-subdomain"),
    pytest.param(job(pod_spec("subdomain", "victim"), NO_DNS), id="pod-subdomain-dns-off"),
    # The pods it counts as its own, and the nodes it claims.
    pytest.param(job(_set("spec", "manualSelector", value=True)), id="job-manual-selector"),
    pytest.param(job(_set("spec", "selector", value={"matchLabels": {NAME: "victim"}})),
                 id="job-selector"),
    pytest.param(job(pod_labels("batch.kubernetes.io/job-name", "victim-workers-0")),
                 id="pod-label-job-name-of-another-job"),
    pytest.param(job(pod_labels("batch.kubernetes.io/controller-uid", "uid-victim-job")),
                 id="pod-label-controller-uid"),
    pytest.param(job(pod_spec("nodeSelector", {NSJOB: "default_victim-workers-0"})),
                 id="pod-node-selector-namespaced-job-of-another-job"),
    # The gang its pods join.
    pytest.param(job(pod_spec("schedulingGroup", {"podGroupName": "victim-workers"}), **G2),
                 id="pod-scheduling-group-of-another-jobset"),
    pytest.param(job(pod_spec("schedulingGroup", {"podGroupName": "victim-workers"}), **GB),
                 id="pod-scheduling-group-of-another-jobset-v1beta1"),
    pytest.param(job(pod_spec("schedulingGroup", {"podGroupName": "victim-workers"})),
                 id="pod-scheduling-group-without-a-gang"),
    pytest.param(job(pod_spec("workloadRef", {"name": "victim", "podGroup": "workers"}), **G1),
                 id="pod-workload-ref-of-another-jobset-v1alpha1"),
    pytest.param(job(pod_labels("scheduling.x-k8s.io/pod-group", "victim-workers"), **GP),
                 id="pod-label-scheduler-plugins-pod-group"),
    pytest.param(job(_pod_annotation("scheduling.k8s.io/group-name", "victim-workers"), **GV),
                 id="pod-annotation-volcano-group-name"),
    pytest.param(job(_set("metadata", "annotations", "scheduling.k8s.io/group-template-name",
                          value="victim-template"), **G2),
                 id="job-annotation-group-template-name"),
    # The headless Service: its name is the JobSet's DNS domain, its selector its pods.
    pytest.param(create(SVC, _set("metadata", "name", value="victim")), id="service-name"),
    pytest.param(create(SVC, _set("spec", "selector", value={NAME: "victim"})),
                 id="service-selector"),
    pytest.param(create(SVC, _set("spec", "selector", value={})),
                 id="service-selector-everything"),
    pytest.param(create(SVC, _set("metadata", "labels", NAME, value="victim")),
                 id="service-label-jobset-name"),
    pytest.param(create(PVC, _set("metadata", "labels", NAME, value="victim")),
                 id="pvc-label-jobset-name"),
    # Gang objects.
    pytest.param(create(WL, _set("metadata", "labels", NAME, value="victim"), **G1),
                 id="workload-label-jobset-name"),
    pytest.param(create(WL, _set("metadata", "labels", UIDL, value=VICTIM_UID), **G1),
                 id="workload-label-jobset-uid"),
    pytest.param(create(WL, _set("spec", "controllerRef", "name", value="victim"), **G2),
                 id="workload-controller-ref"),
    pytest.param(create(WL, _set("metadata", "name", value="victim-dca5d36187"), **G2),
                 id="workload-name-of-another-jobset"),
    pytest.param(create(PG, _set("metadata", "name", value="victim-workers"), **G2),
                 id="podgroup-name-of-another-jobset"),
    pytest.param(create(PG, _set("metadata", "labels", NAME, value="victim"), **G2),
                 id="podgroup-label-jobset-name"),
    pytest.param(create(PG, _set("spec", "podGroupTemplateRef", "workload", "workloadName",
                                 value="victim-1234"), **G2),
                 id="podgroup-template-ref-of-another-workload"),
    pytest.param(create(PG, _set("spec", "workloadRef", "workloadName", value="victim-1234"),
                        **GB),
                 id="podgroup-workload-ref-of-another-workload-v1beta1"),
    pytest.param(create(PG, _set("spec", "workloadRef", "templateName", value="other"), **GB),
                 id="podgroup-workload-ref-of-another-template-v1beta1"),
    pytest.param(create(PG, lambda o: o["metadata"]["ownerReferences"].append(
        {"apiVersion": V1ALPHA2, "kind": "Workload", "name": "victim-1234",
         "uid": "uid-victim-wl"}), **G2),
                 id="podgroup-owner-workload-of-another-jobset"),
    # A resume patch.
    pytest.param(resume({NAME: "victim"}), id="resume-label-jobset-name"),
    pytest.param(resume({UIDL: VICTIM_UID}), id="resume-label-jobset-uid"),
    pytest.param(resume({"batch.kubernetes.io/job-name": "victim-workers-0"}),
                 id="resume-label-job-name"),
    pytest.param(resume(node_selector={NSJOB: "default_victim-workers-0"}),
                 id="resume-node-selector-namespaced-job"),
]


@pytest.mark.parametrize("case", REFUSED)
def test_a_plan_claiming_another_identity_is_refused(case: Case) -> None:
    assert case.check(case.base) is None, "the plan unchanged passes"
    refusal = case.check(case.plan)
    assert refusal is not None
    assert refusal.rule == "identity", str(refusal)


def test_the_refusal_names_the_claim():
    case = job(pod_labels(NAME, "victim"))
    assert str(case.check(case.plan)) == (
        "actions[3] (CreateJob default/js-workers-0) breaks rule identity: the pod's labels "
        "say jobset.sigs.k8s.io/jobset-name='victim'; Job 'js-workers-0' of JobSet 'js' has "
        "'js'")


# ---- what the decider writes passes ---------------------------------------------------------


@pytest.mark.parametrize(("version", "target"), [
    (V1ALPHA1, "kubernetes"), (V1ALPHA2, "kubernetes"), (V1BETA1, "kubernetes"),
    (V1ALPHA2, "scheduler-plugins"), (V1ALPHA2, "volcano")])
def test_gang_plans_of_every_target_pass(version: str, target: str) -> None:
    plan = decide(GANG_JS, version=version, target=target)
    kinds = {json.loads(a.object_json)["kind"] for a in plan.actions if a.object_json}
    assert "PodGroup" in kinds or "Workload" in kinds
    assert guard(version, target).check(GANG_JS, [], plan) is None
    # Once the gang objects exist, a pass that creates the Jobs (restarted) joins them.
    owned = []
    for a in plan.actions:
        obj = json.loads(a.object_json) if a.object_json else None
        if obj and obj["kind"] in ("Workload", "PodGroup"):
            obj["metadata"]["uid"] = f"uid-{obj['metadata']['name']}"
            owned.append(obj)
    again = decide(GANG_JS, owned, version=version, target=target)
    assert any(a.type == CREATE_JOB for a in again.actions)
    assert guard(version, target).check(GANG_JS, owned, again) is None


def test_a_coordinator_a_subdomain_dns_off_and_template_identities_pass():
    js = make_jobset(coordinator={"replicatedJob": "workers", "jobIndex": 1, "podIndex": 0},
                     network={"enableDNSHostnames": True, "subdomain": "train-net"})
    plan = decide(js)
    assert guard().check(js, [], plan) is None
    first = json.loads(next(a.object_json for a in plan.actions if a.type == CREATE_JOB))
    assert first["spec"]["template"]["spec"]["subdomain"] == "train-net"
    assert first["metadata"]["labels"][COORD] == "js-workers-1-0.train-net"
    # DNS hostnames off: the template's own subdomain and hostname stay; its coordinator label
    # (the JobSet has none) too.
    js = make_jobset(network={"enableDNSHostnames": False})
    pod = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    pod["spec"].update(subdomain="mine", hostname="h")
    pod["metadata"] = {"labels": {COORD: "somewhere:1234"}}
    plan = decide(js)
    assert guard().check(js, [], plan) is None


def test_a_resume_with_the_templates_directives_passes():
    js = copy.deepcopy(JS)
    pod = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    pod["metadata"] = {"labels": {"kueue.x-k8s.io/flavor": "gpu"}}
    pod["spec"]["nodeSelector"] = {"pool": "gpu"}
    paused = copy.deepcopy(RUNNING)
    for obj in paused:
        obj["status"] = {}
    plan = decide(js, paused)
    assert [a.type for a in plan.actions].count(pb.ACTION_TYPE_RESUME_JOB) == 2
    assert guard().check(js, paused, plan) is None
