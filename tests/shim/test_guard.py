"""The plan guard, alone: every rule refuses what breaks it, and real plans pass.

Refusals are table tests (one id per rule and attack); acceptance is checked on plans the real
decider makes for the JobSet's life (create, suspend, resume, restart, elastic scaling, TTL,
gang scheduling) and, as a property, on every plan it makes for random JobSets.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from properties.strategies import examples, observeds, to_request

from decider.contract import convert
from decider.core.errors import InvalidInput
from decider.core.model import Observed
from decider_api.v1 import decider_pb2 as pb
from decider_client.observe import build_decide_request
from decider_client.render import status_to_dict
from shim.config import gang_kinds
from shim.guard import PlanGuard
from support.builders import UID as PROPERTY_UID

Obj = dict[str, Any]
NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
CONTROLLER = "jobset-decider.io/shim"
SCHED = "scheduling.k8s.io/v1alpha2"
UID = "uid-js"
GUARD = PlanGuard({kind: gv for gv, kind in gang_kinds(SCHED)})
OWNER = {
    "apiVersion": "jobset.x-k8s.io/v1alpha2",
    "kind": "JobSet",
    "name": "js",
    "uid": UID,
    "controller": True,
    "blockOwnerDeletion": True,
}


def make_jobset(**spec: Any) -> Obj:
    pod = {
        "restartPolicy": "OnFailure",
        "serviceAccountName": "trainer",
        "containers": [
            {
                "name": "main",
                "image": "busybox",
                "volumeMounts": [{"name": "data", "mountPath": "/d"}],
            }
        ],
        "volumes": [{"name": "cfg", "configMap": {"name": "cfg"}}],
    }
    body: Obj = {
        "managedBy": CONTROLLER,
        "network": {"enableDNSHostnames": True},
        "volumeClaimPolicies": [
            {
                "templates": [{"metadata": {"name": "data"}, "spec": {"accessModes": ["RWO"]}}],
                "retentionPolicy": {"whenDeleted": "Delete"},
            },
            {
                "templates": [{"metadata": {"name": "keep"}, "spec": {"accessModes": ["RWO"]}}],
                "retentionPolicy": {"whenDeleted": "Retain"},
            },
        ],
        "replicatedJobs": [
            {
                "name": "workers",
                "replicas": 2,
                "template": {
                    "spec": {
                        "parallelism": 1,
                        "completions": 1,
                        "completionMode": "Indexed",
                        "template": {"spec": pod},
                    }
                },
            }
        ],
    }
    body.update(spec)
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "js", "namespace": "default", "uid": UID, "resourceVersion": "5"},
        "spec": body,
    }


JS = make_jobset()


def decide(js: Obj, owned: list[Obj] = (), gates: dict[str, bool] | None = None) -> Any:
    req = build_decide_request(
        js, owned, NOW, CONTROLLER, gates or {}, gang_api_version=SCHED, gang_target="kubernetes"
    )
    return convert.decide_response(req)


def created(plan: pb.DecideResponse, **status: Any) -> list[Obj]:
    """The objects a plan creates, as the shim's cache holds them once they exist."""
    out = []
    for a in plan.actions:
        if a.object_json:
            obj = json.loads(a.object_json)
            obj["metadata"]["uid"] = f"uid-{obj['kind']}-{obj['metadata']['name']}"
            obj["metadata"]["creationTimestamp"] = "2026-01-01T11:00:00Z"
            if obj["kind"] == "Job":
                obj["status"] = copy.deepcopy(status)
            out.append(obj)
    return out


FIRST = decide(JS)
RUNNING = created(FIRST, active=1, ready=1, startTime="2026-01-01T11:00:00Z")
JOBS = [o for o in RUNNING if o["kind"] == "Job"]


def types(plan: pb.DecideResponse) -> list[str]:
    return [pb.ActionType.Name(a.type).removeprefix("ACTION_TYPE_") for a in plan.actions]


def check(plan: pb.DecideResponse, owned: list[Obj] = RUNNING, js: Obj = JS) -> Any:
    return GUARD.check(js, owned, plan)


# ---- real plans pass ------------------------------------------------------------------------


def test_the_first_plan_creates_service_pvcs_and_jobs_and_passes():
    assert types(FIRST) == [
        "CREATE_SERVICE",
        "CREATE_PVC",
        "CREATE_PVC",
        "CREATE_JOB",
        "CREATE_JOB",
        "UPDATE_STATUS",
    ]
    assert check(FIRST, []) is None


