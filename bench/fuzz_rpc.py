"""Fuzz a running `decider serve` over every RPC and its admission webhook, with requests
mutated where today's surface is: spec.scheduling (every block shape, wrong types, huge counts,
deep nesting, many entries and targets), activeDeadlineSeconds, container ports and resources,
status.startTime / executionAttempts / conditions, observed Workloads, PodGroups and
CompositePodGroups, Services, suspended Jobs' containers, bad UTF-8, `now` out of range,
expiring client deadlines, and every combination of feature gates.

The server runs with --decision-log, --metrics-port and traces on (OTLP to a closed port), so
the telemetry and decision-log paths see every request too. What the project promises of bad
input is INVALID_ARGUMENT (or RESOURCE_EXHAUSTED for sheer size), never INTERNAL or UNKNOWN,
never a hang, never a traceback in the server's log; the webhook's equivalent is a 4xx review
or a 200 answer, never a 500 or a dropped connection.

Prints a table of status codes per RPC, then every finding (INTERNAL, UNKNOWN, a hang: a call
that outlived its long client deadline, a slow decision: the server's own DEADLINE_EXCEEDED, a
webhook 5xx, a traceback in the server's log). Each finding's request is saved under --out
(`<n>-<rpc>-<code>.bin` and a `.json` beside it) and can be sent again, alone, with
`--replay FILE...` (against a fresh server, or `--target HOST:PORT`).

Usage:
  python bench/fuzz_rpc.py [--requests 100000] [--seed 1] [--in-flight 12] [--workers 2]
                           [--out /tmp/fuzz-rpc] [--webhook-share 0.08]
  python bench/fuzz_rpc.py --replay /tmp/fuzz-rpc/0001-Decide-INTERNAL.bin
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import collections
import contextlib
import copy
import json
import os
import random
import re
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from google.protobuf import json_format  # noqa: E402

from decider.contract.limits import Limits  # noqa: E402
from decider.core.constants import GATE_DEFAULTS  # noqa: E402
from decider.service.dispatch import OK, answer  # noqa: E402
from decider_api.summarize import job_summary, object_summary  # noqa: E402
from decider_api.v1 import decider_pb2 as pb  # noqa: E402
from support.certs import make_pki  # noqa: E402

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
GATES = sorted(GATE_DEFAULTS)
NEW_GATES = ("ExecutionAttemptsTracking", "JobSetActiveDeadlineSeconds",
             "MutablePodResourcesForSuspendedJobSets", "JobSetWorkloadAwareSchedulingAPI",
             "JobSetGangOfGangs")
METHODS = ("Decide", "Simulate", "Validate", "PlanGang", "PodSets")
WEBHOOK = ("Webhook/mutate", "Webhook/validate")
MUTATE_PATH = "/mutate-jobset-x-k8s-io-v1alpha2-jobset"
VALIDATE_PATH = "/validate-jobset-x-k8s-io-v1alpha2-jobset"
# Seven bytes put into a request as text and swapped, after serialization, for seven bytes
# that are not UTF-8 (a lone continuation byte, an overlong form, an encoded surrogate):
# protobuf's Python API refuses to build such a string, a client in another language may not.
MARK = "Zq7Zq7Z"
BAD_UTF8 = (b"\xff\xfe\xc3\x28\xed\xa0\x80", b"\xc0\xafabcde", b"ab\xed\xb2\x80cd",
            b"\x80\x80\x80\x80\x80\x80\x80")
LONG_TIMEOUT = 120.0  # a call still unanswered after this is a hang
TINY_TIMEOUTS = (0.0005, 0.002, 0.01, 0.05, 0.3)

# ---- hostile values -------------------------------------------------------------------------

HUGE_INTS = (0, -1, 1, 2, 7, 2**31 - 1, 2**31, -(2**31), -(2**31) - 1, 2**32, 2**53 + 1,
             2**63 - 1, 2**63, -(2**63), 2**64, 10**30, 10**400)
FLOATS = (0.5, -0.0, 1.5, 1e308, -1e308, 1e-320, 3.0, 600.0000001)
STRINGS = ("", " ", "x", "1", "-1", "600", "0x10", "1e3", "NaN", "Infinity", "null", "true",
           "\u2028", "\u0085", "\ud800", "\udfff", "\x00", "a" * 300, "é" * 70, "💥" * 20,
           "tcp-8080", "TCP", "../../etc", "jobset.sigs.k8s.io/jobset-name", MARK)
# What a protobuf string may hold (no lone surrogates): bad bytes go in through MARK.
PSTRINGS = tuple(s for s in STRINGS if not any(0xD800 <= ord(ch) <= 0xDFFF for ch in s))
TIMES = ("", "2026-01-01T12:00:00Z", "2026-01-01T11:59:59Z", "2026-01-01T12:00:00.5Z",
         "2026-01-01T12:00:00.123456789123Z", "2026-13-45T99:99:99Z", "0000-01-01T00:00:00Z",
         "0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "10000-01-01T00:00:00Z",
         "2026-01-01T12:00:00+25:00", "2026-01-01T12:00:00-23:59", "2026-01-01", "yesterday",
         "2026-01-01T12:00:00", "2026-01-01 12:00:00Z", "1970-01-01T00:00:00Z",
         "2026-02-29T00:00:00Z", "2024-02-29T23:59:60Z", "-0001-01-01T00:00:00Z",
         "2026-01-01T12:00:00\u0661Z", "２０２６-01-01T12:00:00Z", 20260101, 1.5e9, None)
QUANTITIES = ("1", "0", "100m", "1Ki", "1.5Gi", "1e3", "1E3", "1e-3", "0.000000001", "1n",
              "9" * 100, "1e1000000", "1e-1000000", "-1", "+1", ".5", "1.", "1Kix", "", " 1",
              "1 ", "999999999999999999999Pi", "1Ei", "8Ei", "0.5m", "1e", "e3", "0x10",
              "١", "½", "1_000", "NaN", 1, 0.5, -1, 10**30, 1e308, None, [], {}, True)
PROTOCOLS = ("TCP", "UDP", "SCTP", "", "tcp", "Tcp", "ICMP", "HTTP", None, 6, "TCP ", "\u2028")
CONDITION_TYPES = ("Completed", "Failed", "Suspended", "StartupPolicyInProgress",
                   "StartupPolicyCompleted", "RestartingJobSet", "InPlaceRestart",
                   "CompositePodGroupInitiallyScheduled", "PodGroupScheduled", "", "x" * 300)
CONDITION_STATUS = ("True", "False", "Unknown", "", "true", "Yes", None, 1)


def _deep(depth: int, leaf: Any = 1) -> Any:
    out: Any = leaf
    for i in range(depth):
        out = [out] if i % 2 else {"a": out}
    return out


def hostile(rng: random.Random) -> Any:
    """One value of any type that a careless client might put anywhere."""
    roll = rng.random()
    if roll < 0.30:
        return rng.choice(HUGE_INTS)
    if roll < 0.40:
        return rng.choice(FLOATS)
    if roll < 0.65:
        return rng.choice(STRINGS)
    if roll < 0.72:
        return rng.choice(TIMES)
    if roll < 0.80:
        return rng.choice((None, True, False, [], {}, [None], {"": None}))
    if roll < 0.88:
        return _deep(rng.choice((3, 20, 60, 99, 100, 101, 150, 400)))
    if roll < 0.94:
        return [rng.choice(HUGE_INTS)] * rng.choice((2, 50, 1000))
    return {f"k{i}": rng.choice(STRINGS) for i in range(rng.choice((1, 10, 300)))}


# ---- the surface of today's features, generated ---------------------------------------------

def _policy(rng: random.Random, composite: bool) -> Any:
    roll = rng.random()
    if roll < 0.35:
        return {"gang": {}}
    if roll < 0.55:
        return {"basic": {}}
    if roll < 0.70:
        key = "minGroupCount" if composite else "minCount"
        return {"gang": {key: rng.choice(HUGE_INTS + FLOATS + ("3",))}}
    if roll < 0.78:
        return {"gang": {}, "basic": {}}
    if roll < 0.85:
        return {}
    if roll < 0.90:  # the superseded draft's spelling
        return {"gang": {"minCount": rng.choice((1, 4, -1))}}
    return hostile(rng)


def _constraints(rng: random.Random) -> Any:
    roll = rng.random()
    if roll < 0.5:
        return {"topology": [{"key": "topology.kubernetes.io/rack"}]}
    if roll < 0.65:
        return {"topology": [{"key": rng.choice(STRINGS)}
                             for _ in range(rng.choice((0, 2, 5, 500)))]}
    if roll < 0.75:
        return {"topology": [{}]}
    if roll < 0.85:
        return {"topology": hostile(rng)}
    return hostile(rng)


def _disruption(rng: random.Random) -> Any:
    return rng.choice(({"single": {}}, {"all": {}}, {"single": {}, "all": {}}, {},
                       {"all": {"x": 1}}, hostile(rng)))


def _claims(rng: random.Random) -> Any:
    n = rng.choice((0, 1, 4, 5, 40))
    out = []
    for i in range(n):
        claim: dict[str, Any] = {"name": rng.choice((f"c{i}", "c0", "", "UPPER", "a" * 70))}
        src = rng.random()
        if src < 0.5:
            claim["resourceClaimTemplateName"] = rng.choice(("tmpl", "", "bad_name"))
        elif src < 0.8:
            claim["resourceClaimName"] = "claim"
        else:
            claim["resourceClaimTemplateName"], claim["resourceClaimName"] = "t", "c"
        out.append(claim)
    return out


def scheduling_block(rng: random.Random, names: list[str]) -> Any:
    """spec.scheduling in any shape upstream's composite API allows, and many it does not."""
    if rng.random() < 0.06:
        return hostile(rng)
    out: dict[str, Any] = {}
    top = rng.random()
    if top < 0.45:
        if rng.random() < 0.7:
            out["schedulingPolicy"] = _policy(rng, True)
        if rng.random() < 0.3:
            out["schedulingConstraints"] = _constraints(rng)
        if rng.random() < 0.3:
            out["disruptionMode"] = _disruption(rng)
    if top > 0.35:
        entries = []
        for _ in range(rng.choice((0, 1, 2, 2, 3, 9, 200))):
            entry: dict[str, Any] = {}
            pick = rng.random()
            if pick < 0.75:
                targets = rng.sample(names, k=rng.randint(1, len(names))) if names else []
            elif pick < 0.85:
                targets = [rng.choice(STRINGS)]
            elif pick < 0.92:
                targets = names * rng.choice((2, 300))
            else:
                targets = hostile(rng)
            entry["targetReplicatedJobs"] = targets
            if rng.random() < 0.4:
                job: dict[str, Any] = {}
                if rng.random() < 0.8:
                    job["schedulingPolicy"] = _policy(rng, False)
                if rng.random() < 0.2:
                    job["schedulingConstraints"] = _constraints(rng)
                if rng.random() < 0.2:
                    job["disruptionMode"] = _disruption(rng)
                if rng.random() < 0.3:
                    job["resourceClaims"] = _claims(rng)
                entry["job"] = job if rng.random() < 0.95 else hostile(rng)
            if rng.random() < 0.6:
                entry["schedulingPolicy"] = _policy(rng, True)
            if rng.random() < 0.2:
                entry["schedulingConstraints"] = _constraints(rng)
            if rng.random() < 0.15:
                entry["disruptionMode"] = _disruption(rng)
            if rng.random() < 0.05:  # the superseded draft's names
                entry[rng.choice(("resourceClaims", "targetReplicatedJob", "policy",
                                  "constraints", "disruption"))] = _claims(rng)
            entries.append(entry)
        out["replicatedJobs"] = entries
    if rng.random() < 0.04:
        out[rng.choice(("replicatedJobPolicies", "policy", "minCount"))] = hostile(rng)
    return out


