"""Hypothesis strategies: random JobSets, child Jobs, pods and options, shaped as callers send
them (mostly well-formed, with the malformed corners a real cluster produces), plus JSON-like
junk and a mutator that plants junk anywhere in a well-formed object.

HYPOTHESIS_PROFILE=thorough multiplies every test's example count by ten.
"""

from __future__ import annotations

import copy
import json
import os
from datetime import timedelta
from typing import Any

from hypothesis import strategies as st

from decider.core import constants as c
from decider.core.model import (
    JobCondition,
    Observed,
    ObservedJob,
    ObservedObject,
    ObservedPod,
    Options,
    PodTemplateSummary,
    Toleration,
)
from decider_api.v1 import decider_pb2 as pb
from decider_client import observe
from support.builders import NOW, UID

THOROUGH = os.environ.get("HYPOTHESIS_PROFILE", "") == "thorough"


def examples(n: int) -> int:
    """The example count for a test: n by default (the suite stays near 30 s), 10n thorough."""
    return n * 10 if THOROUGH else n


JS_NAME = "js"
RJOB_NAMES = ("a", "b", "w")
TIMES = ("2026-01-01T10:00:00Z", "2026-01-01T11:00:00Z", "2026-01-01T11:00:00+02:00",
         "2026-01-01T11:59:59Z", "2026-01-01T12:00:00Z", "", "not-a-time", "2026-01-01T13:00:00")
MESSAGES = ("", "exit 3", "exit \u0663", "OOMKilled\n", "Pod was evicted", "oom", "k\u00e9a",
            "grid]")
# Go's syntax (POSIX and Unicode classes, \Q..\E, \B) and patterns Go refuses, which never match.
PATTERNS = ("", "oom", r"exit \d+$", "(?=x)", "[", "(?i)OOM", "evicted$", r"(a)\1",
            r"[[:digit:]]+", r"\pL+$", r"\Q(x)\E", r"\B", r"\C", "(a+)+$")
REASONS = (*c.JOB_FAILURE_REASONS, "", "SomethingElse")
GATES = (c.GATE_RESTART_JOB, c.GATE_IN_PLACE_RESTART, c.GATE_ELASTIC_JOBSET)

small = st.integers(min_value=0, max_value=4)
maybe_small = st.none() | small


def _maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.none() | strategy


@st.composite
def replicated_job(draw: st.DrawFn, name: str, names: list[str]) -> dict[str, Any]:
    spec: dict[str, Any] = {"template": {"spec": {
        "restartPolicy": "OnFailure",
        "containers": [{"name": "main", "image": "busybox",
                        "volumeMounts": [{"name": "data", "mountPath": "/d"}]}],
        **draw(st.fixed_dictionaries({}, optional={
            "nodeSelector": st.just({"pool": "gpu"}),
            "tolerations": st.just([{"key": "k", "operator": "Exists",
                                     "tolerationSeconds": 5}]),
            "schedulingGates": st.just([{"name": "kueue"}]),
        })),
    }}}
    for key in ("parallelism", "completions"):
        value = draw(maybe_small)
        if value is not None:
            spec[key] = value
    mode = draw(st.sampled_from([None, "Indexed", "NonIndexed"]))
    if mode is not None:
        spec["completionMode"] = mode
    out: dict[str, Any] = {"name": name, "template": {"spec": spec}}
    replicas = draw(maybe_small)
    if replicas is not None:
        out["replicas"] = replicas
    if draw(st.booleans()):
        out["template"]["metadata"] = {"labels": {"team": "ml"},
                                       "annotations": draw(st.sampled_from([
                                           {}, {c.EXCLUSIVE_TOPOLOGY: "rack"},
                                           {c.EXCLUSIVE_TOPOLOGY: "rack",
                                            c.NODE_SELECTOR_STRATEGY: "true"}]))}
    if draw(st.booleans()):
        out["groupName"] = draw(st.sampled_from(["g1", "g2"]))
    deps = draw(st.lists(st.fixed_dictionaries(
        {"name": st.sampled_from([*names, "unknown"])},
        optional={"status": st.sampled_from(c.DEPENDS_ON_STATUSES)}), max_size=2))
    if deps:
        out["dependsOn"] = deps
    return out


@st.composite
def failure_policy(draw: st.DrawFn, names: list[str]) -> dict[str, Any]:
    rules = []
    for i in range(draw(st.integers(0, 3))):
        rule: dict[str, Any] = {"action": draw(st.sampled_from(c.FAILURE_ACTIONS))}
        if draw(st.booleans()):
            rule["name"] = f"rule{i}"
        for key, values in (("onJobFailureReasons", REASONS),
                            ("onJobFailureMessagePatterns", PATTERNS),
                            ("targetReplicatedJobs", (*names, "unknown"))):
            picked = draw(st.lists(st.sampled_from(values), max_size=2))
            if picked:
                rule[key] = picked
        rules.append(rule)
    out: dict[str, Any] = {"rules": rules} if rules or draw(st.booleans()) else {}
    max_restarts = draw(maybe_small)
    if max_restarts is not None:
        out["maxRestarts"] = max_restarts
    strategy = draw(st.sampled_from([None, *c.RESTART_STRATEGIES]))
    if strategy is not None:
        out["restartStrategy"] = strategy
    return out


