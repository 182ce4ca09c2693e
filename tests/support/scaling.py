"""JobSets of any shape in every situation a pass meets, for scaling tests and benchmarks.

A shape is R replicated Jobs of K Jobs each; a situation says what exists and which feature
gates are on. Every scenario is a whole `Observed`, so a test can decide it at two sizes and
compare the work done (tests/test_scaling.py) and the benchmark can time it
(bench/decide_bench.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from decider.core import constants as c
from decider.core.decide import decide
from decider.core.model import (
    JobCondition,
    Observed,
    ObservedJob,
    ObservedObject,
    ObservedPod,
    Options,
    PodTemplateSummary,
)
from support.builders import NOW, UID, jobset, rjob

GANG = "jobset-decider.io/gang-policy"
FAILED_AT = "2026-01-01T11:00:00Z"


@dataclass(frozen=True)
class Shape:
    rjobs: int
    replicas: int

    @property
    def jobs(self) -> int:
        return self.rjobs * self.replicas


def rjob_names(shape: Shape) -> list[str]:
    return [f"r{i}" for i in range(shape.rjobs)]


def _job(rjob_name: str, index: int, *, attempt: int = 0, job_attempt: int | None = None,
         state: str = "active", suspend: bool = False, parallelism: int = 2,
         pod_template: PodTemplateSummary | None = None, message: str = "") -> ObservedJob:
    labels = {c.JOBSET_NAME: "js", c.REPLICATED_JOB_NAME: rjob_name,
              c.RESTART_ATTEMPT: str(attempt), c.JOB_INDEX: str(index)}
    if job_attempt is not None:
        labels[c.JOB_RESTART_ATTEMPT] = str(job_attempt)
    conditions = []
    succeeded = 0
    ready = 0 if suspend else parallelism
    if state == "failed":
        conditions.append(JobCondition(type="Failed", status="True",
                                       reason="BackoffLimitExceeded", message=message,
                                       last_transition_time=FAILED_AT))
        ready = 0
    elif state == "succeeded":
        conditions.append(JobCondition(type="Complete", status="True",
                                       last_transition_time=FAILED_AT))
        succeeded, ready = parallelism, 0
    return ObservedJob(
        name=f"js-{rjob_name}-{index}", uid=f"uid-{rjob_name}-{index}", controller_uid=UID,
        labels=labels, suspend=suspend, parallelism=parallelism, completions=parallelism,
        active=0 if suspend or state != "active" else parallelism, ready=ready,
        succeeded=succeeded, conditions=conditions, creation_timestamp="2026-01-01T10:00:00Z",
        start_time="" if suspend else "2026-01-01T10:00:01Z", pod_template=pod_template)


def _jobset(shape: Shape, **spec: Any) -> dict[str, Any]:
    return jobset(*[rjob(name, shape.replicas, parallelism=2, completions=2)
                    for name in rjob_names(shape)], **spec)


def _jobs(shape: Shape, **kwargs: Any) -> list[ObservedJob]:
    return [_job(name, i, **kwargs) for name in rjob_names(shape)
            for i in range(shape.replicas)]


def _settled(observed: Observed) -> Observed:
    """The same observation with the status the first pass writes, so the pass it describes
    is the steady one (nothing left to write)."""
    plan = decide(observed)
    observed.jobset["status"] = plan.status
    return observed


def _observed(js: dict[str, Any], jobs: list[ObservedJob], *, gates: dict[str, bool] = (),
              pods: list[ObservedPod] = (), objects: list[ObservedObject] | None = None
              ) -> Observed:
    # A plan budget, as the server sets one: the pass then sizes the Jobs it creates first.
    return Observed(jobset=js, now=NOW, jobs=jobs, pods=list(pods),
                    objects=[ObservedObject(api_version="v1", kind="Service", name="js")]
                    if objects is None else objects,
                    options=Options(feature_gates=dict(gates), max_plan_bytes=64 << 20))


def steady(shape: Shape) -> Observed:
    return _settled(_observed(_jobset(shape, failurePolicy={"maxRestarts": 3}), _jobs(shape)))


def restart(shape: Shape) -> Observed:
    js = _jobset(shape, failurePolicy={"maxRestarts": 3},
                 status={"restarts": 1, "restartsCountTowardsMax": 1})
    return _observed(js, _jobs(shape))


def recreate(shape: Shape) -> Observed:
    return _observed(_jobset(shape, failurePolicy={"maxRestarts": 3}), [])


def _job_restarts_status(shape: Shape, attempt: int) -> dict[str, Any]:
    return {"restarts": 0, "replicatedJobsStatus": [
        {"name": name, "ready": 0, "succeeded": 0, "failed": 0, "active": 0, "suspended": 0,
         "jobRestarts": [attempt] * shape.replicas,
         "jobRestartsCountTowardsMax": [attempt] * shape.replicas}
        for name in rjob_names(shape)]}


def restart_job_steady(shape: Shape) -> Observed:
    """RestartJob gate: per-Job restart counters in the status, every Job current."""
    js = _jobset(shape, failurePolicy={"maxRestarts": 3},
                 status=_job_restarts_status(shape, 1))
    return _settled(_observed(js, _jobs(shape, job_attempt=1),
                              gates={c.GATE_RESTART_JOB: True}))


def restart_job_recreate(shape: Shape) -> Observed:
    """RestartJob gate: every Job of an earlier per-Job attempt is gone; all are built again
    with their index's job-restart-attempt."""
    js = _jobset(shape, failurePolicy={"maxRestarts": 3},
                 status=_job_restarts_status(shape, 1))
    return _observed(js, [], gates={c.GATE_RESTART_JOB: True})