def container_ports(rng: random.Random) -> list[Any]:
    n = rng.choice((0, 1, 2, 3, 10, 300))
    out: list[Any] = []
    for i in range(n):
        port: dict[str, Any] = {"containerPort": rng.choice(
            (8080, 8080, 0, 1, 65535, 65536, -1, 2**31, 2**63, 10**30, "80", 80.5, None, 53))}
        if rng.random() < 0.7:
            port["protocol"] = rng.choice(PROTOCOLS)
        if rng.random() < 0.3:
            port["name"] = rng.choice(("http", "http", f"p{i}", "", "UPPER", "a" * 20, MARK))
        if rng.random() < 0.05:
            port = hostile(rng)
        out.append(port)
    return out


def resources(rng: random.Random) -> Any:
    if rng.random() < 0.05:
        return hostile(rng)
    out: dict[str, Any] = {}
    for part in ("requests", "limits"):
        if rng.random() < 0.7:
            names = rng.sample(("cpu", "memory", "nvidia.com/gpu", "hugepages-2Mi",
                                "ephemeral-storage", "example.com/x", "", "UPPER/x"),
                               k=rng.randint(1, 3))
            out[part] = {n: rng.choice(QUANTITIES) for n in names}
    if rng.random() < 0.1:
        out["claims"] = [{"name": rng.choice(("gpu", "", 7))}]
    return out


