"""Mutations of a JobSet and of what is observed of it, one change at a time.

Three kinds: blind (any place, any hostile value), aimed at today's fields of a JobSet, and
aimed at the observed objects (Workloads, PodGroups, CompositePodGroups, Services, Jobs). Blind
mutations find what nobody thought of; aimed ones reach the code of each feature, which a blind
change rarely gets past the parser to.
"""

from __future__ import annotations

import contextlib
import copy
import random
from typing import Any

from .blocks import container_ports, resources, scheduling_block, status_block
from .values import (
    CONDITION_STATUS,
    CONDITION_TYPES,
    FLOATS,
    HUGE_INTS,
    MARK,
    PROTOCOLS,
    PSTRINGS,
    STRINGS,
    TIMES,
    deep,
    hostile,
)


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
        _set(doc, path, deep(rng.choice((10, 98, 99, 100, 120)), _get(doc, path)))


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
            spec[key] = rng.choice((hostile(rng), deep(99), [spec.get(key)] * 50))
    else:
        mutate_anywhere(obj, rng)


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