@st.composite
def condition(draw: st.DrawFn, types: tuple[str, ...]) -> dict[str, Any]:
    return {"type": draw(st.sampled_from(types)),
            "status": draw(st.sampled_from(["True", "False", "Unknown"])),
            "reason": draw(st.sampled_from(["", "R", c.REASON_ALL_JOBS_COMPLETED])),
            "message": draw(st.sampled_from(["", "m"])),
            "lastTransitionTime": draw(st.sampled_from(TIMES))}


@st.composite
def jobset_status(draw: st.DrawFn, names: list[str]) -> dict[str, Any]:
    status: dict[str, Any] = {}
    for key in ("restarts", "restartsCountTowardsMax"):
        value = draw(maybe_small)
        if value is not None:
            status[key] = value
    conds = draw(st.lists(condition((c.COMPLETED, c.FAILED, c.SUSPENDED, c.STARTUP_IN_PROGRESS,
                                     c.STARTUP_COMPLETED, c.RESTARTING)), max_size=4))
    if conds:
        status["conditions"] = conds
    # Mostly the terminal state its conditions imply; sometimes whatever.
    if draw(st.integers(0, 4)) == 0:
        status["terminalState"] = draw(st.sampled_from(["", c.COMPLETED, c.FAILED]))
    else:
        state = terminal_state_of(status).replace("?", "")
        if state or draw(st.booleans()):
            status["terminalState"] = state
    entries = []
    for name in draw(st.lists(st.sampled_from([*names, "gone"]), max_size=4)):
        entry: dict[str, Any] = {"name": name}
        for key in ("ready", "succeeded", "failed", "active", "suspended"):
            entry[key] = draw(small)
        for key in ("jobRestarts", "jobRestartsCountTowardsMax"):
            # Any length: the RestartJob bookkeeping must survive a replicas change.
            values = draw(st.lists(small, max_size=5))
            if values or draw(st.booleans()):
                entry[key] = values
        entries.append(entry)
    if entries:
        status["replicatedJobsStatus"] = entries
    for key in ("previousInPlaceRestartAttempt", "currentInPlaceRestartAttempt"):
        if draw(st.integers(0, 5)) == 0:
            status[key] = draw(small)
    return status


def terminal_state_of(status: dict[str, Any]) -> str:
    """The terminal state a status's conditions imply ("" when neither finishing one is True)."""
    true = {cd.get("type") for cd in status.get("conditions") or () if cd.get("status") == "True"}
    if c.COMPLETED in true and c.FAILED in true:
        return "?"  # both: no single consistent answer
    if c.COMPLETED in true:
        return c.COMPLETED
    if c.FAILED in true:
        return c.FAILED
    return ""


@st.composite
def jobsets(draw: st.DrawFn) -> dict[str, Any]:
    names = draw(st.lists(st.sampled_from(RJOB_NAMES), min_size=0, max_size=3, unique=True))
    if names and draw(st.integers(0, 15)) == 0:
        names.append(names[0])  # a duplicate name: InvalidInput
    spec: dict[str, Any] = {"replicatedJobs": [draw(replicated_job(n, names)) for n in names]}
    if draw(st.booleans()):
        spec["startupPolicy"] = {"startupPolicyOrder": draw(st.sampled_from(c.STARTUP_ORDERS))}
    if draw(st.booleans()):
        spec["failurePolicy"] = draw(failure_policy(names))
    if draw(st.booleans()):
        success: dict[str, Any] = {"operator": draw(st.sampled_from(c.OPERATORS))}
        targets = draw(st.lists(st.sampled_from([*names, "unknown"]), max_size=2))
        if targets:
            success["targetReplicatedJobs"] = targets
        spec["successPolicy"] = success
    suspend = draw(st.sampled_from([None, True, False]))
    if suspend is not None:
        spec["suspend"] = suspend
    ttl = draw(st.sampled_from([None, 0, 5, 7200]))
    if ttl is not None:
        spec["ttlSecondsAfterFinished"] = ttl
    if names and draw(st.booleans()):
        spec["coordinator"] = {"replicatedJob": draw(st.sampled_from(names)),
                               "jobIndex": draw(small), "podIndex": draw(small)}
    if draw(st.integers(0, 3)) == 0:
        spec["volumeClaimPolicies"] = [{
            "templates": [{"metadata": {"name": "data"},
                           "spec": {"accessModes": ["ReadWriteOnce"]}}],
            "retentionPolicy": {"whenDeleted": draw(st.sampled_from(c.RETENTION_POLICIES))}}]
    if draw(st.booleans()):
        spec["network"] = draw(st.fixed_dictionaries({}, optional={
            "enableDNSHostnames": st.booleans(), "subdomain": st.just("net"),
            "publishNotReadyAddresses": st.booleans()}))
    managed_by = draw(st.sampled_from([None, None, None, c.UPSTREAM_CONTROLLER, "someone/else"]))
    if managed_by is not None:
        spec["managedBy"] = managed_by
    annotations = draw(st.sampled_from([
        {}, {c.RECONCILIATION_MODE: c.RECONCILIATION_MODE_INDEPENDENT},
        {c.SKIP_SUSPEND_RECONCILIATION: "true"}, {c.EXCLUSIVE_TOPOLOGY: "zone"}]))
    meta: dict[str, Any] = {"name": JS_NAME, "namespace": "default", "uid": UID,
                            "resourceVersion": "7"}
    if annotations:
        meta["annotations"] = annotations
    if draw(st.integers(0, 15)) == 0:
        meta["deletionTimestamp"] = "2026-01-01T11:59:00Z"
    out = {"apiVersion": c.API_VERSION, "kind": c.KIND, "metadata": meta, "spec": spec}
    if draw(st.integers(0, 3)):
        out["status"] = draw(jobset_status(names))
    return out


