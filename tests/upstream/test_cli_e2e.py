"""A handful of upstream scenarios through the whole path: YAML as `kubectl get jobset,jobs,svc
-o yaml` prints it, on stdin of `decider decide -f -` / `decider validate`, plan JSON on stdout."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from typing import Any

import pytest
import yaml

pytestmark = pytest.mark.waits

NS = "e2e"
UID = "0b7c1f6e-5c2a-4c1e-9a51-7f0f6d1c0001"
NOW = "2026-03-01T12:00:00Z"
P = "jobset.sigs.k8s.io/"


def decider() -> list[str]:
    exe = shutil.which("decider", path=os.path.dirname(sys.executable))
    return [exe] if exe else [sys.executable, "-m", "decider.cli"]


def cli(args: list[str], docs: list[dict[str, Any]], code: int = 0) -> dict[str, Any]:
    text = yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": docs}, sort_keys=False)
    proc = subprocess.run(
        [*decider(), *args], input=text, capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == code, proc.stderr
    return json.loads(proc.stdout)


def the_jobset(status: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    pod = {
        "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "test-container", "image": "busybox:latest"}],
        }
    }
    body: dict[str, Any] = {
        "replicatedJobs": [
            {
                "name": "replicated-job-a",
                "replicas": 1,
                "template": {
                    "spec": {
                        "completionMode": "Indexed",
                        "parallelism": 1,
                        "completions": 1,
                        "template": pod,
                    }
                },
            },
            {
                "name": "replicated-job-b",
                "replicas": 3,
                "template": {
                    "spec": {
                        "completionMode": "Indexed",
                        "parallelism": 1,
                        "completions": 1,
                        "template": pod,
                    }
                },
            },
        ],
        "network": {"enableDNSHostnames": True},
        "successPolicy": {"operator": "All"},
    }
    body.update(spec)
    out = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "test-js", "namespace": NS, "uid": UID, "resourceVersion": "100"},
        "spec": body,
    }
    if status is not None:
        out["status"] = status
    return out


def child(
    rjob: str,
    idx: int,
    *,
    attempt: int = 0,
    status: dict[str, Any] | None = None,
    job_attempt: int | None = None,
) -> dict[str, Any]:
    labels = {
        P + "jobset-name": "test-js",
        P + "replicatedjob-name": rjob,
        P + "job-index": str(idx),
        P + "restart-attempt": str(attempt),
    }
    if job_attempt is not None:
        labels[P + "job-restart-attempt"] = str(job_attempt)
    name = f"test-js-{rjob}-{idx}"
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": NS,
            "uid": f"uid-{name}-{attempt}",
            "labels": labels,
            "ownerReferences": [
                {
                    "apiVersion": "jobset.x-k8s.io/v1alpha2",
                    "kind": "JobSet",
                    "name": "test-js",
                    "uid": UID,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "parallelism": 1,
            "completions": 1,
            "suspend": False,
            "template": {"metadata": {"labels": labels}, "spec": {}},
        },
        "status": status or {},
    }


def failed_status(reason: str, at: str = "2026-03-01T11:59:00Z") -> dict[str, Any]:
    return {
        "failed": 1,
        "conditions": [
            {
                "type": "FailureTarget",
                "status": "True",
                "reason": reason,
                "message": "",
                "lastTransitionTime": at,
            },
            {
                "type": "Failed",
                "status": "True",
                "reason": reason,
                "message": "",
                "lastTransitionTime": at,
            },
        ],
    }


SVC = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "test-js", "namespace": NS}}
ALL = [("replicated-job-a", 0), *[("replicated-job-b", i) for i in range(3)]]


def test_cli_creates_service_and_jobs() -> None:
    plan = cli(["decide", "-f", "-", "-o", "json", "--now", NOW], [the_jobset()])
    assert [(a["type"], a["name"]) for a in plan["actions"]] == [
        ("CreateService", "test-js"),
        *[("CreateJob", f"test-js-{r}-{i}") for r, i in ALL],
        ("UpdateStatus", "test-js"),
    ]
    job_b2 = plan["actions"][4]["object"]
    assert job_b2["metadata"]["labels"][P + "job-global-index"] == "3"
    assert job_b2["metadata"]["labels"][P + "global-replicas"] == "4"
    assert job_b2["spec"]["template"]["spec"]["subdomain"] == "test-js"
    assert plan["status"]["replicatedJobsStatus"] == [
        {
            "name": "replicated-job-b",
            "ready": 0,
            "succeeded": 0,
            "failed": 0,
            "active": 0,
            "suspended": 0,
        },
        {
            "name": "replicated-job-a",
            "ready": 0,
            "succeeded": 0,
            "failed": 0,
            "active": 0,
            "suspended": 0,
        },
    ]


def test_cli_restart_jobset_rule_then_delete_previous_attempt() -> None:
    fp = {
        "maxRestarts": 1,
        "rules": [
            {
                "name": "Rule1",
                "action": "RestartJobSet",
                "onJobFailureReasons": ["PodFailurePolicy"],
            }
        ],
    }
    jobs = [child(r, i) for r, i in ALL]
    jobs[0] = child("replicated-job-a", 0, status=failed_status("PodFailurePolicy"))
    plan = cli(["decide", "-f", "-", "-o", "json", "--now", NOW],
               [the_jobset(failurePolicy=fp), SVC, *jobs])
    message = (
        "applying RestartJobSet failure policy action "
        "(first failed job: test-js-replicated-job-a-0)"
    )
    assert [a["type"] for a in plan["actions"]] == ["UpdateStatus", "Event", "Event"]
    assert [a["event"] for a in plan["actions"][1:]] == [
        {"type": "Warning", "reason": "FailurePolicy_Rule1", "message": message},
        {"type": "Warning", "reason": "RestartJobSetFailurePolicyAction", "message": message},
    ]
    status = plan["status"]
    assert (status["restarts"], status["restartsCountTowardsMax"]) == (1, 1)
    assert [
        (x["type"], x["status"], x["reason"], x["message"], x["lastTransitionTime"])
        for x in status["conditions"]
    ] == [("RestartingJobSet", "True", "FailurePolicy_Rule1", message, NOW)]
    # Next pass: every Job of attempt 0 goes, in the foreground, with its UID as precondition.
    nxt = cli(
        ["decide", "-f", "-", "-o", "json", "--now", NOW],
        [the_jobset(failurePolicy=fp, status=status), SVC, *jobs],
    )
    deletes = [a for a in nxt["actions"] if a["type"] == "DeleteJob"]
    assert [(a["name"], a["uid"], a["propagationPolicy"]) for a in deletes] == [
        (f"test-js-{r}-{i}", f"uid-test-js-{r}-{i}-0", "Foreground") for r, i in ALL
    ]
    assert not [a for a in nxt["actions"] if a["type"] == "CreateJob"]


def test_cli_restart_job_gate_and_label() -> None:
    fp = {"maxRestarts": 2, "rules": [{"name": "one", "action": "RestartJob"}]}
    jobs = [child(r, i, job_attempt=0) for r, i in ALL]
    jobs[2] = child("replicated-job-b", 1, job_attempt=0, status=failed_status("DeadlineExceeded"))
    plan = cli(
        ["decide", "-f", "-", "-o", "json", "--now", NOW, "--feature-gates", "RestartJob=true"],
        [the_jobset(failurePolicy=fp), SVC, *jobs],
    )
    rjs = {e["name"]: e for e in plan["status"]["replicatedJobsStatus"]}
    assert rjs["replicated-job-b"]["jobRestarts"] == [0, 1, 0]
    assert rjs["replicated-job-b"]["jobRestartsCountTowardsMax"] == [0, 1, 0]
    assert "jobRestarts" not in rjs["replicated-job-a"]
    assert [a["event"]["reason"] for a in plan["actions"] if a["type"] == "Event"] == [
        "RestartJobFailurePolicyAction"
    ]
    # The failed Job is now of a previous attempt: deleted, and recreated once gone.
    jobs_after = [j for j in jobs if j["metadata"]["name"] != "test-js-replicated-job-b-1"]
    nxt = cli(
        ["decide", "-f", "-", "-o", "json", "--now", NOW, "--feature-gates", "RestartJob=true"],
        [the_jobset(failurePolicy=fp, status=plan["status"]), SVC, *jobs_after],
    )
    created = [a for a in nxt["actions"] if a["type"] == "CreateJob"]
    assert [a["name"] for a in created] == ["test-js-replicated-job-b-1"]
    labels = created[0]["object"]["metadata"]["labels"]
    assert (labels[P + "restart-attempt"], labels[P + "job-restart-attempt"]) == ("0", "1")


def test_cli_ttl_deletes_finished_jobset_last() -> None:
    status = {
        "terminalState": "Completed",
        "conditions": [
            {
                "type": "Completed",
                "status": "True",
                "reason": "AllJobsCompleted",
                "message": "jobset completed successfully",
                "lastTransitionTime": "2026-03-01T11:59:58Z",
            }
        ],
    }
    done = {"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]}
    jobs = [child(r, i, status=done) for r, i in ALL]
    js = the_jobset(status=status, ttlSecondsAfterFinished=2)
    plan = cli(["decide", "-f", "-", "-o", "json", "--now", "2026-03-01T11:59:59Z"],
               [js, SVC, *jobs])
    assert (plan["requeueAfterSeconds"], plan["requeueAfter"]) == (1, "1s")
    assert not [a for a in plan["actions"] if a["type"] == "DeleteJobSet"]
    # The exact remainder, in protobuf's JSON form of a Duration; the seconds round it up.
    plan = cli(["decide", "-f", "-", "-o", "json", "--now", "2026-03-01T11:59:58.988Z"],
               [js, SVC, *jobs])
    assert (plan["requeueAfterSeconds"], plan["requeueAfter"]) == (2, "1.012s")
    plan = cli(["decide", "-f", "-", "-o", "json", "--now", NOW], [js, SVC, *jobs])
    assert plan["actions"][-1]["type"] == "DeleteJobSet"
    assert plan["actions"][-1]["propagationPolicy"] == "Foreground"
    # No requeue: no requeueAfter, the plan prints as it always did.
    assert plan["requeueAfterSeconds"] == 0 and "requeueAfter" not in plan


@pytest.mark.parametrize(
    ("controller", "acts"),
    [("", False), ("other-controller", True)],
    ids=["managed-by-other-controller-untouched", "decide-as-that-controller"],
)
def test_cli_managed_by(controller: str, acts: bool) -> None:
    js = the_jobset(managedBy="other-controller", suspend=False)
    args = ["decide", "-f", "-", "-o", "json", "--now", NOW]
    if controller:
        args += ["--controller-name", controller]
    plan = cli(args, [js])
    assert bool(plan["actions"]) is acts


@pytest.mark.parametrize(
    ("gates", "valid"),
    [("ElasticJobSet=false", False), ("ElasticJobSet=true", True)],
    ids=["elastic-gate-disabled-rejects-scaling", "elastic-gate-enabled-allows-scaling"],
)
def test_cli_validate_elastic_scaling_update(tmp_path: Any, gates: str, valid: bool) -> None:
    old = the_jobset()
    new = the_jobset()
    for rj in new["spec"]["replicatedJobs"][:1]:
        rj["template"]["spec"]["parallelism"] = 4
        rj["template"]["spec"]["completions"] = 4
    old_file = tmp_path / "old.yaml"
    old_file.write_text(yaml.safe_dump(old))
    out = cli(
        ["validate", "-f", "-", "--old", str(old_file), "--feature-gates", gates],
        [new],
        code=0 if valid else 2,
    )
    assert out["valid"] is valid


def test_cli_elastic_scaling_patches_live_jobs() -> None:
    js = the_jobset()
    js["spec"]["replicatedJobs"][0]["template"]["spec"].update(parallelism=4, completions=4)
    jobs = [child(r, i, status={"active": 1}) for r, i in ALL]
    plan = cli(
        ["decide", "-f", "-", "-o", "json", "--now", NOW, "--feature-gates", "ElasticJobSet=true"],
        [js, SVC, *jobs],
    )
    patches = [(a["name"], a["patch"]) for a in plan["actions"] if a["type"] == "PatchJob"]
    assert patches == [
        ("test-js-replicated-job-a-0", {"spec": {"parallelism": 4, "completions": 4}})
    ]


@pytest.fixture(scope="module")
def server():
    from decider.service.server import BackgroundServer

    with BackgroundServer() as srv:
        yield srv


@pytest.mark.parametrize("via_server", [False, True], ids=["in-process", "grpc"])
def test_cli_job_of_an_earlier_jobset_holds_a_child_name(via_server: bool, server: Any) -> None:
    # `kubectl get jobset,jobs` lists every Job: test-js-replicated-job-b-1 is a leftover of an
    # earlier JobSet named test-js (another UID). Upstream's createJobs meets AlreadyExists for
    # it, records JobCreationFailed and returns before the status write (no UpdateStatus).
    leftover = child("replicated-job-b", 1)
    leftover["metadata"]["ownerReferences"][0]["uid"] = "uid-of-the-earlier-test-js"
    args = ["decide", "-f", "-", "-o", "json", "--now", NOW]
    plan = cli(args + (["--server", server.target] if via_server else []), [the_jobset(), SVC,
                                                                           leftover])
    assert [(a["type"], a["name"]) for a in plan["actions"]] == [
        ("CreateJob", "test-js-replicated-job-a-0"),
        ("CreateJob", "test-js-replicated-job-b-0"),
        ("CreateJob", "test-js-replicated-job-b-2"),
        ("Event", "test-js"),
    ]
    assert plan["actions"][-1]["event"] == {
        "type": "Warning",
        "reason": "JobCreationFailed",
        "message": 'job "test-js-replicated-job-b-1" creation failed with error: jobs.batch '
        '"test-js-replicated-job-b-1" already exists',
    }
    assert plan["requeueAfterSeconds"] >= 1
