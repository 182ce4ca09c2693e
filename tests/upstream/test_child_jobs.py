"""Upstream TestConstructJobsFromTemplate, TestGlobalJobIndex, TestGroupJobIndex,
TestGroupReplicas, TestGlobalReplicas and TestCreateHeadlessSvcIfNecessary: the child Jobs and
Service a pass creates, compared whole."""

from __future__ import annotations

import copy
import hashlib
from typing import Any

import pytest

from decider.core import constants as c
from support.builders import job, jobset, rjob, run, service

JS = "test-jobset"
NS = "default"
UID = "uid-test-jobset"
RJ = "replicated-job"
P = "jobset.sigs.k8s.io/"
EXCL = "alpha.jobset.sigs.k8s.io/exclusive-topology"
NSEL = "alpha.jobset.sigs.k8s.io/node-selector"
TOPO = "test-topology-domain"
POD_SPEC = {"restartPolicy": "OnFailure", "containers": [{"name": "main", "image": "busybox"}]}


def js_(*rjobs: dict[str, Any], **spec: Any) -> dict[str, Any]:
    meta_annotations = spec.pop("annotations", None)
    out = jobset(*rjobs, name=JS, namespace=NS, uid=UID, **spec)
    if meta_annotations:
        out["metadata"]["annotations"] = meta_annotations
    return out


def keys(
    rj: str,
    idx: int,
    replicas: int,
    *,
    global_replicas: int | None = None,
    global_idx: int | None = None,
    group: str = "default",
    group_replicas: int | None = None,
    group_idx: int | None = None,
    restarts: int = 0,
    job_restart: int | None = None,
) -> dict[str, str]:
    """The jobset.sigs.k8s.io/* keys upstream's labelAndAnnotateObject writes."""
    name = f"{JS}-{rj}-{idx}"
    out = {
        P + "jobset-name": JS,
        P + "jobset-uid": UID,
        P + "replicatedjob-name": rj,
        P + "replicatedjob-replicas": str(replicas),
        P + "global-replicas": str(replicas if global_replicas is None else global_replicas),
        P + "job-index": str(idx),
        P + "job-global-index": str(idx if global_idx is None else global_idx),
        P + "job-key": hashlib.sha1(f"{NS}/{name}".encode()).hexdigest(),
        P + "group-name": group,
        P + "group-replicas": str(replicas if group_replicas is None else group_replicas),
        P + "job-group-index": str(idx if group_idx is None else group_idx),
        P + "restart-attempt": str(restarts),
    }
    if job_restart is not None:
        out[P + "job-restart-attempt"] = str(job_restart)
    return out


