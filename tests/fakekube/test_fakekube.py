"""The fake API server is strict where a real one is: clients get the same answers."""

from __future__ import annotations

import json

import pytest
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from fakekube import FakeKube, JobSimulator
from support.waiting import wait_for

pytestmark = pytest.mark.waits

NS = "default"


def _job(name="j", **spec):
    body = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "template": {
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}
            }
        },
    }
    body["spec"].update(spec)
    return body


def _js(name="js"):
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": name},
        "spec": {"replicatedJobs": []},
    }


@pytest.fixture
def kube():
    with FakeKube(bookmark_interval=0.2) as fake:
        cfg = client.Configuration()
        cfg.host = fake.url
        api = client.ApiClient(cfg)
        yield fake, api


def _custom(api):
    return client.CustomObjectsApi(api)


def _code(fn):
    with pytest.raises(ApiException) as info:
        fn()
    return info.value.status, json.loads(info.value.body or "{}").get("reason")


def test_unknown_kind_is_404(kube):
    _, api = kube
    co = _custom(api)
    assert (
        _code(lambda: co.list_namespaced_custom_object("example.com", "v1", NS, "things"))[0] == 404
    )


def test_create_existing_name_is_already_exists(kube):
    _, api = kube
    b = client.BatchV1Api(api)
    b.create_namespaced_job(NS, _job())
    assert _code(lambda: b.create_namespaced_job(NS, _job())) == (409, "AlreadyExists")


def test_missing_name_is_invalid_and_generate_name_works(kube):
    _, api = kube
    b = client.BatchV1Api(api)
    body = _job()
    del body["metadata"]["name"]
    assert _code(lambda: b.create_namespaced_job(NS, body)) == (422, "Invalid")
    body["metadata"]["generateName"] = "gen-"
    made = b.create_namespaced_job(NS, body)
    assert made.metadata.name.startswith("gen-") and len(made.metadata.name) == 9


def test_invalid_job_is_rejected(kube):
    _, api = kube
    b = client.BatchV1Api(api)
    body = _job(completionMode="Indexed")
    body["spec"]["template"]["spec"]["restartPolicy"] = "Always"
    status, reason = _code(lambda: b.create_namespaced_job(NS, body))
    assert (status, reason) == (422, "Invalid")


def test_update_with_stale_resource_version_conflicts(kube):
    _, api = kube
    co = _custom(api)
    made = co.create_namespaced_custom_object("jobset.x-k8s.io", "v1alpha2", NS, "jobsets", _js())
    made["status"] = {"restarts": 1}
    co.replace_namespaced_custom_object_status(
        "jobset.x-k8s.io", "v1alpha2", NS, "jobsets", "js", made
    )
    made["status"] = {"restarts": 2}
    assert _code(
        lambda: co.replace_namespaced_custom_object_status(
            "jobset.x-k8s.io", "v1alpha2", NS, "jobsets", "js", made
        )
    ) == (409, "Conflict")
    del made["metadata"]["resourceVersion"]
    # Custom resources refuse unconditional updates.
    assert (
        _code(
            lambda: co.replace_namespaced_custom_object(
                "jobset.x-k8s.io", "v1alpha2", NS, "jobsets", "js", made
            )
        )[0]
        == 422
    )


def test_status_subresource_separates_spec_and_status(kube):
    fake, api = kube
    co = _custom(api)
    made = co.create_namespaced_custom_object(
        "jobset.x-k8s.io", "v1alpha2", NS, "jobsets", dict(_js(), status={"restarts": 9})
    )
    assert "status" not in made  # dropped on create
    made["status"] = {"restarts": 1}
    made["spec"]["suspend"] = True
    after = co.replace_namespaced_custom_object_status(
        "jobset.x-k8s.io", "v1alpha2", NS, "jobsets", "js", made
    )
    assert after["status"] == {"restarts": 1} and "suspend" not in after["spec"]
    after["status"] = {"restarts": 5}
    after["spec"]["suspend"] = True
    again = co.replace_namespaced_custom_object(
        "jobset.x-k8s.io", "v1alpha2", NS, "jobsets", "js", after
    )
    assert again["status"] == {"restarts": 1} and again["spec"]["suspend"] is True
    assert again["metadata"]["generation"] == 2


