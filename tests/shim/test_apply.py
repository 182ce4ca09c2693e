"""Applying a plan: generic over kinds, idempotent, preconditioned."""

from __future__ import annotations

import json

import pytest
from kubernetes import client

from decider_api.v1 import decider_pb2 as pb
from fakekube import DEFAULT_RESOURCES, FakeKube, ResourceType
from shim.apply import Applier, StaleObservation
from shim.kube import Kube
from shim.kube_errors import ResourceNotServed
from tests.shim.helpers import jobset, rjob

pytestmark = pytest.mark.waits

WIDGET = ResourceType("example.com", "v1", "Widget", "widgets", builtin=False)


@pytest.fixture
def kube():
    with FakeKube(resources=(*DEFAULT_RESOURCES, WIDGET)) as fake:
        cfg = client.Configuration()
        cfg.host = fake.url
        yield fake, Kube(client.ApiClient(cfg))


def _jobset(fake):
    rt = fake.store.resource_for("jobset.x-k8s.io", "v1alpha2", "jobsets")
    return fake.store.create(rt, "default", jobset("js", rjob("workers", 1)))


def _create(kind_type, obj):
    return pb.Action(type=kind_type, name=obj["metadata"]["name"], object_json=json.dumps(obj))


def test_create_of_a_kind_added_later_goes_through_discovery(kube):
    fake, k = kube
    js = _jobset(fake)
    widget = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w1", "namespace": "default"},
        "spec": {"size": 3},
    }
    plan = pb.DecideResponse(actions=[_create(pb.ACTION_TYPE_CREATE_POD_GROUP, widget)])
    applier = Applier(k, "c", "me")
    result = applier.apply(js, plan)
    assert result.applied == {"CreatePodGroup": 1}
    stored = fake.store.get(WIDGET, "default", "w1")
    assert stored["spec"] == {"size": 3}
    # The same plan again: AlreadyExists counts as done.
    assert applier.apply(js, plan).skipped == {"CreatePodGroup": 1}
    applier.close()


def test_unknown_kind_is_an_error_not_a_silent_skip(kube):
    fake, k = kube
    js = _jobset(fake)
    gadget = {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}}
    applier = Applier(k, "c", "me")
    with pytest.raises(ResourceNotServed):
        applier.apply(js, pb.DecideResponse(actions=[_create(pb.ACTION_TYPE_CREATE_JOB, gadget)]))
    applier.close()


def test_status_write_on_a_stale_observation_raises(kube):
    fake, k = kube
    js = _jobset(fake)
    rt = fake.store.resource_for("jobset.x-k8s.io", "v1alpha2", "jobsets")
    fake.store.mutate(
        rt, "default", "js", lambda o: o["metadata"].setdefault("labels", {}).update(x="y"), False
    )
    plan = pb.DecideResponse(
        actions=[pb.Action(type=pb.ACTION_TYPE_UPDATE_STATUS, name="js")],
        status=pb.JobSetStatus(restarts=1),
        resource_version=js["metadata"]["resourceVersion"],
    )
    applier = Applier(k, "c", "me")
    with pytest.raises(StaleObservation):
        applier.apply(js, plan)
    assert "status" not in fake.store.get(rt, "default", "js")
    applier.close()


def test_delete_of_a_replaced_object_is_done_not_retried(kube):
    fake, k = kube
    js = _jobset(fake)
    svc_rt = fake.store.resource_for("", "v1", "services")
    svc = fake.store.create(
        svc_rt,
        "default",
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {}},
    )
    plan = pb.DecideResponse(
        actions=[
            pb.Action(type=pb.ACTION_TYPE_DELETE_JOB, name="gone", uid="u-1"),
            pb.Action(
                type=pb.ACTION_TYPE_DELETE_WORKLOAD,
                name="s",
                uid="not-" + svc["metadata"]["uid"],
                api_version="v1",
                kind="Service",
            ),
        ]
    )
    applier = Applier(k, "c", "me")
    result = applier.apply(js, plan)
    assert result.skipped == {"DeleteJob": 1, "DeleteWorkload": 1}
    assert fake.store.try_get(svc_rt, "default", "s") is not None  # the other object survives
    applier.close()


def test_events_are_recorded_on_the_jobset(kube):
    fake, k = kube
    js = _jobset(fake)
    plan = pb.DecideResponse(
        actions=[
            pb.Action(
                type=pb.ACTION_TYPE_EVENT,
                name="js",
                event=pb.Event(type="Warning", reason="Because", message="it happened"),
            )
        ]
    )
    applier = Applier(k, "my/controller", "me")
    applier.apply(js, plan)
    events, _ = fake.store.list(fake.store.resource_for("", "v1", "events"), "default")
    assert [(e["reason"], e["involvedObject"]["uid"]) for e in events] == [
        ("Because", js["metadata"]["uid"])
    ]
    assert events[0]["source"]["component"] == "my/controller"
    applier.close()


def test_patch_action_of_any_kind_is_a_uid_preconditioned_merge_patch(kube):
    fake, k = kube
    js = _jobset(fake)
    w = fake.store.create(
        WIDGET,
        "default",
        {
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"name": "w"},
            "spec": {"min": 1},
        },
    )
    patch = pb.Action(
        type=pb.ACTION_TYPE_PATCH_JOB,
        name="w",
        api_version="example.com/v1",
        kind="Widget",
        uid=w["metadata"]["uid"],
        patch_json='{"spec":{"min":4}}',
    )
    applier = Applier(k, "c", "me")
    assert applier.apply(js, pb.DecideResponse(actions=[patch])).applied == {"PatchJob": 1}
    assert fake.store.get(WIDGET, "default", "w")["spec"] == {"min": 4}
    stale = pb.Action(
        type=pb.ACTION_TYPE_PATCH_JOB,
        name="w",
        api_version="example.com/v1",
        kind="Widget",
        uid="someone-else",
        patch_json='{"spec":{"min":9}}',
    )
    assert applier.apply(js, pb.DecideResponse(actions=[stale])).skipped == {"PatchJob": 1}
    assert fake.store.get(WIDGET, "default", "w")["spec"] == {"min": 4}
    applier.close()
