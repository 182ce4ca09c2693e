"""What a spec.scheduling tree of many Jobs costs per pass: validation, Decide, Simulate.

The case is the one a fuzz run found (100,000 requests, one Simulate stopped by the server's
10 s limit): a JobSet whose replicatedJob ``workers`` has 100,000 replicas (here 99,999 beside
one driver Job: 100,000 Jobs in all, the most the decider accepts), a job-level gang per Job
(``spec.scheduling.replicatedJobs[].job``) and the gates JobSetWorkloadAwareSchedulingAPI and
JobSetGangOfGangs on. Prints (Markdown) median and best times for:

1. validation alone (``jobset_design.validate``), as each Decide pass runs it: the tree of the
   fuzz case (invalid: its gang minCount 3 exceeds the Jobs' parallelism 0), the same tree made
   valid (parallelism 4), and the flat layout of the valid one (gate JobSetGangOfGangs off);
2. one Decide (the core's ``decide``) of each: the old attempt's Jobs observed, so the pass
   deletes them and plans the gang step (the valid tree builds its 100,000 leaf PodGroups);
3. the whole Simulate as a decision worker answers it (request bytes in, answer bytes out),
   the fuzz case's request: one Job success event, up to 100 passes;
4. a small JobSet gang scheduled the same way (2 replicated Jobs, 4 Jobs), one Decide, to show
   the usual case does not move.

Usage: python bench/gang_tree_bench.py [--rounds N] [--tree DIR] [--skip-simulate]
``--tree DIR`` measures another checkout (e.g. ``git worktree add /tmp/base main``), so the
same script gives the before and after figures.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

GATES = {"JobSetWorkloadAwareSchedulingAPI": True, "JobSetGangOfGangs": True}
FLAT_GATES = {"JobSetWorkloadAwareSchedulingAPI": True}
NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)
UID = "3e1d7b0a-4c55-4b8e-9f2a-7d6c5b4a3f21"


def _rjob(name: str, replicas: int, parallelism: int) -> dict[str, Any]:
    return {"name": name, "replicas": replicas, "template": {"spec": {
        "completionMode": "Indexed", "parallelism": parallelism, "completions": 4,
        "template": {"spec": {"restartPolicy": "Never",
                              "containers": [{"name": name, "image": "busybox"}]}}}}}


def gang_jobset(workers: int, parallelism: int) -> dict[str, Any]:
    """The fuzz case's shape: a one-Job driver entry, and a job-level gang per worker Job."""
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "metadata": {"name": "trainer", "namespace": "default", "uid": UID,
                     "creationTimestamp": "2026-01-01T11:00:00Z"},
        "spec": {
            "scheduling": {"replicatedJobs": [
                {"targetReplicatedJobs": ["driver"]},
                {"targetReplicatedJobs": ["workers"],
                 "job": {"schedulingPolicy": {"gang": {"minCount": 3}},
                         "resourceClaims": [{"name": "gpus",
                                             "resourceClaimTemplateName": "gpu-tmpl"}]}}]},
            "replicatedJobs": [_rjob("driver", 1, 1), _rjob("workers", workers, parallelism)],
            "failurePolicy": {"maxRestarts": 10},
        },
        # Restarted once: the observed Jobs of attempt 0 are deleted by the pass.
        "status": {"restarts": 1, "restartsCountTowardsMax": 1},
    }


def _owner() -> dict[str, Any]:
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": "trainer",
            "uid": UID, "controller": True, "blockOwnerDeletion": True}