def _raw_patch(api, path, body, content_type):
    resp = api.call_api(
        *api.param_serialize("PATCH", path, header_params={"Content-Type": content_type}, body=body)
    )
    resp.read()
    return resp.status


def test_strategic_merge_is_refused_for_custom_resources(kube):
    _, api = kube
    co = _custom(api)
    co.create_namespaced_custom_object("jobset.x-k8s.io", "v1alpha2", NS, "jobsets", _js())
    path = f"/apis/jobset.x-k8s.io/v1alpha2/namespaces/{NS}/jobsets/js"
    body = {"spec": {"suspend": True}}
    assert _raw_patch(api, path, body, "application/strategic-merge-patch+json") == 415
    assert _raw_patch(api, path, body, "application/merge-patch+json") == 200
    # A built-in type takes strategic merge (what the typed client sends): finalizers merge
    # as a set instead of being replaced.
    b = client.BatchV1Api(api)
    made = _job()
    made["metadata"]["finalizers"] = ["a/one"]
    b.create_namespaced_job(NS, made)
    patched = b.patch_namespaced_job("j", NS, {"metadata": {"finalizers": ["b/two"]}})
    assert patched.metadata.finalizers == ["a/one", "b/two"]


def test_delete_uid_precondition_mismatch_conflicts(kube):
    _, api = kube
    b = client.BatchV1Api(api)
    b.create_namespaced_job(NS, _job())
    opts = client.V1DeleteOptions(preconditions=client.V1Preconditions(uid="other"))
    assert _code(lambda: b.delete_namespaced_job("j", NS, body=opts))[0] == 409
    assert b.read_namespaced_job("j", NS).metadata.name == "j"


def test_job_template_is_immutable_unless_suspended_and_never_started(kube):
    _, api = kube
    b = client.BatchV1Api(api)
    b.create_namespaced_job(NS, _job(suspend=True))
    ok = b.patch_namespaced_job(
        "j", NS, {"spec": {"template": {"spec": {"nodeSelector": {"zone": "a"}}}}}
    )
    assert ok.spec.template.spec.node_selector == {"zone": "a"}
    b.patch_namespaced_job_status("j", NS, {"status": {"startTime": "2026-01-01T00:00:00Z"}})
    assert (
        _code(
            lambda: b.patch_namespaced_job(
                "j", NS, {"spec": {"template": {"spec": {"nodeSelector": {"zone": "b"}}}}}
            )
        )[0]
        == 422
    )


def _owned_pod(fake, job_uid, name="p", block=True):
    pods = fake.store.resource_for("", "v1", "pods")
    fake.store.create(
        pods,
        NS,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "finalizers": ["test/hold"],
                "ownerReferences": [
                    {
                        "apiVersion": "batch/v1",
                        "kind": "Job",
                        "name": "j",
                        "uid": job_uid,
                        "controller": True,
                        "blockOwnerDeletion": block,
                    }
                ],
            },
            "spec": {"containers": [{"name": "c", "image": "x"}]},
        },
    )
    return pods


def test_foreground_deletion_waits_for_dependents(kube):
    fake, api = kube
    b = client.BatchV1Api(api)
    job = b.create_namespaced_job(NS, _job())
    pods = _owned_pod(fake, job.metadata.uid)
    b.delete_namespaced_job("j", NS, body=client.V1DeleteOptions(propagation_policy="Foreground"))
    # The collector gets to the dependent (in the background, as the real one does)...
    pod = wait_for(lambda: fake.store.get(pods, NS, "p")["metadata"].get("deletionTimestamp"),
                   what="the dependent being deleted")
    assert pod
    # ... and the Job waits for it, held by its finalizer.
    held = b.read_namespaced_job("j", NS)
    assert held.metadata.deletion_timestamp is not None
    assert "foregroundDeletion" in held.metadata.finalizers
    # The pod's last finalizer goes (a kubelet finishing), then the Job follows.
    fake.store.mutate(pods, NS, "p", lambda p: p["metadata"].pop("finalizers"), False)
    wait_for(lambda: fake.store.try_get(fake.store.resource_for("batch", "v1", "jobs"), NS, "j")
             is None, what="the job removed after its dependents")
    assert _code(lambda: b.read_namespaced_job("j", NS))[0] == 404


