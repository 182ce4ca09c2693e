"""Every RPC from the installed client to a real decider, as a scheduler's program would call it:
objects read as kubectl prints them, requests built by observe, answers printed by render and
table."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import grpc
import pytest
from conftest import Server
from helpers import EXAMPLES

from decider_api.v1 import decider_pb2 as pb
from decider_client import DeciderClient, observe, render, table
from decider_client.documents import load_objects, split_jobset, split_subject

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _example(name: str) -> tuple[dict, list[dict]]:
    path = EXAMPLES / name
    return split_jobset(load_objects(path.read_text(), str(path)), str(path))


def test_decide_plans_the_leader_and_the_workers(server: Server) -> None:
    jobset, owned = _example("leader-workers.yaml")
    with DeciderClient(server.target, timeout=30) as client:
        plan = render.plan_to_dict(client.decide(observe.build_decide_request(jobset, owned, NOW)))
    assert [(a["type"], a["name"]) for a in plan["actions"]] == [
        ("CreateService", "trainer"), ("CreateJob", "trainer-leader-0"),
        ("CreateJob", "trainer-workers-0"), ("CreateJob", "trainer-workers-1"),
        ("CreateJob", "trainer-workers-2"), ("UpdateStatus", "trainer")]
    job = plan["actions"][1]["object"]
    assert job["metadata"]["labels"]["jobset.sigs.k8s.io/replicatedjob-name"] == "leader"
    text = table.plan(plan)
    assert text.splitlines()[0].split() == ["TYPE", "NAME", "DETAIL"]
    assert "create 3 job(s) of replicated job workers (restart attempt 0)" in text


def test_whole_objects_are_summarized_by_the_server_alike(server: Server) -> None:
    jobset, owned = _example("trainer-restarted.yaml")
    typed = observe.build_decide_request(jobset, owned, NOW)
    whole = observe.build_raw_decide_request(jobset, owned, NOW)
    assert whole.observed_json and not typed.observed_json
    with DeciderClient(server.target, timeout=30) as client:
        assert client.decide(typed) == client.decide(whole)


def test_simulate_says_where_a_failure_leads(server: Server) -> None:
    jobset, owned = _example("trainer-restarted.yaml")
    request = pb.SimulateRequest(
        observed=observe.build_decide_request(jobset, owned, NOW),
        events=[pb.SimulationEvent(type=pb.SIMULATION_EVENT_TYPE_JOB_FAILED,
                                   job="trainer-workers-1")])
    with DeciderClient(server.target, timeout=30) as client:
        sim = render.simulation_to_dict(client.simulate(request))
    assert sim["outcome"]["restartsLeft"] == 0
    assert sim["outcome"]["failurePolicy"][0]["action"] == "RestartJobSet"
    assert table.simulation(sim).splitlines()[0].split() == [
        "PASS", "AT", "EVENTS", "ACTIONS", "EXPLANATION"]


def test_validate_defaults_and_refuses_naming_the_field(server: Server) -> None:
    jobset, _ = _example("leader-workers.yaml")
    with DeciderClient(server.target, timeout=30) as client:
        good = render.validation_to_dict(client.validate(
            pb.ValidateRequest(object_json=json.dumps(jobset))))
        jobset["spec"]["replicatedJobs"][1]["name"] = jobset["spec"]["replicatedJobs"][0]["name"]
        bad = render.validation_to_dict(client.validate(
            pb.ValidateRequest(object_json=json.dumps(jobset))))
    assert good["valid"] is True
    assert good["object"]["spec"]["successPolicy"]["operator"] == "All"
    assert bad["valid"] is False
    assert bad["errors"][0]["field"] == "spec.replicatedJobs[1]"
    assert bad["errors"][0]["message"].startswith("Duplicate value")


def test_gang_objects_and_pod_sets(server: Server) -> None:
    path = EXAMPLES / "gang-jobset.yaml"
    subject, rest = split_subject(load_objects(path.read_text(), str(path)), str(path))
    with DeciderClient(server.target, timeout=30) as client:
        gang = render.gang_plan_to_dict(
            client.plan_gang(observe.build_plan_gang_request(subject, rest)))
        sets = render.pod_sets_to_dict(client.pod_sets(observe.build_pod_sets_request(subject)))
    assert [o["kind"] for o in gang["objects"]][0] == "Workload"
    assert sets["podSets"] and all(s["count"] > 0 for s in sets["podSets"])


def test_bad_input_is_invalid_argument_naming_the_field(server: Server) -> None:
    jobset, _ = _example("leader-workers.yaml")
    request = observe.build_decide_request(jobset, [], NOW)
    request.observed_json.append('{"apiVersion": "batch/v1", "kind": "Job", '
                                 '"metadata": {"name": "trainer-workers-0", "labels": {"x": 1}}}')
    with DeciderClient(server.target, timeout=30) as client, \
            pytest.raises(grpc.RpcError) as caught:
        client.decide(request)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert caught.value.details().startswith("observed_json[0].metadata.labels[x]")


def test_the_server_knows_the_clients_whole_contract(server: Server) -> None:
    # Read through server reflection (grpcio-reflection, a dependency of the client).
    with DeciderClient(server.target, timeout=30) as client:
        gaps = client.contract_gaps("PodSets")
    assert gaps is not None and not gaps