def observed_json() -> list[str]:
    """The headless Service and three Jobs of the previous attempt."""
    out = [{"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "trainer", "namespace": "default", "uid": "uid-svc",
                         "ownerReferences": [_owner()],
                         "creationTimestamp": "2026-01-01T11:00:00Z"},
            "spec": {"clusterIP": "None",
                     "selector": {"jobset.sigs.k8s.io/jobset-name": "trainer"}}}]
    for rjob, index in (("driver", 0), ("workers", 0), ("workers", 1)):
        name = f"trainer-{rjob}-{index}"
        out.append({"apiVersion": "batch/v1", "kind": "Job", "metadata": {
            "name": name, "namespace": "default", "uid": f"uid-{name}",
            "ownerReferences": [_owner()], "creationTimestamp": "2026-01-01T11:00:00Z",
            "labels": {"jobset.sigs.k8s.io/jobset-name": "trainer",
                       "jobset.sigs.k8s.io/jobset-uid": UID,
                       "jobset.sigs.k8s.io/replicatedjob-name": rjob,
                       "jobset.sigs.k8s.io/restart-attempt": "0",
                       "jobset.sigs.k8s.io/job-index": str(index)}},
            "spec": {"parallelism": 1, "completions": 4,
                     "template": {"spec": {"containers": [{"name": rjob, "image": "busybox"}]}}},
            "status": {"active": 1}})
    return [json.dumps(o) for o in out]


def request(pb: Any, js: dict[str, Any], gates: dict[str, bool], simulate: bool) -> Any:
    observed = pb.DecideRequest(jobset_json=json.dumps(js), now=NOW,
                                observed_json=observed_json())
    observed.options.feature_gates.update(gates)
    if not simulate:
        return observed
    sim = pb.SimulateRequest(observed=observed)
    sim.events.add(at_seconds=601, type=pb.SIMULATION_EVENT_TYPE_JOB_SUCCEEDED,
                   job="trainer-driver-0")
    return sim


def timed(fn: Callable[[], Any], rounds: int) -> list[float]:
    out = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def row(label: str, samples: list[float], note: str = "") -> None:
    print(f"| {label} | {len(samples)} | {statistics.median(samples) * 1000:,.2f} | "
          f"{min(samples) * 1000:,.2f} | {note} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tree", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--skip-simulate", action="store_true")
    args = parser.parse_args()
    sys.path.insert(0, str(args.tree.resolve()))

    import decider
    from decider.contract.convert import observed_from_proto
    from decider.contract.limits import Limits
    from decider.core.decide import decide
    from decider.core.gang import jobset_design, jobset_facts
    from decider.service.dispatch import answer
    from decider.v1 import decider_pb2 as pb
    print(f"tree: {Path(decider.__file__).resolve().parent.parent}")
    print()
    print("| what | runs | median ms | best ms | outcome |")
    print("|---|---:|---:|---:|---|")

    cases = [("tree, fuzz case (invalid)", gang_jobset(99_999, 0), GATES),
             ("tree, valid", gang_jobset(99_999, 4), GATES),
             ("flat, valid", gang_jobset(99_999, 4), FLAT_GATES)]
    for label, js, gates in cases:
        facts = jobset_facts.read_jobset(js)
        errors = jobset_design.validate(facts, gates)
        row(f"validate, 100,000 Jobs, {label}",
            timed(lambda f=facts, g=gates: jobset_design.validate(f, g), args.rounds),
            f"{len(errors)} error(s)" + (f": {errors[0]}"[:90] if errors else ""))
    for label, js, gates in cases:
        observed = observed_from_proto(request(pb, js, gates, simulate=False))
        plan = decide(observed)
        row(f"Decide, 100,000 Jobs, {label}",
            timed(lambda o=observed: decide(o), args.rounds),
            f"{len(plan.actions)} actions")
    small = gang_jobset(2, 4)
    observed = observed_from_proto(request(pb, small, GATES, simulate=False))
    plan = decide(observed)
    row("Decide, small tree JobSet (4 Jobs)", timed(lambda: decide(observed), args.rounds * 200),
        f"{len(plan.actions)} actions")
    if args.skip_simulate:
        return
    payload = request(pb, gang_jobset(99_999, 0), GATES, simulate=True).SerializeToString()
    reply = answer("Simulate", payload, Limits())
    code = getattr(reply, "code", None)
    passes = ""
    if code == 0:
        response = pb.SimulateResponse()
        response.ParseFromString(reply.body)
        passes = f", {len(response.steps)} passes"
    row("Simulate (worker path), fuzz case",
        timed(lambda: answer("Simulate", payload, Limits()), max(1, args.rounds // 2)),
        f"code {code}{passes}")


if __name__ == "__main__":
    main()