def test_suspend_resume_restart_elastic_and_ttl_plans_pass():
    suspended = decide(make_jobset(suspend=True), RUNNING)
    assert types(suspended).count("SUSPEND_JOB") == 2
    assert check(suspended) is None

    # Kueue admitted the JobSet into a flavor: the resume merges its scheduling directives.
    js = make_jobset()
    pod = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    pod["metadata"] = {"labels": {"kueue.x-k8s.io/flavor": "gpu"}, "annotations": {"a": "b"}}
    pod["spec"]["nodeSelector"] = {"pool": "gpu"}
    pod["spec"]["tolerations"] = [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]
    pod["spec"]["schedulingGates"] = [{"name": "kueue"}]
    paused = copy.deepcopy(RUNNING)
    for job in paused:
        if job["kind"] == "Job":
            job["spec"]["suspend"] = True
            job["status"] = {"startTime": "2026-01-01T11:00:00Z"}
    resumed = decide(js, paused)
    assert types(resumed).count("RESUME_JOB") == 2
    assert any(a.clear_start_time for a in resumed.actions)
    assert "nodeSelector" in resumed.actions[0].patch_json
    assert check(resumed, paused, js) is None

    failed = copy.deepcopy(RUNNING)
    failed[-1]["status"] = {
        "failed": 1,
        "conditions": [
            {
                "type": "Failed",
                "status": "True",
                "reason": "BackoffLimitExceeded",
                "lastTransitionTime": "2026-01-01T11:30:00Z",
            }
        ],
    }
    restarting = make_jobset(failurePolicy={"maxRestarts": 3})
    # One pass records the restart in the status; the next deletes the Jobs of the attempt.
    restarting["status"] = status_to_dict(decide(restarting, failed).status)
    restart = decide(restarting, failed)
    assert types(restart).count("DELETE_JOB") == 2
    assert check(restart, failed, restarting) is None

    elastic = make_jobset()
    elastic["spec"]["replicatedJobs"][0]["template"]["spec"].update(parallelism=3, completions=3)
    scaled = decide(elastic, RUNNING, {"ElasticJobSet": True})
    assert types(scaled).count("PATCH_JOB") == 2
    assert check(scaled, RUNNING, elastic) is None
    # A template without counts scales the Jobs back to the Job API's defaults (nulls).
    unset = make_jobset()
    for key in ("parallelism", "completions"):
        unset["spec"]["replicatedJobs"][0]["template"]["spec"].pop(key, None)
    scaled_unset = decide(unset, RUNNING, {"ElasticJobSet": True})
    assert types(scaled_unset).count("PATCH_JOB") >= 1
    assert check(scaled_unset, RUNNING, unset) is None

    done = make_jobset(ttlSecondsAfterFinished=0)
    done["status"] = {
        "terminalState": "Completed",
        "conditions": [
            {
                "type": "Completed",
                "status": "True",
                "reason": "AllJobsCompleted",
                "message": "",
                "lastTransitionTime": "2026-01-01T11:00:00Z",
            }
        ],
    }
    ttl = decide(done, RUNNING)
    assert "DELETE_JOB_SET" in types(ttl)
    assert check(ttl, RUNNING, done) is None


def test_gang_plans_pass_creates_and_min_count_patches():
    js = make_jobset()
    js["metadata"]["annotations"] = {"jobset-decider.io/gang-policy": "JobSetGangPerReplicatedJob"}
    plan = decide(js)
    assert {"CREATE_WORKLOAD", "CREATE_POD_GROUP", "CREATE_JOB"} <= set(types(plan))
    assert check(plan, [], js) is None
    # A PodGroup names its Workload too (no controller flag): the one other owner allowed.
    objects = created(plan, active=1)
    gang = [o for o in objects if o["kind"] in ("Workload", "PodGroup")]
    for pg in (o for o in gang if o["kind"] == "PodGroup"):
        pg["spec"]["schedulingPolicy"]["gang"]["minCount"] += 5
    patched = decide(js, objects)
    assert "PATCH_POD_GROUP" in types(patched)
    assert check(patched, objects, js) is None


# Random JobSets and child Jobs of the property tests, as a cluster can hold them: the shim only
# observes the Jobs a JobSet controls, and one namespace has one Job of a name.
def _controlled_only(observed: Observed) -> Observed:
    jobs = {j.name: j for j in reversed(observed.jobs) if j.controller_uid == PROPERTY_UID}
    return replace(observed, jobs=list(reversed(jobs.values())))


def _as_objects(observed: Observed) -> list[Obj]:
    owner = {**OWNER, "name": observed.jobset["metadata"]["name"], "uid": PROPERTY_UID}
    return [
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": j.name,
                "namespace": "default",
                "uid": j.uid,
                "ownerReferences": [owner],
            },
        }
        for j in observed.jobs
    ]


@settings(
    max_examples=examples(150),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(observeds().map(_controlled_only))
def test_every_plan_the_decider_makes_passes_the_guard(observed: Observed) -> None:
    try:
        plan = convert.decide_response(to_request(observed))
    except InvalidInput:
        return
    refusal = GUARD.check(observed.jobset, _as_objects(observed), plan)
    assert refusal is None, str(refusal)


# ---- every rule refuses ---------------------------------------------------------------------


def _find(plan: pb.DecideResponse, t: int, n: int = 0) -> int:
    return [i for i, a in enumerate(plan.actions) if a.type == t][n]


def _action(plan: pb.DecideResponse, t: int, **fields: Any) -> pb.DecideResponse:
    """FIRST with its first action of type `t` changed."""
    out = pb.DecideResponse()
    out.CopyFrom(plan)
    a = out.actions[_find(out, t)]
    for key, value in fields.items():
        if key == "event":
            a.event.CopyFrom(value)
        else:
            setattr(a, key, value)
    return out


def _manifest(t: int, change: Callable[[Obj], Any]) -> pb.DecideResponse:
    """FIRST with the manifest of its first create of type `t` changed in place."""
    obj = json.loads(FIRST.actions[_find(FIRST, t)].object_json)
    change(obj)
    return _action(FIRST, t, object_json=json.dumps(obj))


def _claim(prefix: str, change: Callable[[Obj], Any]) -> pb.DecideResponse:
    """FIRST with the manifest of its CreatePVC of the claim template `prefix` changed."""
    out = pb.DecideResponse()
    out.CopyFrom(FIRST)
    (a,) = [a for a in out.actions if a.type == PVC and a.name.startswith(prefix + "-")]
    obj = json.loads(a.object_json)
    change(obj)
    a.object_json = json.dumps(obj)
    return out


def _owned_by_the_jobset(obj: Obj) -> None:
    data = json.loads(next(a.object_json for a in FIRST.actions
                           if a.type == PVC and a.name.startswith("data-")))
    obj["metadata"]["ownerReferences"] = data["metadata"]["ownerReferences"]


def _pod(change: Callable[[Obj], Any]) -> pb.DecideResponse:
    return _manifest(pb.ACTION_TYPE_CREATE_JOB, lambda o: change(o["spec"]["template"]["spec"]))


def _one(**fields: Any) -> pb.DecideResponse:
    return pb.DecideResponse(actions=[pb.Action(**fields)])


JOB0 = JOBS[0]["metadata"]


def _on_job(t: int, patch: Obj | None = None, **fields: Any) -> pb.DecideResponse:
    """An action of type `t` on js-workers-0, as the decider shapes it, then `fields`."""
    base: Obj = {
        "type": t,
        "name": JOB0["name"],
        "api_version": "batch/v1",
        "kind": "Job",
        "uid": JOB0["uid"],
    }
    if patch is not None:
        base["patch_json"] = json.dumps(patch)
    base.update(fields)
    return _one(**base)


DELETE = pb.ACTION_TYPE_DELETE_JOB
SUSPEND = pb.ACTION_TYPE_SUSPEND_JOB
RESUME = pb.ACTION_TYPE_RESUME_JOB
ELASTIC = pb.ACTION_TYPE_PATCH_JOB
CM = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "x", "ownerReferences": [OWNER]},
}
FOREIGN_JOB = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {
        "name": "other-0",
        "namespace": "default",
        "uid": "uid-other",
        "ownerReferences": [{**OWNER, "name": "other", "uid": "uid-other-js"}],
    },
}
# What a user of namespace `attacker` can create: a Job naming this JobSet's UID as controller.
FORGED_JOB = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {
        "name": "js-workers-9",
        "namespace": "attacker",
        "uid": "uid-forged",
        "ownerReferences": [OWNER],
    },
}
C = pb.ACTION_TYPE_CREATE_JOB
SVC = pb.ACTION_TYPE_CREATE_SERVICE
PVC = pb.ACTION_TYPE_CREATE_PVC