def status_block(rng: random.Random, names: list[str]) -> dict[str, Any]:
    status: dict[str, Any] = {}
    if rng.random() < 0.6:
        status["startTime"] = rng.choice(TIMES)
    if rng.random() < 0.6:
        status["executionAttempts"] = rng.choice(HUGE_INTS + FLOATS + ("1", None))
    if rng.random() < 0.5:
        status["restarts"] = rng.choice(HUGE_INTS)
    if rng.random() < 0.3:
        status["restartsCountTowardsMax"] = rng.choice(HUGE_INTS)
    if rng.random() < 0.6:
        status["conditions"] = [{
            "type": rng.choice(CONDITION_TYPES), "status": rng.choice(CONDITION_STATUS),
            "reason": rng.choice(("DeadlineExceeded", "AllJobsCompleted", "", "x")),
            "message": rng.choice(STRINGS), "lastTransitionTime": rng.choice(TIMES)}
            for _ in range(rng.choice((1, 2, 3, 50)))]
    if rng.random() < 0.2:
        status["terminalState"] = rng.choice(("Completed", "Failed", "", "Running", 3))
    if rng.random() < 0.3:
        status["replicatedJobsStatus"] = [{
            "name": rng.choice(names + [""]), "ready": rng.choice(HUGE_INTS),
            "succeeded": 0, "failed": rng.choice(HUGE_INTS), "active": 1, "suspended": 0,
            "jobRestarts": [rng.choice((0, 1, 2**31 - 1))] * rng.choice((0, 1, 3))}
            for _ in range(rng.choice((1, 2, 40)))]
    return status


# ---- seeds: real JobSets and what a cluster shows of them -----------------------------------

@dataclass
class Seed:
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


# ---- mutation -------------------------------------------------------------------------------

def _paths(doc: Any, prefix: tuple[Any, ...] = (), out: list | None = None,
           limit: int = 4000) -> list[tuple[Any, ...]]:
    out = [] if out is None else out
    if len(out) >= limit:
        return out
    out.append(prefix)
    if isinstance(doc, dict):
        for k, v in doc.items():
            _paths(v, (*prefix, k), out, limit)
    elif isinstance(doc, list):
        for i, v in enumerate(doc[:20]):
            _paths(v, (*prefix, i), out, limit)
    return out


def _get(doc: Any, path: tuple[Any, ...]) -> Any:
    for p in path:
        doc = doc[p]
    return doc


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> None:
    if not path:
        return
    _get(doc, path[:-1])[path[-1]] = value


def tolerant(mutation: Any, *args: Any) -> None:
    """Apply a mutation; one that no longer fits a shape an earlier one broke is skipped."""
    with contextlib.suppress(TypeError, KeyError, IndexError, AttributeError, ValueError):
        mutation(*args)


def mutate_anywhere(doc: Any, rng: random.Random) -> None:
    """One blind mutation at a random place: replace, delete, repeat, add, nest."""
    paths = _paths(doc)
    path = rng.choice(paths[1:] or paths)
    if not path:
        return
    parent = _get(doc, path[:-1])
    roll = rng.random()
    if roll < 0.55:
        _set(doc, path, hostile(rng))
    elif roll < 0.70:
        del parent[path[-1]]
    elif roll < 0.80 and isinstance(parent, list):
        parent.extend([copy.deepcopy(parent[path[-1]])] * rng.choice((1, 5, 100, 2000)))
    elif roll < 0.90 and isinstance(_get(doc, path), dict):
        _get(doc, path)[rng.choice(("unknownField", "x", "", MARK, "$ref"))] = hostile(rng)
    else:
        _set(doc, path, _deep(rng.choice((10, 98, 99, 100, 120)), _get(doc, path)))


def _rjobs(js: dict[str, Any]) -> list[dict[str, Any]]:
    spec = js.get("spec")
    rjs = spec.get("replicatedJobs") if isinstance(spec, dict) else None
    return [r for r in rjs if isinstance(r, dict)] if isinstance(rjs, list) else []


