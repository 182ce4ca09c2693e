"""A hostile or broken decider, and a hostile neighbour: the shim acts only inside its JobSet.

Every plan here is what someone answering on the decider's address could send (plaintext, no
authentication); every object in namespace `attacker` is what a user of that namespace could
create. None of it may reach outside the JobSet, and a plan that tries is refused whole.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from decider_api.v1 import decider_pb2 as pb
from decider_client import DeciderClient
from tests.shim.helpers import NS, ScriptedDecider, jobset, rjob, wait_for

pytestmark = pytest.mark.waits

JOB_GV = "batch/v1"


def _meta(request: pb.DecideRequest) -> dict[str, Any]:
    return json.loads(request.jobset_json)["metadata"]


def _owner(meta: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _job(name: str, namespace: str, owner: dict[str, Any] | None = None, **pod: Any) -> dict:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if owner is not None:
        meta["ownerReferences"] = [owner]
    return {
        "apiVersion": JOB_GV,
        "kind": "Job",
        "metadata": meta,
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "main", "image": "busybox"}],
                    **pod,
                }
            }
        },
    }


def _victim(cluster: Any, namespace: str = "other", name: str = "victim") -> dict[str, Any]:
    return cluster.store.create(cluster.jobs_rt, namespace, _job(name, namespace))


def _refusals(cluster: Any, name: str = "js") -> list[dict[str, Any]]:
    return [e for e in cluster.event_objects(name) if e["reason"] == "PlanRefused"]


def _only(request: pb.DecideRequest, *actions: pb.Action) -> pb.DecideResponse:
    """The crafted plan for JobSet `js`; nothing for any other."""
    return pb.DecideResponse(actions=list(actions) if _meta(request)["name"] == "js" else [])


def _start(shims: Any, cluster: Any, answer: Any, real: DeciderClient | None = None) -> Any:
    decider = ScriptedDecider(answer, real)
    shims.refusals_expected = True
    shim = shims.start(decider=decider)
    cluster.create_jobset(jobset("js", rjob("workers", 2)))
    return shim, decider


def test_a_configmap_in_kube_system_is_not_created(cluster, shims):
    def answer(req: pb.DecideRequest, _: Any) -> pb.DecideResponse:
        cm = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "pwned", "namespace": "kube-system"},
            "data": {"owner": "whoever answered on the decider's address"},
        }
        return _only(
            req,
            pb.Action(
                type=pb.ACTION_TYPE_CREATE_JOB,
                name="pwned",
                namespace="kube-system",
                api_version="v1",
                kind="ConfigMap",
                object_json=json.dumps(cm),
            ),
        )

    _start(shims, cluster, answer)
    event = wait_for(lambda: _refusals(cluster), what="a PlanRefused event")[0]
    assert event["type"] == "Warning"
    assert "actions[0] (CreateJob" in event["message"]
    assert cluster.kube.writes("/namespaces/kube-system/") == []
    configmaps = cluster.store.resource_for("", "v1", "configmaps")
    assert cluster.store.try_get(configmaps, "kube-system", "pwned") is None


def test_a_job_running_as_admin_in_kube_system_is_not_created(cluster, shims):
    def answer(req: pb.DecideRequest, _: Any) -> pb.DecideResponse:
        job = _job("js-workers-0", "kube-system", _owner(_meta(req)), serviceAccountName="admin")
        return _only(
            req,
            pb.Action(
                type=pb.ACTION_TYPE_CREATE_JOB,
                name="js-workers-0",
                api_version=JOB_GV,
                kind="Job",
                object_json=json.dumps(job),
            ),
        )

    _start(shims, cluster, answer)
    event = wait_for(lambda: _refusals(cluster), what="a PlanRefused event")[0]
    assert "kube-system" in event["message"]
    assert cluster.jobs("kube-system") == []
    assert cluster.kube.writes("/namespaces/kube-system/") == []


def test_a_delete_in_another_namespace_is_not_carried_out(cluster, shims):
    victim = _victim(cluster)

    def answer(req: pb.DecideRequest, _: Any) -> pb.DecideResponse:
        return _only(
            req,
            pb.Action(
                type=pb.ACTION_TYPE_DELETE_JOB,
                name="victim",
                namespace="other",
                uid=victim["metadata"]["uid"],
                propagation_policy="Background",
            ),
        )

    shim, _ = _start(shims, cluster, answer)
    wait_for(lambda: _refusals(cluster), what="a PlanRefused event")
    assert cluster.kube.writes("/namespaces/other/") == []
    assert cluster.store.try_get(cluster.jobs_rt, "other", "victim") is not None
    # Refused, and retried later rather than at once: the decider may answer better next time.
    assert shim.queue.failures((NS, "js")) >= 1


def test_suspending_another_namespaces_job_is_not_carried_out(cluster, shims):
    victim = _victim(cluster)

    def answer(req: pb.DecideRequest, _: Any) -> pb.DecideResponse:
        return _only(
            req,
            pb.Action(
                type=pb.ACTION_TYPE_SUSPEND_JOB,
                name="victim",
                namespace="other",
                api_version=JOB_GV,
                kind="Job",
                uid=victim["metadata"]["uid"],
                patch_json='{"spec":{"suspend":true}}',
            ),
        )

    _start(shims, cluster, answer)
    wait_for(lambda: _refusals(cluster), what="a PlanRefused event")
    assert cluster.kube.writes("/namespaces/other/") == []
    assert not cluster.store.get(cluster.jobs_rt, "other", "victim")["spec"].get("suspend")


def test_one_bad_action_refuses_the_whole_plan_and_a_good_answer_later_is_applied(
    cluster, shims, decider_server
):
    victim = _victim(cluster)
    tamper = {"on": True}
    seen: list[list[str]] = []

    def answer(req: pb.DecideRequest, plan: Any) -> pb.DecideResponse:
        out = pb.DecideResponse()
        out.CopyFrom(plan)
        if tamper["on"] and _meta(req)["name"] == "js" and len(out.actions) >= 3:
            seen.append([a.name for a in out.actions])
            # The real plan (Service, Job 0, Job 1, status) with its third action replaced.
            out.actions[2].CopyFrom(
                pb.Action(
                    type=pb.ACTION_TYPE_DELETE_JOB,
                    name="victim",
                    namespace="other",
                    uid=victim["metadata"]["uid"],
                )
            )
        return out

    real = DeciderClient(decider_server.target, options=[("grpc.so_reuseport", 0)])
    _start(shims, cluster, answer, real)
    event = wait_for(lambda: _refusals(cluster), what="a PlanRefused event")[0]
    assert seen[0][:2] == ["js", "js-workers-0"]  # the first two actions were fine
    assert "actions[2] (DeleteJob" in event["message"]
    assert "other" in event["message"]
    # Nothing of the plan was applied: not the Service, not the first Job, not the delete.
    assert [r.path for r in cluster.kube.writes(method="POST") if "/events" not in r.path] == []
    assert cluster.kube.writes(method="DELETE") == []
    assert cluster.live_jobs("js-") == []
    assert cluster.store.try_get(cluster.services_rt, NS, "js") is None

    # The decider behaves again: the next pass (here woken by a change) applies its plan.
    tamper["on"] = False
    cluster.store.mutate(
        cluster.jobsets_rt,
        NS,
        "js",
        lambda o: o["metadata"].setdefault("labels", {}).update(poke="1"),
        False,
    )
    wait_for(lambda: len(cluster.live_jobs("js-")) == 2, what="jobs once the plan is fine")
    assert cluster.store.try_get(cluster.jobs_rt, "other", "victim") is not None


def test_a_job_in_another_namespace_owned_by_uid_changes_nothing(cluster, shims):
    """A Job in `attacker` naming a `default` JobSet's UID as controller is not that JobSet's."""
    shim = shims.start()
    cluster.create_jobset(jobset("victim", rjob("workers", 2)))
    wait_for(lambda: len(cluster.live_jobs("victim-")) == 2, what="the JobSet's jobs")
    wait_for(lambda: (cluster.jobset("victim").get("status") or {}).get("replicatedJobsStatus"))
    js = cluster.jobset("victim")
    uid = js["metadata"]["uid"]
    forged = _job("victim-workers-0", "attacker", _owner(js["metadata"]))
    forged["metadata"]["labels"] = {
        "jobset.sigs.k8s.io/jobset-name": "victim",
        "jobset.sigs.k8s.io/replicatedjob-name": "workers",
        "jobset.sigs.k8s.io/restart-attempt": "0",
        "jobset.sigs.k8s.io/job-index": "0",
    }
    cluster.store.create(cluster.jobs_rt, "attacker", forged)
    cluster.sim.fail("attacker", "victim-workers-0")
    jobs = next(i for i in shim.informers if i.resource.kind == "Job")
    wait_for(
        lambda: (jobs.get("attacker", "victim-workers-0") or {}).get("status", {}).get("failed"),
        what="the forged failed Job in the shim's cache",
    )
    # Any change to the JobSet runs a pass that would observe the forged Job.
    before = shim.stats.reconciles
    cluster.store.mutate(
        cluster.jobsets_rt,
        NS,
        "victim",
        lambda o: o["metadata"].setdefault("labels", {}).update(poke="1"),
        False,
    )
    wait_for(lambda: shim.stats.reconciles > before and shim.queue.idle(), what="a pass")
    wait_for(lambda: shim.queue.idle(), what="quiet")

    assert all(o["metadata"]["namespace"] == NS for o in shim.owned(cluster.jobset("victim")))
    status = cluster.jobset("victim").get("status") or {}
    assert not any(c["type"] == "Failed" for c in status.get("conditions") or [])
    assert not status.get("restarts")
    assert sorted(j["metadata"]["name"] for j in cluster.live_jobs("victim-")) == [
        "victim-workers-0",
        "victim-workers-1",
    ]
    assert all(j["metadata"]["ownerReferences"][0]["uid"] == uid for j in cluster.live_jobs())
    assert cluster.kube.writes("/namespaces/default/jobs", "DELETE") == []
    assert cluster.kube.writes("/namespaces/attacker/") == []


def test_an_owned_objects_event_wakes_no_jobset_of_another_namespace(cluster, shims):
    shim = shims.build()
    victim = cluster.create_jobset(jobset("victim"))
    forged = _job("victim-workers-0", "attacker", _owner(victim["metadata"]))
    shim.wakes.on_owned("ADDED", forged, None)
    assert shim.queue.get(0.1) == ("attacker", "victim")  # its own namespace, if anyone's
    assert shim.queue.get(0.05) is None
    assert shim.owned(victim) == []
    shim.wakes.on_owned("DELETED", forged, forged)
    shim.applier.close()


def test_a_job_labelled_as_another_jobsets_is_refused_whole(cluster, shims, decider_server):
    """The decider's true plan for `js`, its first Job relabelled as JobSet `victim`'s (managed
    by another controller): name and UID labels on the Job and its pods, the victim's subdomain
    and a hostname in its DNS. Its pods would join the victim's headless Service and DNS."""
    victim = cluster.create_jobset(jobset("victim", rjob("workers", 1),
                                          managed_by="someone.else/controller"))
    claimed = {
        "jobset.sigs.k8s.io/jobset-name": "victim",
        "jobset.sigs.k8s.io/jobset-uid": victim["metadata"]["uid"],
    }

    def answer(req: pb.DecideRequest, plan: Any) -> pb.DecideResponse:
        out = pb.DecideResponse()
        out.CopyFrom(plan)
        if _meta(req)["name"] != "js":
            return out
        for action in out.actions:
            if action.type == pb.ACTION_TYPE_CREATE_JOB:
                job = json.loads(action.object_json)
                job["metadata"]["labels"].update(claimed)
                pod = job["spec"]["template"]
                pod["metadata"]["labels"].update(claimed)
                pod["spec"].update(subdomain="victim", hostname="victim-workers-0-0")
                action.object_json = json.dumps(job)
                break
        return out

    real = DeciderClient(decider_server.target, options=[("grpc.so_reuseport", 0)])
    shim, decider = _start(shims, cluster, answer, real)
    event = wait_for(lambda: _refusals(cluster), what="a PlanRefused event")[0]
    assert "breaks rule identity" in event["message"]
    assert "victim" in event["message"]
    # Refused whole: not the Service, not the PVCs, not the untouched second Job.
    assert [r.path for r in cluster.kube.writes(method="POST") if "/events" not in r.path] == []
    assert cluster.live_jobs("js-") == []
    assert cluster.store.try_get(cluster.services_rt, NS, "js") is None
    pods, _ = cluster.store.list(cluster.store.resource_for("", "v1", "pods"), NS)
    assert not [p for p in pods
                if (p["metadata"].get("labels") or {}).get("jobset.sigs.k8s.io/jobset-name")
                == "victim"]
    assert shim.stats.refused_plans >= 1
    assert decider.calls >= 1