def restart_job_failed(shape: Shape) -> Observed:
    """RestartJob gate: one failed Job per replicated Job, a RestartJob rule targeting all."""
    names = rjob_names(shape)
    js = _jobset(shape, failurePolicy={"maxRestarts": 10 ** 6, "rules": [
        {"action": "RestartJob", "targetReplicatedJobs": names,
         "onJobFailureReasons": ["BackoffLimitExceeded"],
         "onJobFailureMessagePatterns": ["oom.*", "disk"]}]},
        status=_job_restarts_status(shape, 0))
    jobs = [_job(name, i, job_attempt=0, state="failed" if i == 0 else "active",
                 message="oom killed") for name in names for i in range(shape.replicas)]
    return _observed(js, jobs, gates={c.GATE_RESTART_JOB: True})


def failed(shape: Shape) -> Observed:
    """Every Job failed; rules that match none of them come first, so each is tried on all."""
    names = rjob_names(shape)
    rules = [{"action": "FailJobSet", "targetReplicatedJobs": names,
              "onJobFailureReasons": [f"Other{k}" for k in range(5)]},
             {"action": "FailJobSet", "targetReplicatedJobs": names,
              "onJobFailureMessagePatterns": ["^never$"]},
             {"action": "RestartJobSet", "targetReplicatedJobs": names[::-1]}]
    js = _jobset(shape, failurePolicy={"maxRestarts": 3, "rules": rules})
    return _observed(js, _jobs(shape, state="failed", message="exit code 1"))


def succeeded(shape: Shape) -> Observed:
    """Every Job succeeded, the success policy targets every replicated Job."""
    js = _jobset(shape, successPolicy={"operator": "All",
                                       "targetReplicatedJobs": rjob_names(shape)})
    return _observed(js, _jobs(shape, state="succeeded"))


def elastic(shape: Shape) -> Observed:
    """ElasticJobSet gate: the template's parallelism changed; every live Job is patched."""
    js = _jobset(shape)
    for item in js["spec"]["replicatedJobs"]:
        item["template"]["spec"]["parallelism"] = 3
        item["template"]["spec"]["completions"] = 3
    return _observed(js, _jobs(shape), gates={c.GATE_ELASTIC_JOBSET: True})