REFUSED = [
    # namespace
    pytest.param(_action(FIRST, C, namespace="kube-system"), "namespace", id="namespace-action"),
    pytest.param(
        _manifest(C, lambda o: o["metadata"].update(namespace="kube-system")),
        "namespace",
        id="namespace-manifest",
    ),
    pytest.param(_on_job(DELETE, namespace="other"), "namespace", id="namespace-delete"),
    pytest.param(
        _on_job(SUSPEND, {"spec": {"suspend": True}}, namespace="other"),
        "namespace",
        id="namespace-suspend",
    ),
    # kind
    pytest.param(
        _action(FIRST, C, object_json=json.dumps(CM), name="x"), "kind", id="kind-manifest"
    ),
    pytest.param(
        _action(FIRST, C, api_version="v1", kind="ConfigMap"), "kind", id="kind-action-overrides"
    ),
    pytest.param(
        _action(
            FIRST,
            SVC,
            object_json=FIRST.actions[_find(FIRST, C)].object_json,
            kind="",
            api_version="",
            name="",
        ),
        "kind",
        id="kind-job-through-create-service",
    ),
    pytest.param(
        _on_job(DELETE, api_version="v1", kind="Secret"), "kind", id="kind-delete-overrides"
    ),
    pytest.param(
        _on_job(
            pb.ACTION_TYPE_DELETE_POD_GROUP,
            api_version=SCHED.replace("v1alpha2", "v1beta1"),
            kind="PodGroup",
        ),
        "kind",
        id="kind-gang-version-not-configured",
    ),
    # name
    pytest.param(
        _on_job(DELETE, name="../../../api/v1/namespaces/kube-system/secrets/token"),
        "name",
        id="name-path-traversal",
    ),
    pytest.param(_manifest(C, lambda o: o["metadata"].update(name="a/b")), "name", id="name-slash"),
    pytest.param(
        _manifest(C, lambda o: o["metadata"].update(name="js..workers")), "name", id="name-dotdot"
    ),
    pytest.param(
        _manifest(C, lambda o: o["metadata"].update(name="", generateName="js-")),
        "name",
        id="name-generate-name",
    ),
    pytest.param(_manifest(C, lambda o: o["metadata"].pop("name")), "name", id="name-empty"),
    pytest.param(_action(FIRST, C, name="js-workers-7"), "name", id="name-action-vs-manifest"),
    # owner
    pytest.param(
        _manifest(C, lambda o: o["metadata"].pop("ownerReferences")), "owner", id="owner-none"
    ),
    pytest.param(
        _manifest(C, lambda o: o["metadata"]["ownerReferences"][0].update(uid="uid-other-js")),
        "owner",
        id="owner-other-uid",
    ),
    pytest.param(
        _manifest(C, lambda o: o["metadata"]["ownerReferences"][0].update(name="other")),
        "owner",
        id="owner-other-name",
    ),
    pytest.param(
        _manifest(
            C,
            lambda o: o["metadata"]["ownerReferences"][0].update(
                apiVersion="apps/v1", kind="Deployment"
            ),
        ),
        "owner",
        id="owner-not-a-jobset",
    ),
    pytest.param(
        _manifest(
            C,
            lambda o: o["metadata"]["ownerReferences"].append(
                {**OWNER, "name": "other", "uid": "u2"}
            ),
        ),
        "owner",
        id="owner-two-controllers",
    ),
    pytest.param(
        _manifest(
            C,
            lambda o: o["metadata"]["ownerReferences"].append(
                {"apiVersion": "v1", "kind": "Secret", "name": "s", "uid": "u3"}
            ),
        ),
        "owner",
        id="owner-second-reference",
    ),
    # pod-template
    pytest.param(
        _pod(lambda p: p.update(serviceAccountName="admin")),
        "pod-template",
        id="pod-template-service-account",
    ),
    pytest.param(
        _pod(lambda p: p.update(hostNetwork=True)), "pod-template", id="pod-template-host-network"
    ),
    pytest.param(
        _pod(lambda p: p["containers"][0].update(image="evil")),
        "pod-template",
        id="pod-template-image",
    ),
    pytest.param(
        _pod(lambda p: p["containers"][0].update(securityContext={"privileged": True})),
        "pod-template",
        id="pod-template-privileged",
    ),
    pytest.param(
        _pod(lambda p: p.update(nodeName="control-plane-0")),
        "pod-template",
        id="pod-template-node-name",
    ),
    pytest.param(
        _pod(lambda p: p["volumes"].append({"name": "root", "hostPath": {"path": "/"}})),
        "pod-template",
        id="pod-template-host-path-volume",
    ),
    pytest.param(
        _pod(
            lambda p: p.update(
                volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "someone-elses"}}]
            )
        ),
        "pod-template",
        id="pod-template-other-claim",
    ),
    pytest.param(
        _manifest(
            C,
            lambda o: o["metadata"]["labels"].update(
                {"jobset.sigs.k8s.io/replicatedjob-name": "nope"}
            ),
        ),
        "pod-template",
        id="pod-template-unknown-replicated-job",
    ),
    # service
    pytest.param(
        _manifest(SVC, lambda o: o["spec"].update(type="LoadBalancer", clusterIP="")),
        "service",
        id="service-load-balancer",
    ),
    pytest.param(
        _manifest(SVC, lambda o: o["spec"].update(externalIPs=["10.0.0.1"])),
        "service",
        id="service-external-ips",
    ),
    # pvc
    pytest.param(
        _action(
            _manifest(PVC, lambda o: o["metadata"].update(name="etcd-data")), PVC, name="etcd-data"
        ),
        "pvc",
        id="pvc-name",
    ),
    pytest.param(
        _manifest(PVC, lambda o: o["spec"].update(volumeName="pv-of-someone-else")),
        "pvc",
        id="pvc-bound-to-a-chosen-volume",
    ),
    # A retained claim the JobSet owned would be deleted with it by the garbage collector.
    pytest.param(_claim("keep", _owned_by_the_jobset), "pvc", id="pvc-retained-with-an-owner"),
    # One the JobSet should own, without an owner, would outlive it.
    pytest.param(_claim("data", lambda o: o["metadata"].pop("ownerReferences")), "owner",
                 id="pvc-deleted-with-the-jobset-without-an-owner"),
    # controlled
    pytest.param(
        _on_job(DELETE, name="other-0", uid="uid-other"), "controlled", id="controlled-foreign"
    ),
    pytest.param(
        _on_job(DELETE, name="js-workers-9", uid="uid-forged"),
        "controlled",
        id="controlled-cross-namespace-owner",
    ),
    pytest.param(
        _on_job(pb.ACTION_TYPE_DELETE_WORKLOAD, name="js", uid="u", api_version="", kind=""),
        "controlled",
        id="controlled-absent-workload",
    ),
    # uid
    pytest.param(_on_job(DELETE, uid=""), "uid", id="uid-missing"),
    pytest.param(_on_job(DELETE, uid="uid-newer"), "uid", id="uid-mismatch"),
    # patch
    pytest.param(
        _on_job(ELASTIC, {"metadata": {"ownerReferences": [OWNER | {"uid": "x"}]}}),
        "patch",
        id="patch-owner-references",
    ),
    pytest.param(
        _on_job(SUSPEND, {"spec": {"suspend": True}, "metadata": {"namespace": "kube-system"}}),
        "patch",
        id="patch-namespace",
    ),
    pytest.param(
        _on_job(
            RESUME,
            {"spec": {"suspend": False, "template": {"spec": {"serviceAccountName": "admin"}}}},
        ),
        "patch",
        id="patch-service-account",
    ),
    pytest.param(
        _on_job(
            RESUME,
            {
                "spec": {
                    "suspend": False,
                    "template": {"spec": {"containers": [{"name": "main", "image": "evil"}]}},
                }
            },
        ),
        "patch",
        id="patch-containers",
    ),
    pytest.param(
        _on_job(SUSPEND, {"spec": {"suspend": False}}), "patch", id="patch-suspend-that-resumes"
    ),
    pytest.param(
        _on_job(ELASTIC, {"spec": {"parallelism": 2, "suspend": False}}),
        "patch",
        id="patch-elastic-that-resumes",
    ),
    pytest.param(_on_job(ELASTIC, {"spec": {}}), "patch", id="patch-empty"),
    pytest.param(_on_job(SUSPEND, patch_json="{nope"), "patch", id="patch-not-json"),
    pytest.param(_on_job(SUSPEND), "patch", id="patch-missing"),
    # fields
    pytest.param(
        _one(
            type=pb.ACTION_TYPE_UPDATE_STATUS,
            name="js",
            kind="ConfigMap",
            patch_json='{"data":{"x":"y"}}',
        ),
        "fields",
        id="fields-patch-on-update-status",
    ),
    pytest.param(
        _on_job(DELETE, object_json=json.dumps(CM)), "fields", id="fields-object-on-delete"
    ),
    pytest.param(
        _on_job(ELASTIC, {"spec": {"parallelism": 2}}, clear_start_time=True),
        "fields",
        id="fields-clear-start-time-on-patch",
    ),
    pytest.param(_on_job(DELETE, propagation_policy="Never"), "fields", id="fields-propagation"),
    # jobset
    pytest.param(
        _one(type=pb.ACTION_TYPE_DELETE_JOB_SET, name="other", uid=UID),
        "jobset",
        id="jobset-delete-another",
    ),
    pytest.param(
        _one(type=pb.ACTION_TYPE_DELETE_JOB_SET, name="js"), "jobset", id="jobset-delete-no-uid"
    ),
    pytest.param(
        _one(type=pb.ACTION_TYPE_UPDATE_STATUS, name="other"),
        "jobset",
        id="jobset-status-of-another",
    ),
    pytest.param(
        _one(type=pb.ACTION_TYPE_UPDATE_STATUS, name="js", api_version="v1", kind="ConfigMap"),
        "jobset",
        id="jobset-status-kind",
    ),
    pytest.param(
        _one(
            type=pb.ACTION_TYPE_EVENT,
            name="js",
            uid="uid-other",
            event=pb.Event(type="Normal", reason="R", message="m"),
        ),
        "jobset",
        id="jobset-event-about-another",
    ),
    # event
    pytest.param(
        _one(type=pb.ACTION_TYPE_EVENT, name="js", event=pb.Event(type="Critical", reason="R")),
        "event",
        id="event-type",
    ),
    # action-type
    pytest.param(_one(type=0, name="js"), "action-type", id="action-type-unspecified"),
    pytest.param(_one(type=99, name="js"), "action-type", id="action-type-unknown"),
]