def _containers(js: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for rj in _rjobs(js):
        with contextlib.suppress(KeyError, TypeError):
            out += [c for c in rj["template"]["spec"]["template"]["spec"]["containers"]
                    if isinstance(c, dict)]
    return out


def mutate_jobset(js: dict[str, Any], rng: random.Random) -> None:
    """One mutation aimed at today's fields of a JobSet."""
    spec = js.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    names = [r.get("name") for r in _rjobs(js) if isinstance(r.get("name"), str)]
    roll = rng.random()
    if roll < 0.30:
        spec["scheduling"] = scheduling_block(rng, names)
    elif roll < 0.42:
        spec["activeDeadlineSeconds"] = rng.choice(HUGE_INTS + FLOATS + (
            "600", None, [], 600, 600, 1, 9223372036, 9223372037, 10**19))
    elif roll < 0.55:
        for c in _containers(js):
            if rng.random() < 0.7:
                c["ports"] = container_ports(rng)
    elif roll < 0.66:
        for c in _containers(js):
            if rng.random() < 0.7:
                c["resources"] = resources(rng)
    elif roll < 0.80:
        js["status"] = status_block(rng, names)
    elif roll < 0.85:
        spec["suspend"] = rng.choice((True, False, None, "true", 1))
    elif roll < 0.89:
        spec["managedBy"] = rng.choice(("jobset.sigs.k8s.io/jobset-controller", "other/x",
                                        "", MARK, 7))
        spec["ttlSecondsAfterFinished"] = rng.choice(HUGE_INTS + (30,))
    elif roll < 0.94:
        for rj in _rjobs(js):
            rj["replicas"] = rng.choice((1, 2, 0, -1, 100, 2**31, 10**5, 10**5 + 1, "2"))
            try:
                job = rj["template"]["spec"]
                job["parallelism"] = rng.choice((1, 4, 0, -1, 2**31 - 1, 2**31, 50_000))
                job["completions"] = rng.choice((1, 4, None, 2**31 - 1))
            except (KeyError, TypeError):
                pass
    elif roll < 0.97:
        # A failure policy that restarts, with counters near int32's end (status_block puts
        # restarts, attempts and jobRestarts there): what a pass adds one to.
        spec["failurePolicy"] = {
            "maxRestarts": rng.choice((0, 1, 3, 2**31 - 1, 2**31, -1)),
            "restartStrategy": rng.choice(("Recreate", "BlockingRecreate", "InPlaceRestart")),
            "rules": [{"name": f"r{i}", "action": rng.choice((
                "RestartJobSet", "RestartJobSetAndIgnoreMaxRestarts", "RestartJob",
                "RestartJobAndIgnoreMaxRestarts", "FailJobSet")),
                "onJobFailureReasons": rng.choice(([], ["BackoffLimitExceeded"]))}
                for i in range(rng.choice((0, 1, 2)))]}
    else:
        spec["startupPolicy"] = {"startupPolicyOrder": rng.choice(("InOrder", "AnyOrder", "x"))}
        if names and rng.random() < 0.5:
            _rjobs(js)[-1]["dependsOn"] = [{"name": names[0], "status": "Ready"}]


def mutate_observed(objs: list[dict[str, Any]], rng: random.Random, js: dict[str, Any]) -> None:
    """One mutation of what the cluster shows: odd Workloads, PodGroups, CompositePodGroups,
    Services and Jobs, foreign owners, conditions, containers."""
    if not objs or rng.random() < 0.1:
        kind = rng.choice(("Workload", "PodGroup", "CompositePodGroup", "Service", "Job"))
        objs.append({"apiVersion": rng.choice(("scheduling.k8s.io/v1beta1",
                                               "scheduling.k8s.io/v1alpha3", "v1", "batch/v1",
                                               "", "x/y/z")),
                     "kind": kind, "metadata": {"name": rng.choice(STRINGS), "uid": "u"},
                     "spec": hostile(rng)})
        return
    obj = rng.choice(objs)
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    roll = rng.random()
    if roll < 0.15:
        refs = meta.get("ownerReferences") or [{}]
        ref = refs[0] if isinstance(refs, list) and refs and isinstance(refs[0], dict) else {}
        ref.update(rng.choice(({"uid": "another-jobset-uid"}, {"controller": False},
                               {"controller": "yes"}, {"kind": "Job"},
                               {"uid": js.get("metadata", {}).get("uid"), "controller": True},
                               {"uid": hostile(rng)})))
        meta["ownerReferences"] = refs if rng.random() < 0.9 else [ref] * 300
    elif roll < 0.25:
        meta["labels"] = rng.choice(({"jobset.sigs.k8s.io/jobset-name": "another"}, {},
                                     {"jobset.sigs.k8s.io/jobset-name": hostile(rng)},
                                     hostile(rng)))
    elif roll < 0.40:
        status = obj.setdefault("status", {}) if isinstance(obj.get("status", {}), dict) else {}
        status["conditions"] = [{
            "type": rng.choice(CONDITION_TYPES), "status": rng.choice(CONDITION_STATUS),
            "reason": rng.choice(("Invalid", "Scheduled", "", hostile(rng))),
            "message": rng.choice(STRINGS), "lastTransitionTime": rng.choice(TIMES)}
            for _ in range(rng.choice((0, 1, 3, 200)))]
    elif roll < 0.50:
        meta["deletionTimestamp"] = rng.choice(TIMES)
    elif roll < 0.60 and obj.get("kind") == "Service":
        obj.setdefault("spec", {})["ports"] = [
            {"name": rng.choice(("tcp-8080", "", "x")), "port": rng.choice(HUGE_INTS),
             "targetPort": rng.choice((8080, "http", -1, 2**40)),
             "protocol": rng.choice(PROTOCOLS)} for _ in range(rng.choice((0, 1, 3, 1000)))]
    elif roll < 0.62 and obj.get("kind") == "Job":
        # A failure, or a pod at some in-place restart attempt.
        if rng.random() < 0.6:
            obj["status"] = {"failed": 1, "conditions": [{
                "type": "Failed", "status": "True",
                "reason": rng.choice(("BackoffLimitExceeded", "PodFailurePolicy", "")),
                "message": rng.choice(PSTRINGS), "lastTransitionTime": rng.choice(TIMES)}]}
        else:
            objs.append({"apiVersion": "v1", "kind": "Pod", "metadata": {
                "name": f"{meta.get('name')}-0", "annotations": {
                    "jobset.sigs.k8s.io/in-place-restart-attempt": str(rng.choice(
                        HUGE_INTS + ("1", "x", "-1")))}},
                "status": {"phase": rng.choice(("Running", "Failed", "Pending"))}})
    elif roll < 0.72 and obj.get("kind") == "Job":
        try:
            pod = obj["spec"]["template"]["spec"]
            c = pod["containers"][0]
            rng.choice((lambda: c.update(resources=resources(rng)),
                        lambda: c.update(ports=container_ports(rng)),
                        lambda: pod.update(containers=hostile(rng)),
                        lambda: pod.update(initContainers=[{"name": "init",
                                                            "resources": resources(rng)}]),
                        lambda: pod.update(schedulingGroup=rng.choice((
                            {"podGroupName": "x"}, {}, hostile(rng))))))()
        except (KeyError, TypeError, IndexError):
            mutate_anywhere(obj, rng)
        anns = meta.setdefault("annotations", {})
        if isinstance(anns, dict) and rng.random() < 0.5:
            anns[rng.choice(("jobset.sigs.k8s.io/execution-attempt",
                             "scheduling.k8s.io/group-template-name"))] = str(rng.choice(
                HUGE_INTS + ("", "x", "-1", "1.5", "\u2028")))
    elif roll < 0.85 and obj.get("kind") in ("Workload", "PodGroup", "CompositePodGroup"):
        spec = obj.get("spec")
        if isinstance(spec, dict):
            key = rng.choice(list(spec) or ["x"])
            spec[key] = rng.choice((hostile(rng), _deep(99), [spec.get(key)] * 50))
    else:
        mutate_anywhere(obj, rng)


# ---- requests -------------------------------------------------------------------------------

@dataclass
class Case:
    method: str
    payload: bytes
    timeout: float
    note: str
    gates: dict[str, bool] = field(default_factory=dict)


def random_gates(rng: random.Random, seed_gates: dict[str, bool]) -> dict[str, bool]:
    roll = rng.random()
    if roll < 0.35:
        gates = dict(seed_gates)
    elif roll < 0.75:
        gates = {g: rng.random() < 0.5 for g in GATES}
    elif roll < 0.85:
        gates = {g: True for g in GATES}
    elif roll < 0.92:
        gates = {}
    else:
        gates = {rng.choice((*GATES, "NoSuchGate", "", MARK, "jobsetworkloadawareschedulingapi")):
                 rng.random() < 0.5}
    return gates


def _dumps_hostile(doc: Any, rng: random.Random, trick: bool | None = None) -> str:
    """JSON text, now and then with what only text can say: duplicate keys, NaN, numbers past
    any float, escaped lone surrogates, a BOM, a trailing value."""
    text = json.dumps(doc, separators=(",", ":"), ensure_ascii=rng.random() < 0.5)
    try:
        text.encode()
    except UnicodeEncodeError:  # a lone surrogate: only its escape is text protobuf can carry
        text = json.dumps(doc, separators=(",", ":"))
    if not (rng.random() < 0.15 if trick is None else trick):
        return text
    tricks = (lambda t: t.replace('"spec":{', '"spec":{"suspend":true,"suspend":false,', 1),
              lambda t: t.replace('"spec":{', '"spec":{"scheduling":{},"scheduling":{', 1)
              .replace('"replicatedJobs"', '"x":1},"replicatedJobs"', 1),
              lambda t: t.replace('"replicas":', '"replicas":1e999,"r2":', 1),
              lambda t: t.replace('"activeDeadlineSeconds":', '"activeDeadlineSeconds":NaN,"a":',
                                  1),
              lambda t: t.replace('"name":"', '"name":"\\ud800', 1),
              lambda t: t.replace('"name":"', '"name":"\\udfff\\ud800', 1),
              lambda t: "\ufeff" + t,
              lambda t: t + " {}",
              lambda t: t.replace('"containerPort":', '"containerPort":-0.0e0,"c":', 1),
              lambda t: t.replace('"executionAttempts":', '"executionAttempts":1' + "0" * 30
                                  + ',"e":', 1),
              lambda t: t[: len(t) // 2])
    return rng.choice(tricks)(text)


def _raw(text: str, rng: random.Random) -> bytes:
    """Serialized bytes with the marker swapped for bytes that are not UTF-8."""
    return text.encode() if MARK not in text else text.encode().replace(
        MARK.encode(), rng.choice(BAD_UTF8))


def _swap_marks(payload: bytes, rng: random.Random) -> bytes:
    return payload.replace(MARK.encode(), rng.choice(BAD_UTF8)) if rng.random() < 0.15 \
        else payload


def _now(req: pb.DecideRequest, rng: random.Random) -> None:
    roll = rng.random()
    if roll < 0.85:
        req.now.FromDatetime(NOW)
    elif roll < 0.9:
        req.now.seconds, req.now.nanos = rng.choice(((10**15, 0), (-(10**15), 0), (0, -1),
                                                     (0, 10**9), (253_402_300_800, 0),
                                                     (-62_135_596_801, 0), (2**62, 2**30)))
    elif roll < 0.95:
        req.now.seconds = rng.choice((0, 1, 253_402_300_799, -62_135_596_800))
    # else: no `now` at all


def _typed_objects(req: pb.DecideRequest, observed: list[dict[str, Any]],
                   rng: random.Random) -> bool:
    """Observed objects as typed summaries (as the Python client sends them), or False when one
    cannot be summarized: then the request sends them whole."""
    try:
        for i, obj in enumerate(observed):
            if obj.get("kind") == "Job":
                req.jobs.append(job_summary(obj, f"jobs[{i}]", containers=True))
            else:
                req.objects.append(object_summary(obj, f"objects[{i}]"))
    except Exception:  # noqa: BLE001 - the client refuses it; send it whole instead
        del req.jobs[:]
        del req.objects[:]
        return False
    if req.jobs and rng.random() < 0.3:
        job = rng.choice(req.jobs)
        pt = job.pod_template
        roll = rng.random()
        if roll < 0.4:
            pt.containers_json = _dumps_hostile(rng.choice((
                [{"name": "leader", "resources": resources(rng)}], hostile(rng),
                [{"name": MARK, "ports": container_ports(rng)}], "[]", [None] * 5)), rng)
        elif roll < 0.6:
            pt.init_containers_json = json.dumps(rng.choice(([{"name": "x"}], hostile(rng))))
        elif roll < 0.8:
            pt.scheduling_group.pod_group_name = rng.choice(PSTRINGS)
        else:
            job.start_time = str(rng.choice(TIMES))
            job.creation_timestamp = str(rng.choice(TIMES))
            job.active, job.failed = rng.choice(((-1, 0), (2**31 - 1, 2**31 - 1), (0, -5)))
    return True


def counters_at_the_edge(js: dict[str, Any], observed: list[dict[str, Any]],
                         rng: random.Random) -> None:
    """A coherent JobSet whose next pass adds one to a counter at int32's end: the counters
    there, a policy that restarts, a failed Job (or a resume). Blind mutations rarely line the
    three up."""
    edge = rng.choice((2**31 - 1, 2**31 - 2))
    status = js["status"] = dict(js.get("status") or {})
    key = rng.choice(("restarts", "executionAttempts", "jobRestarts"))
    status.update(restarts=edge if key == "restarts" else 0, restartsCountTowardsMax=0)
    if key == "executionAttempts":
        status["executionAttempts"] = edge
    if key == "jobRestarts":
        status["replicatedJobsStatus"] = [{
            "name": r["name"], "ready": 0, "succeeded": 0, "failed": 0, "active": 0,
            "suspended": 0, "jobRestarts": [edge] * r.get("replicas", 1)} for r in _rjobs(js)]
    js["spec"]["failurePolicy"] = {"maxRestarts": 2**31 - 1, "rules": [{"name": "again",
        "action": rng.choice(("RestartJobSet", "RestartJobSetAndIgnoreMaxRestarts",
                              "RestartJob", "RestartJobAndIgnoreMaxRestarts"))}]}
    jobs = [o for o in observed if o.get("kind") == "Job"]
    if jobs and rng.random() < 0.8:
        rng.choice(jobs)["status"] = {"failed": 1, "conditions": [{
            "type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
            "message": "", "lastTransitionTime": "2026-01-01T11:00:00Z"}]}
    elif jobs:  # a resume of a suspended JobSet whose Jobs ran in the last attempt
        status["conditions"] = [{"type": "Suspended", "status": "True", "reason": "x",
                                 "message": "", "lastTransitionTime": "2026-01-01T11:00:00Z"}]
        js["spec"]["suspend"] = False
        for job in jobs:
            job["spec"]["suspend"] = True
            job["metadata"].setdefault("annotations", {})[
                "jobset.sigs.k8s.io/execution-attempt"] = str(edge)


def decide_request(seed: Seed, rng: random.Random) -> tuple[pb.DecideRequest, dict[str, bool]]:
    js = copy.deepcopy(seed.jobset)
    observed = copy.deepcopy(seed.observed)
    if rng.random() < 0.05:
        tolerant(counters_at_the_edge, js, observed, rng)
    for _ in range(rng.choice((0, 1, 1, 1, 2, 3))):
        roll = rng.random()
        if roll < 0.55:
            tolerant(mutate_jobset, js, rng)
        elif roll < 0.85:
            tolerant(mutate_observed, observed, rng, js)
        else:
            tolerant(mutate_anywhere, js, rng)
    gates = random_gates(rng, seed.gates)
    # Text tricks (duplicate keys, NaN, ...) in at most one document of a request, so that
    # most requests get past the parser to the decision.
    tricked = rng.randrange(len(observed) + 1) if rng.random() < 0.15 else -1
    req = pb.DecideRequest(jobset_json=_dumps_hostile(js, rng, tricked == 0))
    _now(req, rng)
    req.options.feature_gates.update(gates)
    if rng.random() < 0.1:
        req.options.gang_api_version = rng.choice(("scheduling.k8s.io/v1alpha1",
                                                   "scheduling.k8s.io/v1alpha2",
                                                   "scheduling.k8s.io/v1beta1", "",
                                                   "scheduling.k8s.io/v1alpha3", MARK))
        req.options.gang_target = rng.choice(("", "", "volcano", "scheduler-plugins", "x"))
    if rng.random() < 0.05:
        req.options.controller_name = rng.choice(("other/x", "", MARK))
    if rng.random() < 0.5 or not _typed_objects(req, observed, rng):
        req.observed_json.extend(_dumps_hostile(o, rng, tricked == i + 1)
                                 for i, o in enumerate(observed))
    return req, gates


def make_case(seeds: list[Seed], rng: random.Random) -> Case:
    seed = rng.choice(seeds)
    method = rng.choices((*METHODS, *WEBHOOK), weights=(40, 12, 18, 10, 8, 5, 5))[0]
    timeout = rng.choice(TINY_TIMEOUTS) if rng.random() < 0.03 else LONG_TIMEOUT
    if method in ("Decide", "Simulate"):
        req, gates = decide_request(seed, rng)
        if method == "Decide":
            return Case(method, _swap_marks(req.SerializeToString(), rng), timeout, seed.name,
                        gates)
        sim = pb.SimulateRequest(observed=req, max_passes=rng.choice(
            (0, 0, 0, 1, 5, 20, 100, 1000, 1001, -1, 2**31 - 1) if rng.random() < 0.2 else (0,)))
        names = [o.get("metadata", {}).get("name", "") for o in seed.observed
                 if o.get("kind") == "Job"] or ["trainer-workers-0"]
        for _ in range(rng.choice((0, 1, 2, 3, 8, 50))):
            kind = rng.choice((1, 1, 2, 2, 3, 4, 5, 6, 7))
            sim.events.add(at_seconds=rng.choice((0, 1, 60, 300, 599, 600, 601, 3600, 86400)),
                           type=kind, job=rng.choice(names) if kind <= 5 else "",
                           reason=rng.choice(("", "DeadlineExceeded", "PodFailurePolicy"))
                           if kind == 1 else "",
                           message=rng.choice(PSTRINGS) if kind == 1 else "")
        if sim.events and rng.random() < 0.2:  # one event as a careless client writes it
            event = rng.choice(sim.events)
            rng.choice((lambda: setattr(event, "type", rng.choice((0, 8, 99))),
                        lambda: setattr(event, "at_seconds", rng.choice(
                            (-1, 10**9, 3153600001, 2**62, 2**63 - 1))),
                        lambda: setattr(event, "job", rng.choice(("", "nope", MARK))),
                        lambda: setattr(event, "reason", "x" * 300)))()
        return Case(method, _swap_marks(sim.SerializeToString(), rng), timeout, seed.name,
                    gates)
    js = copy.deepcopy(seed.jobset)
    for _ in range(rng.choice((1, 1, 2, 3))):
        if rng.random() < 0.8:
            tolerant(mutate_jobset, js, rng)
        else:
            tolerant(mutate_anywhere, js, rng)
    gates = random_gates(rng, seed.gates)
    if method == "Validate":
        req = pb.ValidateRequest(object_json=_dumps_hostile(js, rng))
        if seed.old is not None or rng.random() < 0.4:
            old = copy.deepcopy(seed.old or seed.jobset)
            if rng.random() < 0.4:
                tolerant(mutate_jobset, old, rng)
            req.old_object_json = _dumps_hostile(old, rng)
        req.options.feature_gates.update(gates)
        for obj in seed.observed[:3] if rng.random() < 0.2 else ():
            with contextlib.suppress(Exception):  # the client refuses it: not sent
                req.objects.append(object_summary(obj))
        return Case(method, _swap_marks(req.SerializeToString(), rng), timeout, seed.name, gates)
    if method == "PlanGang":
        req = pb.PlanGangRequest(object_json=_dumps_hostile(js, rng))
        req.options.feature_gates.update(gates)
        req.options.gang_api_version = rng.choice(("", "", "scheduling.k8s.io/v1alpha2",
                                                   "scheduling.k8s.io/v1alpha1", "nope"))
        req.options.gang_target = rng.choice(("", "", "volcano", "scheduler-plugins", "x"))
        observed = copy.deepcopy([o for o in seed.observed if o.get("kind") not in
                                  ("Job", "Service")])
        if observed and rng.random() < 0.5:
            tolerant(mutate_observed, observed, rng, js)
        for i, obj in enumerate(observed):
            try:
                summary = object_summary(obj, f"objects[{i}]")
            except Exception:  # noqa: BLE001
                continue
            summary.object_json = _dumps_hostile(obj, rng)
            req.objects.append(summary)
        return Case(method, _swap_marks(req.SerializeToString(), rng), timeout, seed.name, gates)
    if method == "PodSets":
        req = pb.PodSetsRequest(object_json=_dumps_hostile(js, rng))
        req.options.feature_gates.update(gates)
        return Case(method, _swap_marks(req.SerializeToString(), rng), timeout, seed.name, gates)
    # The webhook: an AdmissionReview of a create or an update.
    operation = rng.choice(("CREATE", "CREATE", "UPDATE", "DELETE", "CONNECT", ""))
    review: dict[str, Any] = {
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": rng.choice(("7b1c", "7b1c", "", MARK)), "operation": operation,
                    "kind": {"group": "jobset.x-k8s.io", "version": "v1alpha2",
                             "kind": "JobSet"},
                    "resource": {"group": "jobset.x-k8s.io", "version": "v1alpha2",
                                 "resource": "jobsets"},
                    "name": js.get("metadata", {}).get("name", "") if isinstance(
                        js.get("metadata"), dict) else "",
                    "namespace": "default", "object": js}}
    if operation == "UPDATE":
        review["request"]["oldObject"] = copy.deepcopy(seed.old or seed.jobset)
    if rng.random() < 0.1:
        tolerant(mutate_anywhere, review, rng)
    body = _raw(_dumps_hostile(review, rng), rng)
    return Case(method, body, timeout, seed.name, {})


# ---- the server -----------------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, workdir: Path, workers: int, webhook_gates: dict[str, bool]) -> None:
        self.pki = make_pki(workdir)
        self.webhook_port = _free_port()
        self.metrics_port = _free_port()
        self.log_path = workdir / "server.log"
        self.decision_log = workdir / "decisions.jsonl"
        gates = ",".join(f"{k}={str(v).lower()}" for k, v in webhook_gates.items())
        args = [sys.executable, "-m", "decider.cli", "serve", "--host", "127.0.0.1",
                "--port", "0", "--workers", str(workers), "--drain-delay", "0",
                "--webhook-port", str(self.webhook_port),
                "--webhook-cert-file", str(self.pki.server_cert),
                "--webhook-key-file", str(self.pki.server_key),
                "--webhook-feature-gates", gates,
                "--metrics-port", str(self.metrics_port),
                "--decision-log", str(self.decision_log)]
        env = dict(os.environ, PYTHONPATH=f"{ROOT}:{ROOT / 'clients' / 'python'}",
                   OTEL_TRACES_EXPORTER="otlp",
                   OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9",
                   OTEL_BSP_MAX_QUEUE_SIZE="256", OTEL_BSP_MAX_EXPORT_BATCH_SIZE="128")
        self.log = open(self.log_path, "w")  # noqa: SIM115 - held while the server runs
        self.proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                     stderr=self.log, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if not line:
            self.proc.wait()
            raise SystemExit(f"decider serve did not start:\n{self.log_path.read_text()}")
        self.target = line.rsplit(" ", 1)[-1]

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


# ---- the drive ------------------------------------------------------------------------------

def _identity(b: bytes) -> bytes:
    return b


@dataclass
class Findings:
    out: Path
    codes: dict[str, collections.Counter[str]] = field(
        default_factory=lambda: collections.defaultdict(collections.Counter))
    saved: list[tuple[str, str, str]] = field(default_factory=list)
    latency: dict[str, float] = field(default_factory=lambda: collections.defaultdict(float))
    recent: collections.deque[Case] = field(
        default_factory=lambda: collections.deque(maxlen=64))

    def save(self, case: Case, code: str, message: str) -> None:
        n = len(self.saved) + 1
        stem = f"{n:04d}-{case.method.replace('/', '-')}-{code}"
        (self.out / f"{stem}.bin").write_bytes(case.payload)
        (self.out / f"{stem}.json").write_text(json.dumps({
            "method": case.method, "code": code, "message": message[:4000],
            "timeout": case.timeout, "seed": case.note, "gates": case.gates}, indent=1))
        self.saved.append((stem, code, message[:300]))


BAD_CODES = {"INTERNAL", "UNKNOWN", "HANG", "SLOW", "HTTP-500", "HTTP-502", "HTTP-503",
             "HTTP-504", "DISCONNECTED", "UNAVAILABLE", "DATA_LOSS"}


async def _call_grpc(calls: dict[str, Any], case: Case) -> tuple[str, str]:
    started = time.monotonic()
    try:
        await calls[case.method](case.payload, timeout=case.timeout)
        return "OK", ""
    except grpc.aio.AioRpcError as exc:
        code = exc.code().name
        details = exc.details() or ""
        if code == "DEADLINE_EXCEEDED" and case.timeout >= LONG_TIMEOUT:
            took = time.monotonic() - started
            code = "HANG" if took >= case.timeout * 0.95 else "SLOW"
        return code, details


async def _call_webhook(session: Any, base: str, case: Case) -> tuple[str, str]:
    import aiohttp

    path = MUTATE_PATH if case.method.endswith("mutate") else VALIDATE_PATH
    try:
        async with session.post(f"{base}{path}", data=case.payload,
                                headers={"Content-Type": "application/json"},
                                timeout=aiohttp.ClientTimeout(total=case.timeout)) as resp:
            body = await resp.read()
            text = body.decode("utf-8", "replace")
            if resp.status == 200:
                try:
                    doc = json.loads(body)
                    allowed = doc["response"]["allowed"]
                    if doc["response"].get("patch"):
                        json.loads(base64.b64decode(doc["response"]["patch"]))
                except Exception as exc:  # noqa: BLE001 - an answer the API server cannot read
                    return "BAD-ANSWER", f"{type(exc).__name__}: {exc}: {text[:500]}"
                return ("ALLOWED" if allowed else "DENIED"), text[:300]
            return f"HTTP-{resp.status}", text[:2000]
    except TimeoutError:
        return ("HANG" if case.timeout >= LONG_TIMEOUT else "CLIENT-TIMEOUT"), ""
    except aiohttp.ClientError as exc:
        return "DISCONNECTED", f"{type(exc).__name__}: {exc}"


class LogWatch:
    """Tracebacks and errors the server writes, as they appear; each one saves the requests
    sent just before it (the one that caused it is among them)."""

    PATTERN = re.compile(r"Traceback|\bERROR\b|\bCRITICAL\b")

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.hits: list[str] = []
        self.seen: set[str] = set()

    def first(self, line: str) -> bool:
        """Whether this error is new (times and numbers aside): the requests before the first
        of a kind are saved, not before every repeat."""
        key = re.sub(r"[0-9]+", "#", line.split(" ", 2)[-1])[:160]
        if key in self.seen:
            return False
        self.seen.add(key)
        return True

    def poll(self) -> list[str]:
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            chunk = f.read()
        cut = chunk.rfind(b"\n") + 1
        self.offset += cut
        new = []
        for line in chunk[:cut].decode("utf-8", "replace").splitlines():
            if self.PATTERN.search(line) and "Failed to export" not in line \
                    and "Transient error" not in line and "exporter" not in line.lower():
                new.append(line)
        self.hits += new
        return new


async def drive(server: Server, cases: Any, total: int, in_flight: int,
                findings: Findings) -> float:
    import aiohttp

    options = [("grpc.max_receive_message_length", 256 << 20),
               ("grpc.max_send_message_length", 256 << 20)]
    watch = LogWatch(server.log_path)
    ssl_ctx = ssl.create_default_context(cafile=str(server.pki.ca))
    base = f"https://127.0.0.1:{server.webhook_port}"
    sent = 0
    started = time.monotonic()
    async with grpc.aio.insecure_channel(server.target, options=options) as channel, \
            aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ssl_ctx)) as session:
        calls = {m: channel.unary_unary(f"/decider.v1.Decider/{m}",
                                        request_serializer=_identity,
                                        response_deserializer=_identity) for m in METHODS}
        await channel.channel_ready()

        async def worker() -> None:
            nonlocal sent
            while sent < total:
                case = next(cases)
                sent += 1
                findings.recent.append(case)
                t = time.monotonic()
                if case.method in WEBHOOK:
                    code, message = await _call_webhook(session, base, case)
                else:
                    code, message = await _call_grpc(calls, case)
                findings.latency[case.method] = max(findings.latency[case.method],
                                                    time.monotonic() - t)
                findings.codes[case.method][code] += 1
                if code in BAD_CODES or code == "BAD-ANSWER":
                    findings.save(case, code, message)

        async def watcher() -> None:
            last = 0
            while True:
                await asyncio.sleep(1.0)
                for line in watch.poll():
                    print(f"  server log: {line[:200]}", file=sys.stderr)
                    if watch.first(line):
                        for case in list(findings.recent):
                            findings.save(case, "LOGGED", line)
                if sent - last >= 5000 or not server.alive():
                    last = sent
                    rate = sent / max(time.monotonic() - started, 1e-9)
                    print(f"  {sent:,}/{total:,} sent, {rate:.0f}/s, "
                          f"{len(findings.saved)} saved", file=sys.stderr)
                    if not server.alive():
                        raise SystemExit("the server died")

        watch_task = asyncio.ensure_future(watcher())
        await asyncio.gather(*(worker() for _ in range(in_flight)))
        await asyncio.sleep(1.5)
        watch_task.cancel()
        for line in watch.poll():
            if watch.first(line):
                for case in list(findings.recent):
                    findings.save(case, "LOGGED", line)
    return time.monotonic() - started