def _label_value(valid: st.SearchStrategy[str]) -> st.SearchStrategy[str | None]:
    # Mostly valid, sometimes missing or malformed, as a hand-edited or foreign Job has it.
    return st.one_of(valid, valid, valid, st.none(), st.sampled_from(["", "x", "-1", " 1", "1.0"]))


@st.composite
def child_job(draw: st.DrawFn, uid: str) -> ObservedJob:
    rjob_name = draw(st.sampled_from([*RJOB_NAMES, "unknown"]))
    index = draw(st.integers(0, 5))
    labels: dict[str, str] = {c.JOBSET_NAME: JS_NAME}
    for key, value in ((c.REPLICATED_JOB_NAME, st.just(rjob_name)),
                       (c.RESTART_ATTEMPT, st.integers(0, 3).map(str)),
                       (c.JOB_INDEX, st.just(str(index))),
                       (c.JOB_RESTART_ATTEMPT, st.integers(0, 3).map(str))):
        v = draw(_label_value(value))
        if v is not None:
            labels[key] = v
    conditions = [JobCondition(type=cd["type"], status=cd["status"],
                               reason=draw(st.sampled_from(REASONS)),
                               message=draw(st.sampled_from(MESSAGES)),
                               last_transition_time=cd["lastTransitionTime"])
                  for cd in draw(st.lists(condition((c.JOB_COMPLETE, c.JOB_FAILED, "Suspended",
                                                     "FailureTarget")), max_size=3))]
    pod_template = None
    if draw(st.booleans()):
        pod_template = PodTemplateSummary(
            labels=draw(st.sampled_from([{}, {"team": "ml"}, {"other": "x"}])),
            node_selector=draw(st.sampled_from([{}, {"pool": "gpu"}])),
            tolerations=draw(st.sampled_from([[], [Toleration(key="k", operator="Exists",
                                                              toleration_seconds=5)]])),
            scheduling_gates=draw(st.sampled_from([[], ["kueue"]])))
    return ObservedJob(
        name=draw(st.sampled_from([f"{JS_NAME}-{rjob_name}-{index}", "stranger"])),
        uid=uid,
        controller_uid=draw(st.sampled_from([UID, UID, UID, "", "uid-other"])),
        labels=labels,
        suspend=draw(st.sampled_from([None, True, False])),
        parallelism=draw(maybe_small),
        completions=draw(maybe_small),
        active=draw(small), ready=draw(small), succeeded=draw(small), failed=draw(small),
        conditions=conditions,
        deletion_timestamp=draw(st.sampled_from(["", "", "", "2026-01-01T11:59:00Z"])),
        start_time=draw(st.sampled_from(["", "2026-01-01T11:00:00Z"])),
        pod_template=pod_template,
        resource_version=str(draw(small)),
    )


@st.composite
def pods(draw: st.DrawFn) -> list[ObservedPod]:
    out = []
    for i in range(draw(st.integers(0, 4))):
        annotations = {}
        attempt = draw(st.sampled_from([None, "0", "1", "2", "5", "-1", "x"]))
        if attempt is not None:
            annotations[c.IN_PLACE_RESTART_ATTEMPT] = attempt
        out.append(ObservedPod(name=f"p{i}", phase=draw(st.sampled_from(["Running", "Failed"])),
                               annotations=annotations, max_container_restarts=draw(small)))
    return out