@pytest.mark.parametrize(("plan", "rule"), REFUSED)
def test_refused(plan: pb.DecideResponse, rule: str) -> None:
    owned = [*RUNNING, FOREIGN_JOB, FORGED_JOB]
    refusal = check(plan, owned)
    assert refusal is not None, "the plan was accepted"
    assert refusal.rule == rule, str(refusal)
    assert str(refusal).startswith(f"actions[{refusal.index}] (")


def test_a_bad_action_anywhere_refuses_the_plan_and_names_its_index():
    plan = pb.DecideResponse()
    plan.CopyFrom(FIRST)
    plan.actions.insert(3, pb.Action(type=DELETE, name="victim", namespace="other", uid="u"))
    refusal = check(plan)
    assert refusal is not None and refusal.index == 3
    assert str(refusal) == (
        "actions[3] (DeleteJob other/victim) breaks rule namespace: namespace 'other' is not "
        "the JobSet's namespace 'default'"
    )


def test_gang_kinds_follow_the_configuration():
    # v1alpha1 has no PodGroup kind; volcano has no Workload.
    js = make_jobset()
    pg = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "js", "ownerReferences": [OWNER]},
        "spec": {"minMember": 2},
    }
    plan = _one(type=pb.ACTION_TYPE_CREATE_POD_GROUP, name="js", object_json=json.dumps(pg))
    volcano = PlanGuard({kind: gv for gv, kind in gang_kinds(SCHED, "volcano")})
    assert volcano.check(js, [], plan) is None
    assert GUARD.check(js, [], plan).rule == "kind"
    v1alpha1 = PlanGuard({kind: gv for gv, kind in gang_kinds("scheduling.k8s.io/v1alpha1")})
    pg["apiVersion"] = "scheduling.k8s.io/v1alpha1"
    plan = _one(type=pb.ACTION_TYPE_CREATE_POD_GROUP, name="js", object_json=json.dumps(pg))
    assert v1alpha1.check(js, [], plan).rule == "kind"