def expected_job(
    rj: str,
    idx: int,
    k: dict[str, str],
    *,
    suspend: bool = False,
    subdomain: str | None = JS,
    job_annotations: dict[str, str] | None = None,
    pod_annotations: dict[str, str] | None = None,
    pod_spec_extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    pod_spec: dict[str, Any] = copy.deepcopy(POD_SPEC)
    if subdomain:
        pod_spec["subdomain"] = subdomain
    pod_spec.update(pod_spec_extra or {})
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": f"{JS}-{rj}-{idx}",
            "namespace": NS,
            "labels": dict(k),
            "annotations": {**k, **(job_annotations or {})},
            "ownerReferences": [
                {
                    "apiVersion": "jobset.x-k8s.io/v1alpha2",
                    "kind": "JobSet",
                    "name": JS,
                    "uid": UID,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "completionMode": "Indexed",
            "parallelism": 1,
            "completions": 1,
            "suspend": suspend,
            "template": {
                "metadata": {"labels": dict(k), "annotations": {**k, **(pod_annotations or {})}},
                "spec": pod_spec,
            },
        },
    }


def created(plan: Any) -> dict[str, dict[str, Any]]:
    return {a.name: a.object for a in plan.actions if a.type == "CreateJob"}


# ---- whole Jobs ----------------------------------------------------------------------------


def test_all_jobs_created_whole() -> None:
    plan = run(js_(rjob(RJ, 2)), objects=[service(JS)])
    assert created(plan) == {
        f"{JS}-{RJ}-{i}": expected_job(RJ, i, keys(RJ, i, 2)) for i in range(2)
    }
    assert keys(RJ, 0, 2)[P + "job-key"] == "027791c2c0a79daacbc05ab1512c28988581229f"


def test_template_labels_and_annotations_reach_job_and_pod() -> None:
    meta = {
        "labels": {"job-label-key1": "job-label-value1", "job-label-key2": "v2"},
        "annotations": {"job-annotation-key1": "job-annotation-value1"},
    }
    pod = {
        "metadata": {
            "labels": {"pod-label-key1": "pod-label-value1"},
            "annotations": {"pod-annotation-key1": "pod-annotation-value1"},
        },
        "spec": copy.deepcopy(POD_SPEC),
    }
    plan = run(js_(rjob(RJ, 2, job_meta=meta, pod=pod)), objects=[service(JS)])
    got = created(plan)[f"{JS}-{RJ}-1"]
    k = keys(RJ, 1, 2)
    assert got["metadata"]["labels"] == {**meta["labels"], **k}
    assert got["metadata"]["annotations"] == {**meta["annotations"], **k}
    assert got["spec"]["template"]["metadata"] == {
        "labels": {**pod["metadata"]["labels"], **k},
        "annotations": {**pod["metadata"]["annotations"], **k},
    }


def test_controller_keys_override_user_values() -> None:
    meta = {
        "labels": {P + "jobset-name": "spoof", P + "job-index": "9"},
        "annotations": {P + "group-name": "spoof"},
    }
    plan = run(js_(rjob(RJ, 1, job_meta=meta)), objects=[service(JS)])
    got = created(plan)[f"{JS}-{RJ}-0"]
    assert got["metadata"]["labels"][P + "jobset-name"] == JS
    assert got["metadata"]["labels"][P + "job-index"] == "0"
    assert got["metadata"]["annotations"][P + "group-name"] == "default"


# Upstream also checks a current-attempt *failed* Job's name; through a full pass a failed Job
# runs the failure policy and ends the pass before creation, so that case is not reachable here.
@pytest.mark.parametrize("state", ["active", "succeeded", "previous"])
def test_existing_job_name_is_not_created_again(state: str) -> None:
    status = {"restarts": 1} if state == "previous" else {"restarts": 0}
    existing = job(
        RJ, 0, js_name=JS, owner=UID, attempt=0, state="active" if state == "previous" else state
    )
    plan = run(
        js_(rjob(RJ, 2), status=status, failurePolicy={"maxRestarts": 3}),
        [existing],
        objects=[service(JS)],
    )
    assert list(created(plan)) == [f"{JS}-{RJ}-1"]
    assert created(plan)[f"{JS}-{RJ}-1"]["metadata"]["labels"][P + "restart-attempt"] == str(
        status["restarts"]
    )


def test_no_jobs_created_when_all_exist() -> None:
    plan = run(js_(rjob(RJ, 1)), [job(RJ, 0, js_name=JS, owner=UID)], objects=[service(JS)])
    assert created(plan) == {}


def test_blocking_recreate_creates_nothing_while_a_previous_job_exists() -> None:
    old = job(RJ, 0, js_name=JS, owner=UID, attempt=0, deleting=True)
    plan = run(
        js_(
            rjob(RJ, 2),
            status={"restarts": 1},
            failurePolicy={"restartStrategy": "BlockingRecreate"},
        ),
        [old],
        objects=[service(JS)],
    )
    assert created(plan) == {}
    # Recreate (the default) creates the free name at once.
    plan = run(
        js_(rjob(RJ, 2), status={"restarts": 1}, failurePolicy={}), [old], objects=[service(JS)]
    )
    assert list(created(plan)) == [f"{JS}-{RJ}-1"]


def test_multiple_replicated_jobs_global_indices() -> None:
    active_b0 = job("replicated-job-B", 0, js_name=JS, owner=UID)
    plan = run(
        js_(rjob("replicated-job-A", 1), rjob("replicated-job-B", 2)),
        [active_b0],
        objects=[service(JS)],
    )
    got = created(plan)
    assert list(got) == [f"{JS}-replicated-job-A-0", f"{JS}-replicated-job-B-1"]
    assert got[f"{JS}-replicated-job-A-0"] == expected_job(
        "replicated-job-A", 0, keys("replicated-job-A", 0, 1, global_replicas=3, group_replicas=3)
    )
    assert got[f"{JS}-replicated-job-B-1"] == expected_job(
        "replicated-job-B",
        1,
        keys(
            "replicated-job-B", 1, 2, global_replicas=3, global_idx=2, group_replicas=3, group_idx=2
        ),
    )


# ---- exclusive placement ----------------------------------------------------------------------

NS_STRATEGY_EXTRAS = {
    "tolerations": [
        {
            "key": "alpha.jobset.sigs.k8s.io/no-schedule",
            "operator": "Exists",
            "effect": "NoSchedule",
        }
    ]
}


def test_exclusive_placement_for_one_replicated_job() -> None:
    plan = run(
        js_(rjob(f"{RJ}-A", 1, job_meta={"annotations": {EXCL: TOPO}}), rjob(f"{RJ}-B", 1)),
        objects=[service(JS)],
    )
    got = created(plan)
    ka = keys(f"{RJ}-A", 0, 1, global_replicas=2, group_replicas=2)
    kb = keys(f"{RJ}-B", 0, 1, global_replicas=2, global_idx=1, group_replicas=2, group_idx=1)
    assert got[f"{JS}-{RJ}-A-0"] == expected_job(
        f"{RJ}-A", 0, ka, job_annotations={EXCL: TOPO}, pod_annotations={EXCL: TOPO}
    )
    assert got[f"{JS}-{RJ}-B-0"] == expected_job(f"{RJ}-B", 0, kb)
    assert EXCL not in got[f"{JS}-{RJ}-A-0"]["metadata"]["labels"]


def test_exclusive_placement_node_selector_strategy_for_one_replicated_job() -> None:
    ann = {EXCL: TOPO, NSEL: "true", P + "group-name": "default"}
    plan = run(
        js_(rjob(f"{RJ}-A", 1, job_meta={"annotations": ann}), rjob(f"{RJ}-B", 1)),
        objects=[service(JS)],
    )
    got = created(plan)[f"{JS}-{RJ}-A-0"]
    ka = keys(f"{RJ}-A", 0, 1, global_replicas=2, group_replicas=2)
    extras = {
        **NS_STRATEGY_EXTRAS,
        "nodeSelector": {"alpha.jobset.sigs.k8s.io/namespaced-job": f"{NS}_{JS}-{RJ}-A-0"},
    }
    assert got == expected_job(
        f"{RJ}-A",
        0,
        ka,
        job_annotations={EXCL: TOPO, NSEL: "true"},
        pod_annotations={EXCL: TOPO, NSEL: "true"},
        pod_spec_extra=extras,
    )
    assert "nodeSelector" not in created(plan)[f"{JS}-{RJ}-B-0"]["spec"]["template"]["spec"]


@pytest.mark.parametrize("strategy", [False, True], ids=["topology", "node-selector-strategy"])
def test_exclusive_placement_for_entire_jobset(strategy: bool) -> None:
    ann = {EXCL: TOPO, **({NSEL: "true"} if strategy else {})}
    plan = run(js_(rjob(f"{RJ}-A", 1), rjob(f"{RJ}-B", 1), annotations=ann), objects=[service(JS)])
    for rj in ("A", "B"):
        got = created(plan)[f"{JS}-{RJ}-{rj}-0"]
        assert {k: v for k, v in got["metadata"]["annotations"].items() if "alpha" in k} == ann
        assert {
            k: v
            for k, v in got["spec"]["template"]["metadata"]["annotations"].items()
            if "alpha" in k
        } == ann
        pod_spec = got["spec"]["template"]["spec"]
        if strategy:
            assert pod_spec["nodeSelector"] == {
                "alpha.jobset.sigs.k8s.io/namespaced-job": f"{NS}_{JS}-{RJ}-{rj}-0"
            }
            assert pod_spec["tolerations"] == NS_STRATEGY_EXTRAS["tolerations"]
        else:
            assert "nodeSelector" not in pod_spec and "tolerations" not in pod_spec


def test_replicated_job_exclusive_topology_overrides_the_jobsets() -> None:
    plan = run(
        js_(
            rjob(RJ, 1, job_meta={"annotations": {EXCL: "rack"}}),
            annotations={EXCL: "zone", NSEL: "true"},
        ),
        objects=[service(JS)],
    )
    got = created(plan)[f"{JS}-{RJ}-0"]
    assert got["metadata"]["annotations"][EXCL] == "rack"
    # The JobSet's node-selector flag stays: upstream copies it with the JobSet's key.
    assert got["metadata"]["annotations"][NSEL] == "true"
    assert got["spec"]["template"]["metadata"]["annotations"][EXCL] == "rack"
    assert (
        "alpha.jobset.sigs.k8s.io/namespaced-job" in got["spec"]["template"]["spec"]["nodeSelector"]
    )


def test_node_selector_strategy_keeps_existing_selector_and_tolerations() -> None:
    pod = {
        "spec": {
            **copy.deepcopy(POD_SPEC),
            "nodeSelector": {"pool": "a"},
            "tolerations": [{"key": "gpu", "operator": "Exists"}],
        }
    }
    plan = run(
        js_(rjob(RJ, 1, pod=pod, job_meta={"annotations": {EXCL: TOPO, NSEL: "1"}})),
        objects=[service(JS)],
    )
    pod_spec = created(plan)[f"{JS}-{RJ}-0"]["spec"]["template"]["spec"]
    assert pod_spec["nodeSelector"] == {
        "pool": "a",
        "alpha.jobset.sigs.k8s.io/namespaced-job": f"{NS}_{JS}-{RJ}-0",
    }
    assert pod_spec["tolerations"] == [
        {"key": "gpu", "operator": "Exists"},
        *NS_STRATEGY_EXTRAS["tolerations"],
    ]


# ---- network, suspend, coordinator, startup, volumes, restart attempts ------------------------


@pytest.mark.parametrize(
    ("network", "subdomain"),
    [
        pytest.param({"enableDNSHostnames": True}, JS, id="dns-hostnames-subdomain-is-jobset-name"),
        pytest.param(
            {"enableDNSHostnames": True, "subdomain": "custom"},
            "custom",
            id="dns-hostnames-custom-subdomain",
        ),
        pytest.param({"enableDNSHostnames": False}, None, id="dns-hostnames-disabled"),
    ],
)
def test_pod_dns_hostnames(network: dict[str, Any], subdomain: str | None) -> None:
    plan = run(js_(rjob(RJ, 1), network=network), objects=[service(subdomain or JS)])
    assert created(plan)[f"{JS}-{RJ}-0"]["spec"]["template"]["spec"].get("subdomain") == subdomain


@pytest.mark.parametrize("suspend", [True, False], ids=["suspend-job-set", "resume-job-set"])
def test_suspend_flag_always_set(suspend: bool) -> None:
    plan = run(js_(rjob(RJ, 1), suspend=suspend), objects=[service(JS)])
    assert created(plan)[f"{JS}-{RJ}-0"]["spec"]["suspend"] is suspend


def test_suspend_nil_creates_unsuspended_jobs() -> None:
    plan = run(js_(rjob(RJ, 1)), objects=[service(JS)])
    assert created(plan)[f"{JS}-{RJ}-0"]["spec"]["suspend"] is False


@pytest.mark.parametrize(
    ("network", "endpoint"),
    [
        pytest.param({"enableDNSHostnames": True}, f"{JS}-{RJ}-0-0.{JS}", id="coordinator"),
        pytest.param(
            {"enableDNSHostnames": True, "subdomain": "net"},
            f"{JS}-{RJ}-1-2.net",
            id="coordinator-custom-subdomain",
        ),
        pytest.param(
            {"enableDNSHostnames": False},
            f"{JS}-{RJ}-1-2.{JS}",
            id="coordinator-uses-subdomain-formula-without-dns",
        ),
    ],
)
def test_coordinator(network: dict[str, Any], endpoint: str) -> None:
    index = 0 if endpoint.endswith(f"0-0.{JS}") else 1
    pod = 0 if index == 0 else 2
    plan = run(
        js_(
            rjob(RJ, 2, parallelism=3, completions=3),
            network=network,
            coordinator={"replicatedJob": RJ, "jobIndex": index, "podIndex": pod},
        ),
        objects=[service("net"), service(JS)],
    )
    for got in created(plan).values():
        for meta in (got["metadata"], got["spec"]["template"]["metadata"]):
            assert meta["labels"][c.COORDINATOR] == endpoint
            assert meta["annotations"][c.COORDINATOR] == endpoint


def test_in_order_startup_creates_first_replicated_job_only() -> None:
    plan = run(
        js_(rjob(RJ, 1), rjob("second", 2), startupPolicy={"startupPolicyOrder": "InOrder"}),
        objects=[service(JS)],
    )
    assert list(created(plan)) == [f"{JS}-{RJ}-0"]


def test_volume_claim_policies_add_volumes_to_mounting_pods() -> None:
    pod = {
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "test-container",
                    "image": "busybox:latest",
                    "volumeMounts": [{"name": "test-volume", "mountPath": "/data"}],
                }
            ],
        }
    }
    vcp = [
        {
            "templates": [
                {
                    "metadata": {"name": "test-volume"},
                    "spec": {
                        "accessModes": ["ReadWriteMany"],
                        "resources": {"requests": {"storage": "1Gi"}},
                    },
                }
            ],
            "retentionPolicy": {"whenDeleted": "Retain"},
        }
    ]
    plan = run(js_(rjob(RJ, 1, pod=pod), volumeClaimPolicies=vcp), objects=[service(JS)])
    pod_spec = created(plan)[f"{JS}-{RJ}-0"]["spec"]["template"]["spec"]
    assert pod_spec == {
        **pod["spec"],
        "subdomain": JS,
        "volumes": [
            {"name": "test-volume", "persistentVolumeClaim": {"claimName": f"test-volume-{JS}"}}
        ],
    }