def _writes_but_events(cluster: Any) -> list[str]:
    return [f"{r.method} {r.path}" for r in cluster.kube.writes() if "/events" not in r.path]


@pytest.mark.parametrize(("lie", "rule"), [
    ("another-jobsets-status", "status"), ("execution-attempts-backwards", "status"),
    ("update-another-jobsets-service", "controlled")])
def test_a_status_write_no_pass_could_make_is_refused_whole(cluster, shims, decider_server,
                                                            lie, rule):
    """The real first plan (Service, Jobs, status), with its status swapped for one no pass
    could write (another JobSet's: a replicated Job this one has not; an execution attempt gone
    back: Kueue accounts per attempt), or an UpdateService of another JobSet's Service added.
    Refused whole: no Job, no Service, no status write, no patch."""
    victim = cluster.store.create(cluster.services_rt, NS, {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "victim", "namespace": NS},
        "spec": {"clusterIP": "None", "selector": {"jobset.sigs.k8s.io/jobset-name": "victim"}}})
    created = cluster.create_jobset(jobset("js", rjob("workers", 2)))
    cluster.store.mutate(cluster.jobsets_rt, NS, "js",
                         lambda o: o.setdefault("status", {}).update(executionAttempts=4), True)
    tamper = {"on": True}

    def answer(req: pb.DecideRequest, plan: Any) -> pb.DecideResponse:
        out = pb.DecideResponse()
        out.CopyFrom(plan)
        if tamper["on"] and _meta(req)["name"] == "js":
            assert pb.ACTION_TYPE_UPDATE_STATUS in [a.type for a in out.actions]
            if lie == "another-jobsets-status":
                out.status.replicated_jobs_status.add(name="leader", ready=1)
            elif lie == "execution-attempts-backwards":
                out.status.execution_attempts = 0
            else:
                out.actions.add(type=pb.ACTION_TYPE_UPDATE_SERVICE, name="victim",
                                api_version="v1", kind="Service",
                                uid=victim["metadata"]["uid"], patch_json=json.dumps(
                                    {"spec": {"ports": [{"name": "tcp-22", "protocol": "TCP",
                                                         "port": 22, "targetPort": 22}]}}))
        return out

    real = DeciderClient(decider_server.target, options=[("grpc.so_reuseport", 0)])
    decider = ScriptedDecider(answer, real)
    shims.refusals_expected = True
    shim = shims.start(decider=decider)
    event = wait_for(lambda: _refusals(cluster), what="a PlanRefused event")[0]
    assert f"breaks rule {rule}" in event["message"], event["message"]
    assert _writes_but_events(cluster) == []
    assert cluster.live_jobs("js-") == []
    assert cluster.store.try_get(cluster.services_rt, NS, "js") is None
    assert cluster.jobset("js")["status"]["executionAttempts"] == 4
    assert "ports" not in cluster.store.get(cluster.services_rt, NS, "victim")["spec"]
    assert shim.stats.refused_plans >= 1

    # The decider tells the truth again: the next pass applies its plan.
    tamper["on"] = False
    cluster.store.mutate(cluster.jobsets_rt, NS, "js", lambda o: o["metadata"].setdefault(
        "labels", {}).update(poke="1"), False)
    wait_for(lambda: len(cluster.live_jobs("js-")) == 2, what="jobs once the plan is true")
    assert cluster.jobset("js")["status"]["executionAttempts"] == 4
    assert created["metadata"]["uid"] == cluster.jobset("js")["metadata"]["uid"]