def resume(shape: Shape) -> Observed:
    """Every Job suspended, the JobSet not: each is resumed with the template's scheduling
    directives merged into its own."""
    js = _jobset(shape)
    for item in js["spec"]["replicatedJobs"]:
        pod = item["template"]["spec"]["template"]
        pod["metadata"] = {"labels": {"queue": "a"}, "annotations": {"note": "b"}}
        pod["spec"]["nodeSelector"] = {"pool": "gpu"}
        pod["spec"]["tolerations"] = [{"key": f"t{k}", "operator": "Exists"} for k in range(8)]
        pod["spec"]["schedulingGates"] = [{"name": f"g{k}"} for k in range(4)]
    template = PodTemplateSummary(labels={"app": "x"}, node_selector={"zone": "z"})
    return _observed(js, _jobs(shape, suspend=True, pod_template=template))


def suspend(shape: Shape) -> Observed:
    return _observed(_jobset(shape, suspend=True), _jobs(shape))


def in_order(shape: Shape) -> Observed:
    """InOrder startup, every replicated Job started: the pass walks all of them."""
    return _settled(_observed(_jobset(shape, startupPolicy={"startupPolicyOrder": "InOrder"}),
                              _jobs(shape)))


def depends_on(shape: Shape) -> Observed:
    """Each replicated Job depends on the one before it, all ready."""
    names = rjob_names(shape)
    js = jobset(*[rjob(name, shape.replicas, parallelism=2, completions=2,
                       depends_on=[(names[i - 1], "Ready")] if i else None)
                  for i, name in enumerate(names)])
    return _settled(_observed(js, _jobs(shape)))


def in_place(shape: Shape) -> Observed:
    """InPlaceRestart gate: every pod at attempt 1, the barrier not yet lifted."""
    js = _jobset(shape, failurePolicy={"maxRestarts": 5, "restartStrategy": "InPlaceRestart"})
    pods = [ObservedPod(name=f"p-{name}-{i}-{k}", phase="Running",
                        annotations={c.IN_PLACE_RESTART_ATTEMPT: "1"})
            for name in rjob_names(shape) for i in range(shape.replicas) for k in range(2)]
    return _observed(js, _jobs(shape), gates={c.GATE_IN_PLACE_RESTART: True}, pods=pods)


def gang(shape: Shape) -> Observed:
    """The whole JobSet one gang: its Workload and PodGroup, then every Job, linked."""
    js = _jobset(shape)
    js["metadata"]["annotations"] = {GANG: "JobSetAsGang"}
    return _observed(js, [])


def volumes(shape: Shape) -> Observed:
    """PVC templates mounted by every replicated Job; many other objects observed."""
    templates = [{"metadata": {"name": f"data{k}"}, "spec": {"accessModes": ["ReadWriteOnce"]}}
                 for k in range(shape.rjobs)]
    js = _jobset(shape, volumeClaimPolicies=[{"templates": templates}])
    for item in js["spec"]["replicatedJobs"]:
        container = item["template"]["spec"]["template"]["spec"]["containers"][0]
        container["volumeMounts"] = [{"name": "data0", "mountPath": "/d"}]
    objects = [ObservedObject(api_version="v1", kind="ConfigMap", name=f"cm{k}")
               for k in range(shape.rjobs)]
    return _observed(js, [], objects=objects)


SITUATIONS: dict[str, Callable[[Shape], Observed]] = {
    f.__name__: f for f in (steady, restart, recreate, restart_job_steady, restart_job_recreate,
                            restart_job_failed, failed, succeeded, elastic, resume, suspend,
                            in_order, depends_on, in_place, gang, volumes)}


def request(observed: Observed) -> bytes:
    """The DecideRequest a client would send for `observed`, serialized."""
    from upstream.raw_parity import job_object, other_object, pod_object

    from decider_client import observe

    owned = [*(job_object(j) for j in observed.jobs),
             *(other_object(o) for o in observed.objects),
             *(pod_object(p, observed.jobset) for p in observed.pods)]
    req = observe.build_decide_request(observed.jobset, owned, observed.now,
                                       feature_gates=dict(observed.options.feature_gates))
    return req.SerializeToString(deterministic=True)