@pytest.mark.parametrize(
    ("gate", "restarts", "want"),
    [
        pytest.param(True, [1, 0], ["1", "0"],
                     id="job-restart-attempt-from-replicated-jobs-status"),
        pytest.param(False, [1, 0], [None, None], id="job-restart-attempt-not-added-without-gate"),
        # Deliberate difference (docs/decisions.md): upstream's labelAndAnnotateObject indexes
        # jobRestarts[jobIdx] and panics past the end; the missing entry reads as 0.
        pytest.param(True, [1], ["1", "0"], id="job-restart-attempt-past-a-short-list-is-0"),
    ],
)
def test_job_restart_attempt_label(gate: bool, restarts: list[int],
                                   want: list[str | None]) -> None:
    status = {
        "replicatedJobsStatus": [
            {
                "name": RJ,
                "ready": 0,
                "succeeded": 0,
                "failed": 0,
                "active": 0,
                "suspended": 0,
                "jobRestarts": restarts,
            }
        ]
    }
    plan = run(js_(rjob(RJ, 2), status=status), objects=[service(JS)], gates={"RestartJob": gate})
    got = created(plan)
    for i, value in enumerate(want):
        meta = got[f"{JS}-{RJ}-{i}"]["metadata"]
        pod_meta = got[f"{JS}-{RJ}-{i}"]["spec"]["template"]["metadata"]
        for m in (meta["labels"], meta["annotations"], pod_meta["labels"], pod_meta["annotations"]):
            assert m.get(P + "job-restart-attempt") == value