def _cases(seeds: list[Seed], rng: random.Random) -> Any:
    while True:
        yield make_case(seeds, rng)


def report(findings: Findings, took: float, total: int, server: Server | None) -> None:
    print(f"\n## Fuzz: {total:,} requests over every RPC and the webhook, {took:.0f} s "
          f"({total / took:.0f}/s)\n")
    all_codes = sorted({c for counts in findings.codes.values() for c in counts})
    print("| RPC | requests | " + " | ".join(all_codes) + " | slowest s |")
    print("|---|---:|" + "---:|" * len(all_codes) + "---:|")
    for method in (*METHODS, *WEBHOOK):
        counts = findings.codes.get(method, collections.Counter())
        print(f"| {method} | {sum(counts.values()):,} | "
              + " | ".join(f"{counts.get(c, 0):,}" for c in all_codes)
              + f" | {findings.latency.get(method, 0):.1f} |")
    lines = bad = 0
    if server is not None and server.decision_log.exists():
        with open(server.decision_log, "rb") as f:
            for raw in f:
                lines += 1
                try:
                    json.loads(raw)
                except ValueError:
                    bad += 1
        print(f"\ndecision log: {lines:,} lines, {bad} not JSON; server log: "
              f"{server.log_path.stat().st_size:,} bytes")
    problems = [s for s in findings.saved if s[1] != "LOGGED"]
    logged = [s for s in findings.saved if s[1] == "LOGGED"]
    print(f"\n## Findings: {len(problems)} calls, {len({s[2] for s in logged})} distinct "
          f"server-log errors ({len(logged)} candidate requests saved) in {findings.out}\n")
    for stem, code, message in problems[:200]:
        print(f"- {stem}: {code}: {message[:200]}")
    for message in sorted({s[2] for s in logged})[:50]:
        print(f"- server log: {message[:200]}")