@st.composite
def observeds(draw: st.DrawFn) -> Observed:
    js = draw(jobsets())
    jobs = [draw(child_job(f"uid-job-{i}")) for i in range(draw(st.integers(0, 6)))]
    objects = []
    if draw(st.booleans()):
        objects.append(ObservedObject(api_version="v1", kind="Service", name=JS_NAME))
    if draw(st.booleans()):
        objects.append(ObservedObject(api_version="v1", kind="PersistentVolumeClaim",
                                      name=f"data-{JS_NAME}"))
    gates = draw(st.dictionaries(st.sampled_from(GATES), st.booleans()))
    controller = draw(st.sampled_from(["", "", "someone/else"]))
    now = NOW + timedelta(seconds=draw(st.sampled_from([0, 1, 30, 3600, 86400])))
    return Observed(jobset=js, now=now, jobs=jobs, objects=objects, pods=draw(pods()),
                    options=Options(controller_name=controller, feature_gates=gates))


def to_request(observed: Observed) -> pb.DecideRequest:
    """The DecideRequest a client would send for `observed`."""
    req = pb.DecideRequest(jobset_json=json.dumps(observed.jobset), now=observe.timestamp(
        observed.now), options=pb.Options(controller_name=observed.options.controller_name,
                                          feature_gates=dict(observed.options.feature_gates)))
    for job in observed.jobs:
        msg = pb.ObservedJob(
            name=job.name, uid=job.uid, controller_uid=job.controller_uid,
            labels=dict(job.labels), annotations=dict(job.annotations),
            active=job.active, ready=job.ready, succeeded=job.succeeded, failed=job.failed,
            conditions=[pb.Condition(type=cd.type, status=cd.status, reason=cd.reason,
                                     message=cd.message,
                                     last_transition_time=cd.last_transition_time)
                        for cd in job.conditions],
            deletion_timestamp=job.deletion_timestamp, start_time=job.start_time,
            resource_version=job.resource_version)
        for attr in ("suspend", "parallelism", "completions"):
            if getattr(job, attr) is not None:
                setattr(msg, attr, getattr(job, attr))
        if job.pod_template is not None:
            pt = job.pod_template
            msg.pod_template.CopyFrom(pb.PodTemplateSummary(
                labels=dict(pt.labels), annotations=dict(pt.annotations),
                node_selector=dict(pt.node_selector),
                tolerations=[pb.Toleration(key=t.key, operator=t.operator, value=t.value,
                                           effect=t.effect,
                                           toleration_seconds=t.toleration_seconds)
                             for t in pt.tolerations],
                scheduling_gates=list(pt.scheduling_gates)))
        req.jobs.append(msg)
    for obj in observed.objects:
        req.objects.append(pb.ObservedObject(api_version=obj.api_version, kind=obj.kind,
                                             name=obj.name, uid=obj.uid))
    for pod in observed.pods:
        req.pods.append(pb.ObservedPod(name=pod.name, phase=pod.phase,
                                       annotations=dict(pod.annotations),
                                       max_container_restarts=pod.max_container_restarts))
    return req


# --- junk ------------------------------------------------------------------------------------

_scalars = st.one_of(
    st.none(), st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=6),
    st.sampled_from(["", "0", "-1", "x", "True", "Ready", "InOrder", "FailJobSet", "(?=x)",
                     c.KIND, c.API_VERSION, "batch/v1", "Job", "Pod", UID,
                     "2026-01-01T11:00:00Z",
                     # The edges of the Timestamp range, as Go's time reads them.
                     "0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00",
                     "0999-05-01T00:00:00Z"]),
)
_keys = st.sampled_from(["name", "replicas", "template", "spec", "metadata", "status", "kind",
                         "apiVersion", "labels", "conditions", "type", "uid", "x"])
junk = st.recursive(_scalars, lambda children: st.one_of(
    st.lists(children, max_size=4), st.dictionaries(_keys, children, max_size=4)), max_leaves=12)


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a JSON value: the key/index path to it, the root's being ()."""
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out.extend(paths(v, (*prefix, k)))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.extend(paths(v, (*prefix, i)))
    return out


@st.composite
def mutated(draw: st.DrawFn, base: st.SearchStrategy[Any]) -> Any:
    """A well-formed value with junk planted at one to three random places (or a key dropped)."""
    value = copy.deepcopy(draw(base))
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(paths(value)))
        if not path:
            value = draw(junk)
            continue
        parent = value
        for step in path[:-1]:
            parent = parent[step]
        if isinstance(parent, dict) and draw(st.integers(0, 3)) == 0:
            del parent[path[-1]]
        else:
            parent[path[-1]] = draw(junk)
    return value