def test_restart_attempt_label_is_status_restarts() -> None:
    plan = run(
        js_(
            rjob(RJ, 1),
            status={"restarts": 4, "restartsCountTowardsMax": 2},
            failurePolicy={"maxRestarts": 9},
        ),
        objects=[service(JS)],
    )
    got = created(plan)[f"{JS}-{RJ}-0"]
    assert got["metadata"]["labels"][P + "restart-attempt"] == "4"
    assert got["spec"]["template"]["metadata"]["annotations"][P + "restart-attempt"] == "4"


# ---- indices and group counts (TestGlobalJobIndex, TestGroupJobIndex, ...) --------------------

GROUPED = [
    ("rj-a", 2, "default"),
    ("rj-b", 3, "group-b"),
    ("rj-c", 1, "default"),
    ("rj-d", 2, "group-b"),
]


@pytest.mark.parametrize(
    ("rj", "idx", "global_idx", "group_idx", "group_replicas"),
    [
        pytest.param("rj-a", 1, 1, 1, 3, id="first-replicated-job"),
        pytest.param("rj-b", 0, 2, 0, 5, id="first-of-second-group"),
        pytest.param("rj-c", 0, 5, 2, 3, id="group-index-skips-other-groups"),
        pytest.param("rj-d", 1, 7, 4, 5, id="last-job-of-jobset"),
    ],
)
def test_global_and_group_indices(
    rj: str, idx: int, global_idx: int, group_idx: int, group_replicas: int
) -> None:
    js = js_(*[rjob(n, r, group=g) for n, r, g in GROUPED])
    got = created(run(js, objects=[service(JS)]))[f"{JS}-{rj}-{idx}"]
    labels = got["metadata"]["labels"]
    assert labels[P + "global-replicas"] == "8"
    assert labels[P + "job-global-index"] == str(global_idx)
    assert labels[P + "job-group-index"] == str(group_idx)
    assert labels[P + "group-replicas"] == str(group_replicas)
    assert labels[P + "group-name"] == dict((n, g) for n, _, g in GROUPED)[rj]
    assert got["metadata"]["annotations"][P + "job-global-index"] == str(global_idx)


