"""Requests for every RPC and the webhook, built from a seed by mutations: the case stream.

The bytes are what reaches the server, so this is where what only the wire can carry goes in:
JSON text tricks (duplicate keys, NaN, numbers past any float), bytes that are not UTF-8,
`now` out of range, typed summaries with odd fields, expiring deadlines, feature gates in every
combination. Everything is drawn from one random.Random in a fixed order: a given --seed gives
the same requests on every run (protobuf may order a map's entries differently in the bytes).
"""

from __future__ import annotations

import contextlib
import copy
import json
import random
from collections.abc import Iterator
from typing import Any

from decider_api.summarize import job_summary, object_summary
from decider_api.v1 import decider_pb2 as pb

from .blocks import container_ports, resources
from .case import LONG_TIMEOUT, METHODS, WEBHOOK, Case
from .mutate import (
    counters_at_the_edge,
    mutate_anywhere,
    mutate_jobset,
    mutate_observed,
    tolerant,
)
from .seeds import Seed
from .values import BAD_UTF8, GATES, MARK, NOW, PSTRINGS, TIMES, hostile
from .wrong_types import wrong_type

# How often an observed object (and a stored JobSet) gets a wrong JSON type at a field the
# decider reads (wrong_types.py): the roads of issue 27, each taken often.
WRONG_TYPE_RATE = 0.3

# Client deadlines that expire mid-call, now and then: the server must drop the call cleanly.
TINY_TIMEOUTS = (0.0005, 0.002, 0.01, 0.05, 0.3)


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


def hand_written(obj: Any) -> pb.ObservedObject:
    """A typed entry as a client in another language writes it: the summary's fields from
    what looks right, the object as it is (the Python client would refuse a wrong type)."""
    def text(value: Any) -> str:
        if not isinstance(value, str) or MARK in value:
            return ""
        try:
            value.encode()
        except UnicodeEncodeError:  # a lone surrogate: no protobuf string holds it
            return ""
        return value

    meta = obj.get("metadata") if isinstance(obj, dict) else None
    meta = meta if isinstance(meta, dict) else {}
    return pb.ObservedObject(api_version=text(obj.get("apiVersion")) if isinstance(obj, dict)
                             else "", kind=text(obj.get("kind")) if isinstance(obj, dict)
                             else "", name=text(meta.get("name")) or "n",
                             uid=text(meta.get("uid")), object_json=json.dumps(obj))


def _typed_objects(req: pb.DecideRequest, observed: list[dict[str, Any]],
                   rng: random.Random) -> bool:
    """Observed objects as typed summaries (as the Python client sends them), or False when a
    Job cannot be summarized: then the request sends them whole. Another object the client
    refuses goes as a hand-written entry, as G1 and G3 of ../shared/repro did."""
    try:
        for i, obj in enumerate(observed):
            if obj.get("kind") == "Job":
                req.jobs.append(job_summary(obj, f"jobs[{i}]", containers=True))
            else:
                try:
                    req.objects.append(object_summary(obj, f"objects[{i}]"))
                except Exception:  # noqa: BLE001 - refused by the client: written by hand
                    req.objects.append(hand_written(obj))
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
    if observed and rng.random() < WRONG_TYPE_RATE:
        # Not a Job half the time: the Jobs are many, the objects read whole are few.
        others = [o for o in observed if o.get("kind") != "Job"]
        wrong_type(rng.choice(others if others and rng.random() < 0.5 else observed), rng)
    if rng.random() < WRONG_TYPE_RATE / 3:
        wrong_type(js, rng)
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
        jobs = [o for o in seed.observed if o.get("kind") == "Job"]
        if jobs and rng.random() < 0.2:
            return _validate_job(copy.deepcopy(rng.choice(jobs)), rng, timeout, seed.name,
                                 gates)
        req = pb.ValidateRequest(object_json=_dumps_hostile(js, rng))
        if seed.old is not None or rng.random() < 0.4:
            old = copy.deepcopy(seed.old or seed.jobset)
            if rng.random() < 0.4:
                tolerant(mutate_jobset, old, rng)
            if rng.random() < WRONG_TYPE_RATE:
                wrong_type(old, rng)
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
        if observed and rng.random() < WRONG_TYPE_RATE:
            wrong_type(rng.choice(observed), rng)
        for i, obj in enumerate(observed):
            try:
                summary = object_summary(obj, f"objects[{i}]")
            except Exception:  # noqa: BLE001 - the client refuses it: written by hand
                summary = hand_written(obj)
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
        if rng.random() < WRONG_TYPE_RATE:
            wrong_type(review["request"]["oldObject"], rng)
    if rng.random() < WRONG_TYPE_RATE / 3:
        wrong_type(js, rng)
    if rng.random() < 0.1:
        tolerant(mutate_anywhere, review, rng)
    body = _raw(_dumps_hostile(review, rng), rng)
    return Case(method, body, timeout, seed.name, {})


def _validate_job(job: dict[str, Any], rng: random.Random, timeout: float, note: str,
                  gates: dict[str, bool]) -> Case:
    """Validate of a batch/v1 Job (the gang rules), its new or old object given a wrong type
    at a field the decider reads."""
    old = copy.deepcopy(job)
    wrong_type(rng.choice((job, old)), rng)
    req = pb.ValidateRequest(object_json=_dumps_hostile(job, rng))
    if rng.random() < 0.7:
        req.old_object_json = _dumps_hostile(old, rng)
    req.options.feature_gates.update(gates)
    req.options.gang_api_version = rng.choice(("", "scheduling.k8s.io/v1alpha2",
                                               "scheduling.k8s.io/v1alpha1"))
    return Case("Validate", _swap_marks(req.SerializeToString(), rng), timeout, note, gates)


def case_stream(seeds: list[Seed], rng: random.Random) -> Iterator[Case]:
    """Cases without end: the served run's workers take the next as each call returns."""
    while True:
        yield make_case(seeds, rng)