def test_background_deletion_and_default_orphaning_of_jobs(kube):
    fake, api = kube
    b = client.BatchV1Api(api)
    job = b.create_namespaced_job(NS, _job())
    pods = _owned_pod(fake, job.metadata.uid, block=False)
    fake.store.mutate(pods, NS, "p", lambda p: p["metadata"].pop("finalizers"), False)
    b.delete_namespaced_job("j", NS)  # no policy: batch/v1 orphans
    # The collector orphans the dependent (its owner reference removed), then the Job goes.
    wait_for(lambda: fake.store.get(pods, NS, "p")["metadata"].get("ownerReferences") == [],
             what="the dependent orphaned")
    wait_for(lambda: fake.store.try_get(fake.store.resource_for("batch", "v1", "jobs"), NS, "j")
             is None, what="the job gone")
    assert _code(lambda: b.read_namespaced_job("j", NS))[0] == 404
    assert fake.store.get(pods, NS, "p")["metadata"].get("ownerReferences") == []

    job = b.create_namespaced_job(NS, _job("k"))
    _owned_pod(fake, job.metadata.uid, name="q", block=False)
    fake.store.mutate(pods, NS, "q", lambda p: p["metadata"].pop("finalizers"), False)
    b.delete_namespaced_job("k", NS, body=client.V1DeleteOptions(propagation_policy="Background"))
    wait_for(lambda: fake.store.try_get(pods, NS, "q") is None, what="the dependent collected")


def test_watch_resumes_with_bookmarks_and_expires_with_410(kube):
    fake, api = kube
    b = client.BatchV1Api(api)
    listed = b.list_namespaced_job(NS)
    b.create_namespaced_job(NS, _job())
    w = watch.Watch()
    seen = []
    for ev in w.stream(
        b.list_namespaced_job,
        NS,
        resource_version=listed.metadata.resource_version,
        allow_watch_bookmarks=True,
        timeout_seconds=2,
    ):
        seen.append(ev["type"])
        if "BOOKMARK" in seen:
            w.stop()
    assert seen[0] == "ADDED" and "BOOKMARK" in seen
    fake.store.compact()
    cfg_api = client.ApiClient(api.configuration)
    resp = cfg_api.call_api(
        *cfg_api.param_serialize(
            "GET",
            f"/apis/batch/v1/namespaces/{NS}/jobs",
            query_params=[("watch", "true"), ("resourceVersion", listed.metadata.resource_version)],
        )
    )
    line = resp.response.readline() if hasattr(resp.response, "readline") else None
    body = b"".join(resp.response.stream()) if line is None else line
    event = json.loads(body.decode().strip().splitlines()[0])
    assert event["type"] == "ERROR" and event["object"]["code"] == 410


def _job_status(b: client.BatchV1Api, name: str = "j") -> client.V1JobStatus:
    # Until the simulator's first sync a Job has no status at all: read that as an empty one,
    # so a wait polls instead of failing on None.
    return b.read_namespaced_job_status(name, NS).status or client.V1JobStatus()


def test_job_simulator_reports_batch_v1_conditions(kube):
    fake, api = kube
    b = client.BatchV1Api(api)
    with JobSimulator(fake.store) as sim:
        b.create_namespaced_job(NS, _job(parallelism=2))
        wait_for(lambda: (_job_status(b).ready or 0) >= 2, what="two pods ready")
        sim.fail(NS, "j", reason="PodFailurePolicy", message="exit code 42")
        st = b.read_namespaced_job_status("j", NS).status
        types = [(c.type, c.reason) for c in st.conditions]
        assert types == [("FailureTarget", "PodFailurePolicy"), ("Failed", "PodFailurePolicy")]
        assert st.conditions[-1].last_transition_time is not None
        assert st.active == 0 and st.failed == 1


