"""Seeds: real JobSets from examples/ and what a cluster shows of them a moment later.

Mutations start from these rather than from nothing, so that most requests are one or two
changes away from a valid one and get past the parser to the decision. The observed objects
are the decider's own plans, created as an API server would serve them: a seed's Jobs,
Services and gang objects are what the decider would expect to find.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any

import yaml
from google.protobuf import json_format

from decider.contract.limits import Limits
from decider.service.dispatch import OK, answer
from decider_api.v1 import decider_pb2 as pb

from . import ROOT
from .values import NOW


@dataclass
class Seed:
    """A JobSet, what the cluster shows of it, the gates it was settled with, and (for an
    update) the JobSet before it."""

    name: str
    jobset: dict[str, Any]
    observed: list[dict[str, Any]]
    gates: dict[str, bool]
    old: dict[str, Any] | None = None


def _yaml(name: str) -> dict[str, Any]:
    return yaml.safe_load((ROOT / "examples" / name).read_text())


def _plan(js: dict[str, Any], observed: list[dict[str, Any]],
          gates: dict[str, bool]) -> dict[str, Any]:
    req = pb.DecideRequest(jobset_json=json.dumps(js), observed_json=[json.dumps(o) for o in
                                                                      observed])
    req.now.FromDatetime(NOW)
    req.options.feature_gates.update(gates)
    reply = answer("Decide", req.SerializeToString(), Limits())
    if reply.code != OK:
        raise SystemExit(f"seed {js['metadata']['name']}: {reply.message}")
    return json_format.MessageToDict(pb.DecideResponse.FromString(reply.body))


def _created(plan: dict[str, Any], js: dict[str, Any], state: str) -> list[dict[str, Any]]:
    """The objects a plan creates, as the API server would serve them a moment later."""
    out = []
    for i, action in enumerate(plan.get("actions", [])):
        if "objectJson" not in action:
            continue
        obj = json.loads(action["objectJson"])
        meta = obj.setdefault("metadata", {})
        meta["uid"] = f"uid-{i}-{meta.get('name', '')[:20]}"
        meta["resourceVersion"] = str(100 + i)
        meta["creationTimestamp"] = "2026-01-01T11:00:00Z"
        for ref in meta.get("ownerReferences", []):
            ref["uid"] = ref.get("uid") or js["metadata"]["uid"]
        if obj.get("kind") == "Job":
            obj["status"] = {"active": 1, "ready": 1, "startTime": "2026-01-01T11:00:00Z"} \
                if state == "running" else {}
            if state == "suspended":
                obj["spec"]["suspend"] = True
        if obj.get("kind") in ("CompositePodGroup", "PodGroup"):
            obj["status"] = {"conditions": [{
                "type": "CompositePodGroupInitiallyScheduled"
                if obj["kind"] == "CompositePodGroup" else "PodGroupScheduled",
                "status": "True", "reason": "Scheduled", "message": "",
                "lastTransitionTime": "2026-01-01T11:00:00Z"}]}
        out.append(obj)
    return out


def _settle(js: dict[str, Any], gates: dict[str, bool], state: str = "running",
            passes: int = 3) -> list[dict[str, Any]]:
    observed: list[dict[str, Any]] = []
    for _ in range(passes):
        created = _created(_plan(js, observed, gates), js, state)
        if not created:
            break
        observed += created
    return observed


def _ports_resources(js: dict[str, Any]) -> dict[str, Any]:
    for n, rj in enumerate(js["spec"]["replicatedJobs"]):
        pod = rj["template"]["spec"]["template"]["spec"]
        for c in pod["containers"]:
            c["ports"] = [{"containerPort": 8080 + n}, {"containerPort": 53, "protocol": "UDP"}]
            c["resources"] = {"requests": {"cpu": "500m", "memory": "1Gi"},
                              "limits": {"nvidia.com/gpu": "1"}}
    return js


def build_seeds() -> list[Seed]:
    seeds: list[Seed] = []
    was = {"JobSetWorkloadAwareSchedulingAPI": True}
    sched = _yaml("scheduling-jobset.yaml")
    seeds.append(Seed("scheduling-entries", sched, _settle(sched, was), was))
    tree = {**was, "JobSetGangOfGangs": True}
    seeds.append(Seed("scheduling-tree", sched, _settle(sched, tree), tree))
    top = copy.deepcopy(sched)
    top["spec"]["scheduling"] = {"schedulingPolicy": {"gang": {}},
                                 "schedulingConstraints": {"topology": [
                                     {"key": "topology.kubernetes.io/zone"}]},
                                 "disruptionMode": {"all": {}}}
    seeds.append(Seed("scheduling-top", top, _settle(top, was), was))
    per_job = copy.deepcopy(sched)
    per_job["spec"]["scheduling"] = {"replicatedJobs": [
        {"targetReplicatedJobs": ["driver"]},
        {"targetReplicatedJobs": ["workers"], "job": {
            "schedulingPolicy": {"gang": {"minCount": 3}},
            "resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": "gpu-tmpl"}]}}]}
    seeds.append(Seed("scheduling-job", per_job, _settle(per_job, tree), tree))
    deadline = _ports_resources(_yaml("active-deadline.yaml"))
    lifecycle = {"JobSetActiveDeadlineSeconds": True, "ExecutionAttemptsTracking": True}
    observed = _settle(deadline, lifecycle)
    deadline["status"] = {"startTime": "2026-01-01T11:55:00Z", "executionAttempts": 1,
                          "restarts": 1, "conditions": []}
    seeds.append(Seed("deadline-attempts", deadline, observed, lifecycle))
    suspended = copy.deepcopy(deadline)
    suspended["spec"]["suspend"] = True
    mutable = {**lifecycle, "MutablePodResourcesForSuspendedJobSets": True}
    jobs = _settle(suspended, mutable, state="suspended")
    suspended["status"] = {"executionAttempts": 0, "conditions": [{
        "type": "Suspended", "status": "True", "reason": "SuspendedJobs", "message": "",
        "lastTransitionTime": "2026-01-01T11:00:00Z"}]}
    resumed = copy.deepcopy(suspended)
    resumed["spec"]["suspend"] = False
    for rj in resumed["spec"]["replicatedJobs"]:
        for c in rj["template"]["spec"]["template"]["spec"]["containers"]:
            c["resources"]["requests"]["cpu"] = "2"
    seeds.append(Seed("resume-resources", resumed, jobs, mutable, old=suspended))
    finished = _yaml("leader-workers.yaml")
    finished["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    finished["spec"]["ttlSecondsAfterFinished"] = 30
    finished["status"] = {"terminalState": "Completed", "conditions": [{
        "type": "Completed", "status": "True", "reason": "AllJobsCompleted", "message": "",
        "lastTransitionTime": "2026-01-01T11:59:00Z"}]}
    seeds.append(Seed("external-ttl", finished, [], {}))
    plain = _ports_resources(_yaml("leader-workers.yaml"))
    service = _settle(plain, {}, passes=1)
    for obj in service:
        if obj.get("kind") == "Service":
            obj["spec"]["ports"] = [{"name": "tcp-1", "port": 1, "targetPort": 1,
                                     "protocol": "TCP"}]
    seeds.append(Seed("service-ports", plain, service, {}))
    return seeds
