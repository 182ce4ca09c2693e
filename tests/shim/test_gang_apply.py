"""Gang pieces of the shim without the decider: apply, flags, the request, the name rule."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from decider.core.gang import API_VERSIONS, TARGETS, jobset_gang
from decider_api.v1 import decider_pb2 as pb
from decider_client.observe import build_decide_request
from fakekube import FakeKube
from shim.apply import Applier, CreateConflict
from shim.config import GANG_TARGETS
from shim.flags import parse_args
from shim.kube import Kube
from shim.owned import may_be_gang_name
from tests.shim.helpers import jobset, rjob

NS = "default"
SCHED = "scheduling.k8s.io/v1alpha2"


@pytest.fixture
def kube():
    with FakeKube() as fake:
        cfg = client.Configuration()
        cfg.host = fake.url
        yield fake, Kube(client.ApiClient(cfg))


def _jobset(fake: FakeKube) -> dict[str, Any]:
    rt = fake.store.resource_for("jobset.x-k8s.io", "v1alpha2", "jobsets")
    return fake.store.create(rt, NS, jobset("js", rjob("workers", 1)))


def _podgroup(name: str, owner: dict[str, Any] | None, min_count: int = 2) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": NS}
    if owner is not None:
        meta["ownerReferences"] = [
            {
                "apiVersion": "jobset.x-k8s.io/v1alpha2",
                "kind": "JobSet",
                "name": owner["metadata"]["name"],
                "uid": owner["metadata"]["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
    return {
        "apiVersion": SCHED,
        "kind": "PodGroup",
        "metadata": meta,
        "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}},
    }


def _create(action_type: int, obj: dict[str, Any]) -> pb.Action:
    return pb.Action(
        type=action_type,
        name=obj["metadata"]["name"],
        api_version=obj["apiVersion"],
        kind=obj["kind"],
        object_json=json.dumps(obj),
    )


def _job(name: str, owner: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": NS,
            "ownerReferences": _podgroup("x", owner)["metadata"]["ownerReferences"],
        },
        "spec": {
            "template": {
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}
            }
        },
    }


def _events(fake: FakeKube) -> list[dict[str, Any]]:
    items, _ = fake.store.list(fake.store.resource_for("", "v1", "events"), NS)
    return items


# ---- apply ---------------------------------------------------------------------------------


@pytest.mark.waits
@pytest.mark.parametrize("holder", ["another-jobset", "nobody"])
def test_create_meeting_a_foreign_object_is_a_conflict_not_success(kube, holder):
    fake, k = kube
    js = _jobset(fake)
    pg_rt = fake.store.resource_for("scheduling.k8s.io", "v1alpha2", "podgroups")
    other = None
    if holder == "another-jobset":
        rt = fake.store.resource_for("jobset.x-k8s.io", "v1alpha2", "jobsets")
        other = fake.store.create(rt, NS, jobset("other", rjob("workers", 1)))
    foreign = fake.store.create(pg_rt, NS, _podgroup("js-pg", other, min_count=9))
    plan = pb.DecideResponse(
        actions=[
            _create(pb.ACTION_TYPE_CREATE_POD_GROUP, _podgroup("js-pg", js)),
            _create(pb.ACTION_TYPE_CREATE_JOB, _job("js-workers-0", js)),
        ]
    )
    applier = Applier(k, "c", "me")
    with pytest.raises(CreateConflict, match="refusing to adopt"):
        applier.apply(js, plan)
    # Nothing after the conflict ran, and the foreign object is as it was.
    assert (
        fake.store.try_get(fake.store.resource_for("batch", "v1", "jobs"), NS, "js-workers-0")
        is None
    )
    assert fake.store.get(pg_rt, NS, "js-pg") == foreign
    events = _events(fake)
    assert [(e["type"], e["reason"], e["involvedObject"]["uid"]) for e in events] == [
        ("Warning", "GangObjectConflict", js["metadata"]["uid"])
    ]
    assert "PodGroup js-pg" in events[0]["message"]
    assert ("JobSet other" in events[0]["message"]) == (holder == "another-jobset")
    # Retries keep failing, but say it once per interval, not once per retry.
    with pytest.raises(CreateConflict):
        applier.apply(js, plan)
    assert len(_events(fake)) == 1
    applier.close()


@pytest.mark.waits
def test_create_meeting_its_own_object_is_done(kube):
    fake, k = kube
    js = _jobset(fake)
    pg_rt = fake.store.resource_for("scheduling.k8s.io", "v1alpha2", "podgroups")
    mine = fake.store.create(pg_rt, NS, _podgroup("js-pg", js))
    applier = Applier(k, "c", "me")
    plan = pb.DecideResponse(
        actions=[_create(pb.ACTION_TYPE_CREATE_POD_GROUP, _podgroup("js-pg", js))]
    )
    assert applier.apply(js, plan).skipped == {"CreatePodGroup": 1}
    assert fake.store.get(pg_rt, NS, "js-pg") == mine
    assert _events(fake) == []
    applier.close()


@pytest.mark.waits
def test_a_foreign_job_is_an_object_conflict_too(kube):
    fake, k = kube
    js = _jobset(fake)
    jobs_rt = fake.store.resource_for("batch", "v1", "jobs")
    job = _job("js-workers-0", js)
    del job["metadata"]["ownerReferences"]
    fake.store.create(jobs_rt, NS, job)
    applier = Applier(k, "c", "me")
    plan = pb.DecideResponse(actions=[_create(pb.ACTION_TYPE_CREATE_JOB, _job("js-workers-0", js))])
    with pytest.raises(CreateConflict):
        applier.apply(js, plan)
    # Upstream's reason and words for a Job it could not create (spec §1.12).
    assert [(e["reason"], e["message"]) for e in _events(fake)] == [
        ("JobCreationFailed", 'job "js-workers-0" creation failed with error: jobs.batch '
                              '"js-workers-0" already exists')]
    applier.close()


@pytest.mark.waits
def test_a_job_create_that_fails_is_recorded_as_upstream_does(kube):
    """Upstream records every failed Job create at once; the shim recorded none but a conflict."""
    fake, k = kube
    js = _jobset(fake)
    fake.add_fault("POST", "/jobs$", code=500, count=1)
    applier = Applier(k, "c", "me")
    plan = pb.DecideResponse(actions=[_create(pb.ACTION_TYPE_CREATE_JOB, _job("js-workers-0", js))])
    with pytest.raises(ApiException):
        applier.apply(js, plan)
    assert [(e["reason"], e["message"]) for e in _events(fake)] == [
        ("JobCreationFailed", 'job "js-workers-0" creation failed with error: injected fault '
                              "(500)")]
    applier.close()


@pytest.mark.waits
def test_patch_pod_group_and_workload_are_uid_preconditioned_merge_patches(kube):
    fake, k = kube
    js = _jobset(fake)
    pg_rt = fake.store.resource_for("scheduling.k8s.io", "v1beta1", "podgroups")
    wl_rt = fake.store.resource_for("scheduling.k8s.io", "v1beta1", "workloads")
    pg = fake.store.create(
        pg_rt, NS, {**_podgroup("js-pg", js), "apiVersion": "scheduling.k8s.io/v1beta1"}
    )
    wl = fake.store.create(
        wl_rt,
        NS,
        {
            "apiVersion": "scheduling.k8s.io/v1beta1",
            "kind": "Workload",
            "metadata": {"name": "js-wl"},
            "spec": {
                "podGroupTemplates": [{"name": "t", "schedulingPolicy": {"gang": {"minCount": 2}}}]
            },
        },
    )
    # The gang version comes from the shim's flags when the action names none.
    applier = Applier(
        k,
        "c",
        "me",
        gang_kinds={
            "Workload": "scheduling.k8s.io/v1beta1",
            "PodGroup": "scheduling.k8s.io/v1beta1",
        },
    )
    wl_patch = {
        "spec": {
            "podGroupTemplates": [{"name": "t", "schedulingPolicy": {"gang": {"minCount": 5}}}]
        }
    }
    plan = pb.DecideResponse(
        actions=[
            pb.Action(
                type=pb.ACTION_TYPE_PATCH_POD_GROUP,
                name="js-pg",
                uid=pg["metadata"]["uid"],
                patch_json='{"spec":{"schedulingPolicy":{"gang":{"minCount":5}}}}',
            ),
            pb.Action(
                type=pb.ACTION_TYPE_PATCH_WORKLOAD,
                name="js-wl",
                api_version="scheduling.k8s.io/v1beta1",
                kind="Workload",
                uid=wl["metadata"]["uid"],
                patch_json=json.dumps(wl_patch),
            ),
        ]
    )
    assert applier.apply(js, plan).applied == {"PatchPodGroup": 1, "PatchWorkload": 1}
    assert fake.store.get(pg_rt, NS, "js-pg")["spec"]["schedulingPolicy"]["gang"]["minCount"] == 5
    assert fake.store.get(wl_rt, NS, "js-wl")["spec"] == wl_patch["spec"]
    patches = fake.writes(r"/(podgroups|workloads)/", "PATCH")
    assert [r.path.split("/")[3] for r in patches] == ["v1beta1", "v1beta1"]
    assert [r.body["metadata"]["uid"] for r in patches] == [
        pg["metadata"]["uid"],
        wl["metadata"]["uid"],
    ]
    # A recreated object (another uid) is not patched: the decider meant the old one.
    stale = pb.Action(
        type=pb.ACTION_TYPE_PATCH_POD_GROUP, name="js-pg", uid="old", patch_json='{"spec":{}}'
    )
    assert applier.apply(js, pb.DecideResponse(actions=[stale])).skipped == {"PatchPodGroup": 1}
    # Deletes without a version use the shim's too.
    delete = pb.Action(
        type=pb.ACTION_TYPE_DELETE_POD_GROUP, name="js-pg", uid=pg["metadata"]["uid"]
    )
    assert applier.apply(js, pb.DecideResponse(actions=[delete])).applied == {"DeletePodGroup": 1}
    left = fake.store.try_get(pg_rt, NS, "js-pg")
    assert left is None or left["metadata"].get("deletionTimestamp")  # foreground: GC finishes
    assert fake.writes(r"/podgroups/js-pg$", "DELETE")[0].path.startswith(
        "/apis/scheduling.k8s.io/v1beta1/"
    )
    applier.close()


# ---- flags and the request -----------------------------------------------------------------

BASE = ("batch/v1", "Job"), ("v1", "Service"), ("v1", "PersistentVolumeClaim")


@pytest.mark.parametrize(
    ("argv", "env", "version", "target", "gang"),
    [
        ([], {}, SCHED, "kubernetes", ((SCHED, "Workload"), (SCHED, "PodGroup"))),
        (
            ["--scheduling-api-version", "scheduling.k8s.io/v1beta1"],
            {},
            "scheduling.k8s.io/v1beta1",
            "kubernetes",
            (("scheduling.k8s.io/v1beta1", "Workload"), ("scheduling.k8s.io/v1beta1", "PodGroup")),
        ),
        (
            [],
            {"SHIM_SCHEDULING_API_VERSION": "scheduling.k8s.io/v1alpha1"},
            "scheduling.k8s.io/v1alpha1",
            "kubernetes",
            (("scheduling.k8s.io/v1alpha1", "Workload"),),
        ),
        (
            ["--gang-target", "scheduler-plugins"],
            {},
            SCHED,
            "scheduler-plugins",
            (("scheduling.x-k8s.io/v1alpha1", "PodGroup"),),
        ),
        (
            [],
            {"SHIM_GANG_TARGET": "volcano"},
            SCHED,
            "volcano",
            (("scheduling.volcano.sh/v1beta1", "PodGroup"),),
        ),
    ],
)
def test_flags_choose_the_gang_version_target_and_watched_kinds(argv, env, version, target, gang):
    cfg = parse_args(argv, env)
    assert (cfg.scheduling_api_version, cfg.gang_target) == (version, target)
    assert cfg.gang_kinds == gang
    assert cfg.owned_kinds == (*BASE, *gang)


@pytest.mark.parametrize(
    ("argv", "env"), [(["--gang-target", "slurm"], {}), ([], {"SHIM_GANG_TARGET": "slurm"})]
)
def test_an_unknown_gang_target_is_refused_at_start(argv, env, capsys):
    with pytest.raises(SystemExit) as exc:
        parse_args(argv, env)
    assert exc.value.code == 2
    assert "slurm" in capsys.readouterr().err


def test_the_shim_knows_every_target_the_decider_has():
    assert set(GANG_TARGETS) == set(TARGETS)


def test_build_decide_request_carries_the_gang_options():
    js = jobset("js", rjob("workers", 1))
    now = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
    req = build_decide_request(
        js,
        [],
        now,
        "jobset-decider.io/shim",
        {"RestartJob": True},
        gang_api_version="scheduling.k8s.io/v1alpha2",
        gang_target="volcano",
    )
    assert req.options.gang_api_version == "scheduling.k8s.io/v1alpha2"
    assert req.options.gang_target == "volcano"
    assert req.options.controller_name == "jobset-decider.io/shim"
    assert dict(req.options.feature_gates) == {"RestartJob": True}
    # Without them the fields stay empty: the decider's defaults apply.
    plain = build_decide_request(js, [], now)
    assert (plain.options.gang_api_version, plain.options.gang_target) == ("", "")


@pytest.mark.waits
def test_the_shim_passes_its_gang_flags_to_decide(kube):
    """The request a pass sends carries --scheduling-api-version and --gang-target."""
    from shim.config import Config
    from shim.controller import Shim

    fake, k = kube
    _jobset(fake)
    sent: list[pb.DecideRequest] = []

    class Recorder:
        def decide(self, request: pb.DecideRequest, timeout: float = 0,
                   metadata: object = None) -> pb.DecideResponse:
            sent.append(request)
            return pb.DecideResponse()

        def validate(self, request: pb.ValidateRequest, timeout: float = 0,
                     metadata: object = None) -> Any:
            return pb.ValidateResponse(valid=True)

    cfg = Config(
        controller_name="jobset-decider.io/shim",
        leader_elect=False,
        scheduling_api_version="scheduling.k8s.io/v1beta1",
        gang_target="scheduler-plugins",
        cache_sync_timeout=5,
    )
    shim = Shim(cfg, k, Recorder())  # type: ignore[arg-type]
    try:
        shim.start_informers(5)
        shim.reconcile((NS, "js"))
    finally:
        shim.kill()
        shim.applier.close()
    assert [(r.options.gang_api_version, r.options.gang_target) for r in sent] == [
        ("scheduling.k8s.io/v1beta1", "scheduler-plugins")
    ]


# ---- which names observe sends -------------------------------------------------------------


def _gang_names(name: str, api_version: str, target: str, policy: str) -> list[str]:
    body = jobset(name, rjob("workers", 2, parallelism=2), rjob("w", 1))
    body["metadata"]["uid"] = "11111111-2222-3333-4444-555555555555"
    body["metadata"]["annotations"] = {"jobset-decider.io/gang-policy": policy}
    plan = jobset_gang(body, api_version, [], target)
    assert plan is not None and plan.objects
    return [o["metadata"]["name"] for o in plan.objects]


@pytest.mark.parametrize("length", [1, 8, 50, 52, 53, 55, 63])
@pytest.mark.parametrize("policy", ["JobSetAsGang", "JobSetGangPerReplicatedJob"])
def test_the_name_rule_covers_every_gang_object_the_decider_names(length, policy):
    name = ("a" * length)[:length]
    for api_version in API_VERSIONS:
        for target in TARGETS:
            for obj_name in _gang_names(name, api_version, target, policy):
                assert may_be_gang_name(name, obj_name), (api_version, target, obj_name)


def test_the_name_rule_leaves_out_other_jobsets_objects():
    assert may_be_gang_name("train-1", "train-1-workers-0123456789")
    assert not may_be_gang_name("train-1", "train-10-workers-0123456789")
    assert not may_be_gang_name("train", "trainer")