# ---- upstream's lifecycle work after v0.12 -------------------------------------------------

LIFECYCLE = {"ExecutionAttemptsTracking": True, "MutablePodResourcesForSuspendedJobSets": True,
             "JobSetActiveDeadlineSeconds": True}


def _suspended_jobs(attempt: str) -> list[Obj]:
    paused = copy.deepcopy(RUNNING)
    for job in paused:
        if job["kind"] == "Job":
            job["spec"]["suspend"] = True
            job["metadata"].setdefault("annotations", {})[
                "jobset.sigs.k8s.io/execution-attempt"] = attempt
            job["status"] = {"startTime": "2026-01-01T11:00:00Z"}
    return paused


def _resized_jobset(cpu: str) -> Obj:
    js = make_jobset()
    pod = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    pod["containers"][0]["resources"] = {"requests": {"cpu": cpu}, "limits": {"cpu": cpu}}
    js["status"] = {"executionAttempts": 0, "conditions": [
        {"type": "Suspended", "status": "True", "reason": "SuspendedJobs", "message": "m",
         "lastTransitionTime": "2026-01-01T11:00:00Z"}]}
    return js


RESIZED = _resized_jobset("2")
PAUSED = _suspended_jobs("0")
RESUMED = decide(RESIZED, PAUSED, LIFECYCLE)


def test_a_resume_with_its_attempt_and_new_resources_passes():
    assert types(RESUMED) == ["UPDATE_STATUS", "RESUME_JOB", "RESUME_JOB", "UPDATE_STATUS",
                              "EVENT"]
    assert RESUMED.actions[0].HasField("status")
    assert RESUMED.actions[0].status.execution_attempts == 1
    resumes = [a for a in RESUMED.actions if a.type == RESUME]
    assert len(resumes) == 2 and all(a.HasField("on_failure") for a in resumes)
    assert '"containers"' in resumes[0].patch_json
    assert check(RESUMED, PAUSED, RESIZED) is None


def test_an_update_of_the_services_ports_passes():
    js = make_jobset()
    pod = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    pod["containers"][0]["ports"] = [{"containerPort": 8080}]
    plan = decide(js, RUNNING)
    assert "UPDATE_SERVICE" in types(plan)
    assert check(plan, RUNNING, js) is None


def _resume_with(change: Callable[[Obj], Any]) -> pb.DecideResponse:
    plan = pb.DecideResponse()
    plan.CopyFrom(RESUMED)
    i = _find(plan, RESUME)
    patch = json.loads(plan.actions[i].patch_json)
    change(patch["spec"]["template"]["spec"]["containers"])
    plan.actions[i].patch_json = json.dumps(patch)
    return plan