def replay(files: list[str], target: str | None, workers: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        server = None if target else Server(Path(tmp), workers, dict.fromkeys(NEW_GATES, True))
        try:
            address = target or server.target  # type: ignore[union-attr]
            for path in files:
                meta = json.loads(Path(path).with_suffix(".json").read_text())
                case = Case(meta["method"], Path(path).read_bytes(), LONG_TIMEOUT, meta["seed"])
                if case.method in WEBHOOK:
                    async def one(case: Case = case) -> tuple[str, str]:
                        import aiohttp

                        ctx = ssl.create_default_context(cafile=str(server.pki.ca))  # type: ignore[union-attr]
                        async with aiohttp.ClientSession(
                                connector=aiohttp.TCPConnector(ssl=ctx)) as session:
                            return await _call_webhook(
                                session, f"https://127.0.0.1:{server.webhook_port}", case)  # type: ignore[union-attr]
                else:
                    async def one(case: Case = case) -> tuple[str, str]:
                        async with grpc.aio.insecure_channel(address) as channel:
                            call = channel.unary_unary(f"/decider.v1.Decider/{case.method}",
                                                       request_serializer=_identity,
                                                       response_deserializer=_identity)
                            return await _call_grpc({case.method: call}, case)
                code, message = asyncio.run(one())
                print(f"{path}: {case.method} -> {code}: {message[:500]}")
            if server is not None:
                time.sleep(1)
                errors = [line for line in server.log_path.read_text().splitlines()
                          if LogWatch.PATTERN.search(line)]
                print("server log errors:", *errors[:20], sep="\n  ")
        finally:
            if server is not None:
                server.stop()


def inproc(seeds: list[Seed], rng: random.Random, total: int, findings: Findings) -> None:
    """The same cases decided in this process (no server, no webhook, no deadlines): a quick
    look for INTERNAL answers, with the refusals' messages counted by their field."""
    import logging

    logging.disable(logging.CRITICAL)
    reasons: collections.Counter[str] = collections.Counter()
    names = {0: "OK", 3: "INVALID_ARGUMENT", 8: "RESOURCE_EXHAUSTED", 13: "INTERNAL"}
    started = time.monotonic()
    for _ in range(total):
        case = make_case(seeds, rng)
        if case.method in WEBHOOK:
            continue
        reply = answer(case.method, case.payload, Limits(), want=3)
        code = names.get(reply.code, str(reply.code))
        findings.codes[case.method][code] += 1
        if code == "INTERNAL":
            findings.save(case, code, reply.message)
        elif code != "OK":
            reasons[re.sub(r"\[[0-9]+\]", "[i]", reply.message.split(":")[0])[:70]] += 1
    report(findings, time.monotonic() - started, total, None)
    print("\nmost common refusals (field):")
    for reason, n in reasons.most_common(25):
        print(f"  {n:6,}  {reason}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--in-flight", type=int, default=12)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", default="/tmp/fuzz-rpc")
    parser.add_argument("--webhook-gates", default="new", choices=("new", "none", "all"),
                        help="gates the webhook admits with (a server-wide setting)")
    parser.add_argument("--replay", nargs="+", metavar="FILE")
    parser.add_argument("--target", help="with --replay: a running server")
    parser.add_argument("--inproc", action="store_true",
                        help="decide the cases in this process, without a server")
    args = parser.parse_args()
    if args.replay:
        replay(args.replay, args.target, args.workers)
        return
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(args.seed)
    seeds = build_seeds()
    webhook_gates = {"new": dict.fromkeys(NEW_GATES, True), "none": {},
                     "all": dict.fromkeys(GATES, True)}[args.webhook_gates]
    print(f"# decider RPC fuzz, {time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} CPUs, "
          f"seed {args.seed}, {len(seeds)} seed JobSets, {args.in_flight} in flight, "
          f"{args.workers} workers, webhook gates {args.webhook_gates}")
    for old in [*out.glob("*.bin"), *out.glob("*.json")]:
        old.unlink()
    findings = Findings(out)
    if args.inproc:
        inproc(seeds, rng, args.requests, findings)
        return
    # The server's log, decision log and certificates stay beside the findings.
    workdir = out / "server"
    workdir.mkdir(exist_ok=True)
    server = Server(workdir, args.workers, webhook_gates)
    try:
        took = asyncio.run(drive(server, _cases(seeds, rng), args.requests, args.in_flight,
                                 findings))
        report(findings, took, args.requests, server)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
