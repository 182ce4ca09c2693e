"""Spec blocks of today's features, generated: spec.scheduling in every shape upstream's
composite API allows and many it does not, container ports and resources, and a JobSet's
status (startTime, executionAttempts, restarts, conditions).

Apart from the mutations that place them (bench/fuzz/mutate.py): a block is a whole, plausible
or not, where a mutation is one change at one place.
"""

from __future__ import annotations

import random
from typing import Any

from .values import (
    CONDITION_STATUS,
    CONDITION_TYPES,
    FLOATS,
    HUGE_INTS,
    MARK,
    PROTOCOLS,
    QUANTITIES,
    STRINGS,
    TIMES,
    hostile,
)


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