SERVICE = next(o for o in RUNNING if o["kind"] == "Service")["metadata"]


def _on_service(patch: Obj, **fields: Any) -> pb.DecideResponse:
    base: Obj = {"type": pb.ACTION_TYPE_UPDATE_SERVICE, "name": SERVICE["name"],
                 "api_version": "v1", "kind": "Service", "uid": SERVICE["uid"],
                 "patch_json": json.dumps(patch)}
    base.update(fields)
    return _one(**base)


@pytest.mark.parametrize(("plan", "rule"), [
    pytest.param(_resume_with(lambda cs: cs[0].update(image="evil")), "patch",
                 id="resume-resources-and-an-image"),
    pytest.param(_resume_with(lambda cs: cs[0]["resources"].update(requests={"cpu": "64"})),
                 "patch", id="resume-resources-the-template-does-not-say"),
    pytest.param(_resume_with(lambda cs: cs[0]["resources"].update(claims=[{"name": "x"}])),
                 "patch", id="resume-resources-and-claims"),
    pytest.param(_resume_with(lambda cs: cs.append({"name": "sidecar", "image": "x"})), "patch",
                 id="resume-adds-a-container"),
    pytest.param(_on_job(RESUME, {"metadata": {"annotations": {"x": "y"}},
                                  "spec": {"suspend": False}}), "patch",
                 id="resume-annotates-the-job-beyond-its-attempt"),
    pytest.param(_on_service({"spec": {"type": "LoadBalancer"}}), "patch",
                 id="update-service-beyond-ports"),
    pytest.param(_on_service({"spec": {"ports": [{"name": "x", "port": 80, "nodePort": 30000}]}}),
                 "patch", id="update-service-node-port"),
    pytest.param(_on_service({"spec": {"ports": None}}, name="other", uid="uid-other"),
                 "controlled", id="update-service-not-controlled"),
    pytest.param(_on_job(DELETE, status=pb.JobSetStatus(restarts=1)), "fields",
                 id="fields-status-on-delete"),
    pytest.param(_on_job(DELETE, on_failure=pb.Event(type="Warning", reason="R")), "fields",
                 id="fields-on-failure-on-delete"),
    pytest.param(_on_job(RESUME, {"spec": {"suspend": False}},
                         on_failure=pb.Event(type="Critical", reason="R")), "event",
                 id="event-on-failure-type"),
])
def test_refused_lifecycle(plan: pb.DecideResponse, rule: str) -> None:
    owned = [*PAUSED, FOREIGN_JOB]
    refusal = check(plan, owned, RESIZED)
    assert refusal is not None, "the plan was accepted"
    assert refusal.rule == rule, str(refusal)
# ---- a decider that lies about today's actions: status writes and Service ports ------------

COUNTED = copy.deepcopy(RESIZED)
COUNTED["status"].update(executionAttempts=3, restarts=2, restartsCountTowardsMax=1,
                         replicatedJobsStatus=[{"name": "workers", "ready": 0, "succeeded": 0,
                                                "failed": 0, "active": 0, "suspended": 2}])


def _status(own: bool = True, **fields: Any) -> pb.DecideResponse:
    """An UpdateStatus of JobSet js carrying (own) or leaving to the plan a status that keeps
    COUNTED's counters, then `fields`."""
    status = pb.JobSetStatus(restarts=2, restarts_count_towards_max=1, execution_attempts=3)
    status.replicated_jobs_status.add(name="workers", suspended=2)
    for key, value in fields.items():
        if value is None:
            status.ClearField(key)
        elif key == "replicated_jobs_status":
            del status.replicated_jobs_status[:]
            status.replicated_jobs_status.add(name=value)
        else:
            setattr(status, key, value)
    action = pb.Action(type=pb.ACTION_TYPE_UPDATE_STATUS, name="js", uid=UID)
    if own:
        action.status.CopyFrom(status)
        return pb.DecideResponse(actions=[action])
    return pb.DecideResponse(actions=[action], status=status)


def test_a_status_that_keeps_or_raises_the_counters_passes():
    assert check(_status(), PAUSED, COUNTED) is None
    assert check(_status(execution_attempts=4, restarts=3, restarts_count_towards_max=2,
                         start_time="2026-01-01T12:00:00.5+01:00"), PAUSED, COUNTED) is None
    assert check(_status(own=False), PAUSED, COUNTED) is None
    # A JobSet with no count yet: the first pass sets it at its restarts.
    assert check(_status(execution_attempts=0, restarts=0, restarts_count_towards_max=0),
                 PAUSED, JS) is None
    # The real resume of the lifecycle section, status write first.
    assert check(RESUMED, PAUSED, RESIZED) is None


@pytest.mark.parametrize(("plan", "says"), [
    pytest.param(_status(execution_attempts=2), "executionAttempts to 2, below the JobSet's 3",
                 id="execution-attempts-backwards"),
    pytest.param(_status(execution_attempts=None), "executionAttempts to None",
                 id="execution-attempts-unset"),
    pytest.param(_status(own=False, execution_attempts=0), "executionAttempts to 0",
                 id="execution-attempts-backwards-in-the-plans-status"),
    pytest.param(_status(restarts=1), "restarts to 1, below the JobSet's 2",
                 id="restarts-backwards"),
    pytest.param(_status(restarts_count_towards_max=0), "restartsCountTowardsMax to 0",
                 id="restarts-counting-towards-max-backwards"),
    pytest.param(_status(replicated_jobs_status="leader"), "replicatedJobsStatus 'leader'",
                 id="another-jobsets-replicated-job"),
    pytest.param(_status(start_time="yesterday"), "startTime 'yesterday' is not an RFC 3339",
                 id="start-time-not-a-time"),
])
def test_a_status_no_pass_could_write_is_refused(plan: pb.DecideResponse, says: str) -> None:
    refusal = check(plan, PAUSED, COUNTED)
    assert refusal is not None and refusal.rule == "status", refusal
    assert says in refusal.detail, refusal.detail