def test_a_suspended_job_loses_its_start_time_and_a_resumed_one_starts_again(kube):
    # As kube-controller-manager 1.37's Job controller does (tests/e2e saw it): suspension
    # clears status.startTime and drops `active` (omitempty); resuming sets a new startTime.
    fake, api = kube
    b = client.BatchV1Api(api)
    with JobSimulator(fake.store):
        b.create_namespaced_job(NS, _job(parallelism=2))
        first = wait_for(lambda: _job_status(b).start_time, what="the Job started")
        b.patch_namespaced_job("j", NS, {"spec": {"suspend": True}})
        st = wait_for(lambda: (lambda s: s if any(c.type == "Suspended" and c.status == "True"
                                                  for c in s.conditions or []) else None)(
            _job_status(b)), what="the Job suspended")
        assert st.start_time is None and st.active is None and st.ready == 0
        raw = fake.store.try_get(fake.store.resources["batch/v1/jobs"], NS, "j")
        assert "active" not in raw["status"] and "startTime" not in raw["status"]
        b.patch_namespaced_job("j", NS, {"spec": {"suspend": False}})
        resumed = wait_for(lambda: _job_status(b).start_time, what="the Job resumed")
        assert resumed >= first


def test_an_indexed_jobs_pods_carry_their_completion_index(kube):
    fake, api = kube
    b, core = client.BatchV1Api(api), client.CoreV1Api(api)
    with JobSimulator(fake.store, pods=True):
        b.create_namespaced_job(NS, _job(parallelism=2, completions=2,
                                         completionMode="Indexed"))
        pods = wait_for(lambda: (lambda ps: ps if len(ps) == 2 else None)(
            core.list_namespaced_pod(NS).items), what="two pods")
        key = "batch.kubernetes.io/job-completion-index"
        assert sorted(p.metadata.labels[key] for p in pods) == ["0", "1"]
        assert all(p.metadata.annotations[key] == p.metadata.labels[key] for p in pods)


def test_a_throttling_fault_answers_429_with_retry_after_then_serves(kube):
    fake, api = kube
    fault = fake.add_fault("POST", "/jobs$", code=429, count=1, retry_after=7)
    batch = client.BatchV1Api(api)
    with pytest.raises(ApiException) as info:
        batch.create_namespaced_job(NS, _job("t"))
    assert info.value.status == 429
    assert info.value.headers["Retry-After"] == "7"
    assert json.loads(info.value.body)["reason"] == "TooManyRequests"
    batch.create_namespaced_job(NS, _job("t"))  # the fault is used up: served
    assert fault.hits == 1


# What v1.37.2's and v1.36.3's API servers fill in on create, as tests/e2e/test_gang.py reads
# it back: a spec given without these fields is stored with them, one given them keeps its own.
@pytest.mark.parametrize(("version", "plural", "spec", "filled"), [
    pytest.param("v1beta1", "podgroups", {"schedulingPolicy": {"basic": {}}},
                 {"disruptionMode": {"single": {}}, "priority": 0}, id="v1beta1-podgroup"),
    pytest.param("v1alpha3", "compositepodgroups", {"schedulingPolicy": {"basic": {}}},
                 {"disruptionMode": {"single": {}}, "priority": 0},
                 id="v1alpha3-compositepodgroup"),
    pytest.param("v1alpha2", "podgroups", {"schedulingPolicy": {"basic": {}}},
                 {"disruptionMode": "Pod"}, id="v1alpha2-podgroup"),
    pytest.param("v1beta1", "podgroups",
                 {"schedulingPolicy": {"basic": {}}, "priorityClassName": "high"},
                 {"disruptionMode": {"single": {}}}, id="priority-class-leaves-priority"),
    pytest.param("v1beta1", "podgroups",
                 {"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}},
                 {"priority": 0}, id="given-disruption-mode-kept"),
    pytest.param("v1beta1", "workloads", {"compositePodGroupTemplates": []},
                 {"podGroupTemplates": None}, id="v1beta1-workload-null-templates"),
])
def test_scheduling_objects_get_the_api_servers_defaults(kube, version, plural, spec, filled):
    _, api = kube
    kind = {"podgroups": "PodGroup", "compositepodgroups": "CompositePodGroup",
            "workloads": "Workload"}[plural]
    body = {"apiVersion": f"scheduling.k8s.io/{version}", "kind": kind,
            "metadata": {"name": "g"}, "spec": dict(spec)}
    _custom(api).create_namespaced_custom_object("scheduling.k8s.io", version, NS, plural, body)
    got = _custom(api).get_namespaced_custom_object("scheduling.k8s.io", version, NS, plural, "g")
    assert got["spec"] == {**spec, **filled}