def test_zero_replica_replicated_job_counts_nothing() -> None:
    js = js_(rjob("empty", 0), rjob("w", 2))
    got = created(run(js, objects=[service(JS)]))
    assert list(got) == [f"{JS}-w-0", f"{JS}-w-1"]
    assert got[f"{JS}-w-1"]["metadata"]["labels"][P + "job-global-index"] == "1"
    assert got[f"{JS}-w-1"]["metadata"]["labels"][P + "global-replicas"] == "2"


# ---- headless Service (TestCreateHeadlessSvcIfNecessary) -------------------------------------


@pytest.mark.parametrize(
    ("network", "existing", "want"),
    [
        pytest.param(
            {"enableDNSHostnames": True}, [JS], None, id="headless-service-exists-not-created"
        ),
        pytest.param(
            {"enableDNSHostnames": True}, [], (JS, True), id="service-created-subdomain-not-set"
        ),
        pytest.param(
            {"enableDNSHostnames": True, "subdomain": "test-subdomain"},
            [],
            ("test-subdomain", True),
            id="service-created-subdomain-set",
        ),
        pytest.param(
            {"enableDNSHostnames": True, "publishNotReadyAddresses": False},
            [],
            (JS, False),
            id="service-created-publish-not-ready-false",
        ),
        pytest.param(
            {"enableDNSHostnames": True, "publishNotReadyAddresses": True},
            [],
            (JS, True),
            id="service-created-publish-not-ready-true",
        ),
        pytest.param({"enableDNSHostnames": False}, [], None, id="dns-hostnames-off-no-service"),
        pytest.param(
            {"enableDNSHostnames": True, "subdomain": "other"},
            [JS],
            ("other", True),
            id="service-of-another-name-does-not-count",
        ),
    ],
)
def test_headless_service(
    network: dict[str, Any], existing: list[str], want: tuple[str, bool] | None
) -> None:
    plan = run(js_(rjob(RJ, 1), network=network), objects=[service(n) for n in existing])
    services = [a for a in plan.actions if a.type == "CreateService"]
    if want is None:
        assert services == []
        return
    name, publish = want
    assert [a.name for a in services] == [name]
    assert services[0].object == {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": name,
            "namespace": NS,
            "ownerReferences": [
                {
                    "apiVersion": "jobset.x-k8s.io/v1alpha2",
                    "kind": "JobSet",
                    "name": JS,
                    "uid": UID,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "clusterIP": "None",
            "selector": {P + "jobset-name": JS},
            "publishNotReadyAddresses": publish,
        },
    }
    # The Service comes before the Jobs.
    assert plan.actions[0].type == "CreateService"


def test_undefaulted_network_gets_the_webhook_default() -> None:
    # Deliberate: upstream's controller skips the Service when spec.network is nil (a JobSet
    # created before webhook defaulting); we read the webhook's default (DNS hostnames on).
    plan = run(js_(rjob(RJ, 1)))
    assert [a.name for a in plan.actions if a.type == "CreateService"] == [JS]
    assert created(plan)[f"{JS}-{RJ}-0"]["spec"]["template"]["spec"]["subdomain"] == JS