def test_a_status_write_of_another_jobset_is_refused_after_a_real_resume():
    """The real resume plan, its first (synchronous) status write swapped for another JobSet's
    status: refused whole, so not one Job resumes."""
    plan = pb.DecideResponse()
    plan.CopyFrom(RESUMED)
    plan.actions[0].status.CopyFrom(_status(execution_attempts=0,
                                            replicated_jobs_status="leader").actions[0].status)
    refusal = check(plan, PAUSED, COUNTED)
    assert refusal is not None and (refusal.index, refusal.rule) == (0, "status"), refusal


PORTED = make_jobset()
PORTED["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0][
    "ports"] = [{"containerPort": 8080}, {"containerPort": 53, "protocol": "UDP"}]
PORT = {"name": "tcp-8080", "protocol": "TCP", "port": 8080, "targetPort": 8080}
OTHER_SERVICE = {"apiVersion": "v1", "kind": "Service", "metadata": {
    "name": "metrics", "namespace": "default", "uid": "uid-metrics",
    "ownerReferences": [OWNER]}, "spec": {"clusterIP": "None"}}


def test_the_services_ports_from_its_containers_pass():
    plan = decide(PORTED, RUNNING)
    assert "UPDATE_SERVICE" in types(plan)
    assert check(plan, RUNNING, PORTED) is None
    first = decide(PORTED)
    assert json.loads(first.actions[0].object_json)["spec"]["ports"] == [
        PORT, {"name": "udp-53", "protocol": "UDP", "port": 53, "targetPort": 53}]
    assert check(first, [], PORTED) is None


@pytest.mark.parametrize(("plan", "rule"), [
    pytest.param(_on_service({"spec": {"ports": [{**PORT, "port": 22, "name": "tcp-22",
                                                  "targetPort": 22}]}}),
                 "service", id="update-service-opens-a-port-no-container-declares"),
    pytest.param(_on_service({"spec": {"ports": [{**PORT, "targetPort": 22}]}}),
                 "service", id="update-service-forwards-a-declared-port-elsewhere"),
    pytest.param(_on_service({"spec": {"ports": [{**PORT, "protocol": "UDP",
                                                  "name": "udp-8080"}]}}),
                 "service", id="update-service-another-protocol"),
    pytest.param(_on_service({"spec": {"ports": [PORT]}}, name="metrics", uid="uid-metrics"),
                 "identity", id="update-service-another-service-of-the-jobset"),
    pytest.param(_manifest(pb.ACTION_TYPE_CREATE_SERVICE, lambda o: o["spec"].__setitem__(
        "ports", [{"name": "tcp-22", "protocol": "TCP", "port": 22, "targetPort": 22}])),
                 "service", id="create-service-opens-a-port-no-container-declares"),
])
def test_a_service_port_the_containers_do_not_declare_is_refused(plan: pb.DecideResponse,
                                                                  rule: str) -> None:
    refusal = check(plan, [*RUNNING, OTHER_SERVICE], PORTED)
    assert refusal is not None and refusal.rule == rule, refusal


# ---- spec.scheduling (JobSetWorkloadAwareSchedulingAPI, JobSetGangOfGangs) -----------------

V1BETA1 = "scheduling.k8s.io/v1beta1"
TREE_GATES = {"JobSetWorkloadAwareSchedulingAPI": True, "JobSetGangOfGangs": True}
TREE_GUARD = PlanGuard({kind: gv for gv, kind in gang_kinds(V1BETA1, gang_of_gangs=True)})


def _decide_v1beta1(js: Obj, owned: list[Obj], gates: dict[str, bool]) -> Any:
    req = build_decide_request(js, owned, NOW, CONTROLLER, gates, gang_api_version=V1BETA1,
                               gang_target="kubernetes")
    return convert.decide_response(req)


def _scheduled_objects(gates: dict[str, bool]) -> tuple[Obj, list[Obj]]:
    js = make_jobset(scheduling={"schedulingPolicy": {"gang": {}}})
    return js, created(_decide_v1beta1(js, [], gates))


def test_a_composite_pod_group_tree_passes_with_the_gate_and_not_without():
    js, objects = _scheduled_objects(TREE_GATES)
    plan = _decide_v1beta1(js, [], TREE_GATES)
    assert "CREATE_COMPOSITE_POD_GROUP" in types(plan)
    assert TREE_GUARD.check(js, [], plan) is None
    flat = PlanGuard({kind: gv for gv, kind in gang_kinds(V1BETA1)})
    assert flat.check(js, [], plan).rule == "kind"
    # Suspended: the tree is deleted, by UID, leaves first.
    suspended = copy.deepcopy(js)
    suspended["spec"]["suspend"] = True
    deletes = _decide_v1beta1(suspended, objects, TREE_GATES)
    assert "DELETE_COMPOSITE_POD_GROUP" in types(deletes)
    assert TREE_GUARD.check(suspended, objects, deletes) is None


def _drifted_workload_patch(change: Callable[[Obj], Any]) -> tuple[Obj, list[Obj], Any]:
    gates = {"JobSetWorkloadAwareSchedulingAPI": True}
    js, objects = _scheduled_objects(gates)
    workload = next(o for o in objects if o["kind"] == "Workload")
    workload["spec"]["podGroupTemplates"][0]["schedulingPolicy"]["gang"]["minCount"] = 1
    plan = _decide_v1beta1(js, objects, gates)
    i = _find(plan, pb.ACTION_TYPE_PATCH_WORKLOAD)
    patch = json.loads(plan.actions[i].patch_json)
    change(patch)
    plan.actions[i].patch_json = json.dumps(patch)
    return js, objects, plan


def test_a_workload_patch_sends_its_templates_back_changed_only_in_counts():
    js, objects, plan = _drifted_workload_patch(lambda p: None)
    assert TREE_GUARD.check(js, objects, plan) is None


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda p: p["spec"]["podGroupTemplates"][0].__setitem__(
            "priorityClassName", "system-node-critical"), id="another-field-of-a-template"),
        pytest.param(lambda p: p["spec"]["podGroupTemplates"].append(
            copy.deepcopy(p["spec"]["podGroupTemplates"][0])), id="a-template-more"),
        pytest.param(lambda p: p["spec"]["podGroupTemplates"][0].__setitem__(
            "schedulingPolicy", {"gang": {"minCount": 1, "extra": 1}}), id="a-policy-not-a-count"),
        pytest.param(lambda p: p["spec"].__setitem__("controllerRef", {"kind": "Pod"}),
                     id="beside-the-list"),
    ],
)
def test_a_workload_patch_that_changes_more_than_counts_is_refused(change):
    js, objects, plan = _drifted_workload_patch(change)
    refusal = TREE_GUARD.check(js, objects, plan)
    assert refusal is not None and refusal.rule == "patch", refusal


@pytest.mark.parametrize(("change", "says"), [
    pytest.param(lambda o: o["spec"].__setitem__("parentCompositePodGroupName", "other-root"),
                 "is not a CompositePodGroup of JobSet", id="a-parent-not-ours"),
    pytest.param(lambda o: o["spec"]["workloadRef"].__setitem__("templateName", "nope"),
                 "not a CompositePodGroup template", id="a-template-not-a-composite"),
])
def test_a_composite_pod_group_that_names_what_is_not_the_jobsets_is_refused(change, says):
    js, _ = _scheduled_objects(TREE_GATES)
    plan = _decide_v1beta1(js, [], TREE_GATES)
    i = next(k for k, a in enumerate(plan.actions)
             if a.type == pb.ACTION_TYPE_CREATE_COMPOSITE_POD_GROUP
             and "parentCompositePodGroupName" in json.loads(a.object_json)["spec"])
    obj = json.loads(plan.actions[i].object_json)
    change(obj)
    plan.actions[i].object_json = json.dumps(obj)
    refusal = TREE_GUARD.check(js, [], plan)
    assert refusal is not None and refusal.rule == "identity" and says in refusal.detail, refusal


def _composite(change: Callable[[Obj], Any]) -> tuple[Obj, pb.DecideResponse]:
    js, _ = _scheduled_objects(TREE_GATES)
    plan = _decide_v1beta1(js, [], TREE_GATES)
    i = _find(plan, pb.ACTION_TYPE_CREATE_COMPOSITE_POD_GROUP)
    obj = json.loads(plan.actions[i].object_json)
    change(obj)
    plan.actions[i].object_json = json.dumps(obj)
    plan.actions[i].name = obj["metadata"]["name"]
    return js, plan


def _another_jobsets_composite() -> Obj:
    js, objects = _scheduled_objects(TREE_GATES)
    cpg = copy.deepcopy(next(o for o in objects if o["kind"] == "CompositePodGroup"))
    cpg["metadata"].update(name="victim-root", uid="uid-victim-cpg",
                           labels={"jobset.sigs.k8s.io/jobset-name": "victim"})
    cpg["metadata"]["ownerReferences"] = [{**OWNER, "name": "victim", "uid": "uid-victim"}]
    return cpg


@pytest.mark.parametrize(("change", "rule"), [
    pytest.param(lambda o: o["metadata"].__setitem__(
        "ownerReferences", [{**OWNER, "name": "victim", "uid": "uid-victim"}]), "owner",
                 id="controlled-by-another-jobset"),
    pytest.param(lambda o: o["metadata"].__setitem__(
        "labels", {"jobset.sigs.k8s.io/jobset-name": "victim"}), "identity",
                 id="labelled-as-another-jobsets"),
    pytest.param(lambda o: o["metadata"].__setitem__("name", "victim-root"), "identity",
                 id="named-as-another-jobsets"),
    pytest.param(lambda o: o["spec"]["workloadRef"].__setitem__("workloadName", "victim-wl"),
                 "identity", id="joins-another-jobsets-workload"),
])
def test_a_composite_pod_group_of_another_jobset_is_refused(change, rule):
    js, plan = _composite(change)
    refusal = TREE_GUARD.check(js, [], plan)
    assert refusal is not None and refusal.rule == rule, refusal


def test_deleting_another_jobsets_composite_pod_group_is_refused():
    js, objects = _scheduled_objects(TREE_GATES)
    victim = _another_jobsets_composite()
    plan = _one(type=pb.ACTION_TYPE_DELETE_COMPOSITE_POD_GROUP, name="victim-root",
                api_version="scheduling.k8s.io/v1alpha3", kind="CompositePodGroup",
                uid="uid-victim-cpg", propagation_policy="Background")
    refusal = TREE_GUARD.check(js, [*objects, victim], plan)
    assert refusal is not None and refusal.rule == "controlled", refusal


def test_jobs_of_a_tree_name_its_leaf_templates_and_pass():
    """The Jobs' group-template-name names a leaf template nested in the Workload's tree."""
    js, objects = _scheduled_objects(TREE_GATES)
    plan = _decide_v1beta1(js, objects, TREE_GATES)
    assert "CREATE_JOB" in types(plan)
    assert TREE_GUARD.check(js, objects, plan) is None
