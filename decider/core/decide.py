"""One reconcile pass of a JobSet, in upstream's order (spec/jobset.md §2.2).

decide() reads top to bottom as the controller's procedure; each step lives in the module named
after the policy it applies. It is pure: the caller supplies the JobSet, what it owns, the time
and the options, and gets back the plan.
"""

from __future__ import annotations

from decider.core import (
    conditions,
    failure_policy,
    gang_lifecycle,
    in_place_restart,
    name_conflicts,
    startup_policy,
    success_policy,
    suspend,
    times,
    ttl_after_finished,
)
from decider.core import constants as c
from decider.core.child_jobs import (
    ReplicatedJobBuilder,
    headless_service,
    job_name,
    persistent_volume_claims,
)
from decider.core.children import (
    ChildJobs,
    RestartCounters,
    by_name,
    classify,
    replicated_jobs_status,
    statuses_equal,
)
from decider.core.depends_on import dependencies_met
from decider.core.jobset import JobSet, parse_jobset
from decider.core.model import Action, Observed, ObservedJob, Plan, whole_seconds
from decider.core.state import PassState, copy_json


def decide(observed: Observed) -> Plan:
    js = parse_jobset(observed.jobset)
    times.check_jobs(observed.jobs)
    if js.deletion_timestamp:
        return _untouched(js, f"JobSet {js.namespace}/{js.name} is being deleted: nothing to do")
    controller = observed.options.controller_name or c.UPSTREAM_CONTROLLER
    if js.managed_by is not None and js.managed_by != controller:
        return _untouched(js, f"JobSet {js.namespace}/{js.name} is managed by {js.managed_by}, "
                              f"not {controller}: nothing to do")

    st = PassState.start(js, observed)
    restart_job_gate = st.gate(c.GATE_RESTART_JOB)
    children = classify(js, observed.jobs, st.status, restart_job_gate)
    statuses = _update_replicated_jobs_status(st, children, restart_job_gate)

    if conditions.finished(st.status):
        _delete_jobs(st, children.active, "the JobSet is finished")
        gang_lifecycle.reconcile(st)  # a finished JobSet keeps no Workload/PodGroups
        ttl_after_finished.execute(st)
        return _finish(st)

    _delete_jobs(st, children.previous, "it belongs to a previous restart attempt")

    if not js.suspend and _all_jobs_ready(js, statuses):
        conditions.set_restarting_false(st, c.REASON_JOBS_READY, c.MSG_JOBS_READY)

    if children.failed:
        failure_policy.execute(st, children.failed)
        return _finish(st)

    if children.successful and success_policy.execute(st, children.successful):
        return _finish(st)

    _create_headless_service(st)
    _create_pvcs(st)
    # Workload and PodGroups before any Job: pods must find their gang (no-op without gang).
    gang = gang_lifecycle.reconcile(st)
    if st.gate(c.GATE_ELASTIC_JOBSET):
        _sync_job_scaling(st, children.active)
    if not gang.blocked:
        held = _create_jobs(st, children, statuses, restart_job_gate)
        gang_lifecycle.link_jobs(st, gang)
        if held:
            return _creation_failed(st, held)

    # In Independent mode each Job's spec.suspend belongs to someone else (seed 000).
    if js.independent:
        pass
    elif js.suspend:
        suspend.suspend_jobs(st, children.active)
    elif not gang.blocked:  # pods of resumed Jobs would join a gang that is not ours
        suspend.resume_jobs(st, children.active, statuses)

    if js.failure_policy is not None and js.failure_policy.restart_strategy == c.IN_PLACE_RESTART:
        if st.gate(c.GATE_IN_PLACE_RESTART):
            in_place_restart.execute(st)
        else:
            st.explain("restartStrategy InPlaceRestart needs the InPlaceRestart feature gate; "
                       "in-place restart is not reconciled")
    return _finish(st)


def _untouched(js: JobSet, sentence: str) -> Plan:
    # Normalized as _finish does: a plan's status has every counter and terminalState whichever
    # way the pass ended (a deleted JobSet with no status gave a plan status without them).
    return Plan(status=_normalized_status(copy_json(js.status)), explanation=[sentence],
                resource_version=js.resource_version)


def _update_replicated_jobs_status(st: PassState, children: ChildJobs,
                                   restart_job_gate: bool) -> dict[str, dict]:
    new = replicated_jobs_status(st.js, children, st.status, restart_job_gate)
    old = st.status.get("replicatedJobsStatus") or []
    if statuses_equal(old, new):
        st.status["replicatedJobsStatus"] = sorted(old, key=lambda e: e.get("name", ""),
                                                   reverse=True)
    else:
        st.status["replicatedJobsStatus"] = new
        st.dirty = True
    return by_name(new)


def _all_jobs_ready(js: JobSet, statuses: dict[str, dict]) -> bool:
    ready = sum(s["ready"] + s["succeeded"] for s in statuses.values())
    return ready == js.total_replicas


def _delete_jobs(st: PassState, jobs: list[ObservedJob], why: str) -> None:
    deleted = [job for job in jobs if not job.deletion_timestamp]
    namespace = st.js.namespace
    for job in deleted:
        st.actions.append(Action(type="DeleteJob", name=job.name, namespace=namespace,
                                 api_version="batch/v1", kind="Job", uid=job.uid,
                                 propagation_policy=c.FOREGROUND, reason=why))
    if deleted:
        st.explain(f"delete {len(deleted)} job(s): {why}")


def _existing(st: PassState) -> set[tuple[str, str]]:
    """(kind, name) of every observed object, asked once per object the pass may create."""
    return {(o.kind, o.name) for o in st.observed.objects}


def _create_headless_service(st: PassState) -> None:
    js = st.js
    if not js.dns_hostnames or ("Service", js.subdomain) in _existing(st):
        return
    st.act(Action(type="CreateService", name=js.subdomain, api_version="v1", kind="Service",
                  object=headless_service(js),
                  reason="pod DNS hostnames are enabled and the headless Service is missing"))
    st.explain(f"create headless Service {js.subdomain} for pod DNS hostnames")


def _create_pvcs(st: PassState) -> None:
    pvcs = persistent_volume_claims(st.js)
    existing = _existing(st) if pvcs else set()
    for pvc in pvcs:
        name = pvc["metadata"]["name"]
        if ("PersistentVolumeClaim", name) in existing:
            continue
        st.act(Action(type="CreatePVC", name=name, api_version="v1",
                      kind="PersistentVolumeClaim", object=pvc,
                      reason="volumeClaimPolicies template without its PVC"))
        st.explain(f"create PVC {name} from volumeClaimPolicies")


def _sync_job_scaling(st: PassState, active: list[ObservedJob]) -> None:
    """ElasticJobSet: patch live Jobs to the template's parallelism/completions (only when the
    template keeps them equal, as Elastic Indexed Jobs require)."""
    for job in active:
        rjob = st.js.rjob(job.labels.get(c.REPLICATED_JOB_NAME, ""))
        if rjob is None or rjob.parallelism != rjob.completions:
            continue
        if job.parallelism == rjob.parallelism and job.completions == rjob.completions:
            continue
        st.act(Action(type="PatchJob", name=job.name, api_version="batch/v1", kind="Job",
                      uid=job.uid, patch={"spec": {"parallelism": rjob.parallelism,
                                                   "completions": rjob.completions}},
                      reason="elastic scaling: the replicated Job's parallelism changed"))
        st.explain(f"scale job {job.name} to parallelism {rjob.parallelism}")


def _create_jobs(st: PassState, children: ChildJobs, statuses: dict[str, dict],
                 restart_job_gate: bool) -> list[ObservedJob]:
    """Plan the missing Jobs, in upstream's order; returns the Jobs of other owners whose names
    a create needs (then the creation failed, and the pass stops after this replicated Job)."""
    js = st.js
    foreign = children.foreign
    blocked = bool(children.previous) and js.failure_policy is not None and \
        js.failure_policy.restart_strategy == c.BLOCKING_RECREATE
    if blocked:
        st.explain(f"BlockingRecreate: no job is created while {len(children.previous)} job(s) "
                   "of the previous attempt still exist")
    sequenced = not js.suspend and js.in_order
    replicas: dict[str, int] = {}
    counters: RestartCounters | None = None
    for index, rjob in enumerate(js.replicated_jobs):
        replicas[rjob.name] = rjob.replicas
        # job_name spelled inline: this asks for every Job of every pass.
        prefix = f"{js.name}-{rjob.name}-"
        names = children.names
        missing = [] if blocked else [
            i for i in range(rjob.replicas) if f"{prefix}{i}" not in names]
        if not dependencies_met(rjob, replicas, statuses):
            if missing:
                deps = ", ".join(f"{d.name} {d.status}" for d in rjob.depends_on)
                st.explain(f"replicated job {rjob.name} waits for its dependencies ({deps})")
            continue
        if sequenced and startup_policy.all_replicas_started(rjob.replicas, statuses[rjob.name]):
            continue
        if missing:
            if restart_job_gate and counters is None:
                counters = RestartCounters(js, st.status, "jobRestarts")
            builder = ReplicatedJobBuilder(js, rjob, st.status, counters)
            if st.options.max_plan_bytes:
                st.reserve(len(missing) * builder.manifest_floor_bytes(missing[0]),
                           f"spec.replicatedJobs[{index}]",
                           f"creating {len(missing):,} Job(s) of replicated job {rjob.name}")
            # Creates run in parallel upstream: a name held by another owner fails alone.
            held = [foreign[n] for n in (job_name(js.name, rjob.name, i) for i in missing)
                    if n in foreign] if foreign else []
            creatable = [i for i in missing
                         if job_name(js.name, rjob.name, i) not in foreign] if foreign \
                else missing
            for i in creatable:
                # Its manifest is built when someone reads it (job_manifests.py).
                st.act(builder.action(i))
            if creatable:
                st.explain(f"create {len(creatable)} job(s) of replicated job {rjob.name} "
                           f"(restart attempt {st.restarts})"
                           + (", suspended" if js.suspend else ""))
            if held:
                return held
        if sequenced:
            st.explain(f"InOrder startup: wait for replicated job {rjob.name} to start")
            startup_policy.set_in_progress(st)
            return []
    if sequenced:
        startup_policy.set_completed(st)
    return []


def _creation_failed(st: PassState, held: list[ObservedJob]) -> Plan:
    """Upstream's reconcile returns the creation error: the Warning event is recorded at once,
    the actions already taken stand, the status changes of the pass are not written, and the
    pass is retried with backoff."""
    js = st.js
    names = [job.name for job in held]
    event = name_conflicts.creation_failed_event(names)
    st.act(Action(type="Event", name=js.name, namespace=js.namespace, api_version=c.API_VERSION,
                  kind=c.KIND, uid=js.uid, event=event, reason=event.reason))
    st.explain(f"job(s) {', '.join(names)} cannot be created: a Job of that name exists and is "
               "not controlled by this JobSet; the pass stops there, without a status write")
    st.requeue_after = name_conflicts.backoff(st, held)
    return Plan(actions=list(st.actions), status=_normalized_status(copy_json(js.status)),
                requeue_after_seconds=whole_seconds(st.requeue_after),
                requeue_after=st.requeue_after, explanation=st.explanation,
                resource_version=js.resource_version)


def _finish(st: PassState) -> Plan:
    """Close the pass: one status write if anything changed, then the events it carries."""
    actions = [a for a in st.actions if a.type != "DeleteJobSet"]
    if st.dirty:
        actions.append(Action(type="UpdateStatus", name=st.js.name, namespace=st.js.namespace,
                              api_version=c.API_VERSION, kind=c.KIND, uid=st.js.uid,
                              reason="the JobSet status changed"))
        for event in st.status_events:
            actions.append(Action(type="Event", name=st.js.name, namespace=st.js.namespace,
                                  api_version=c.API_VERSION, kind=c.KIND, uid=st.js.uid,
                                  event=event, reason=event.reason))
    # Deleting the JobSet comes last: the status write and events above still need it.
    actions.extend(a for a in st.actions if a.type == "DeleteJobSet")
    if not st.explanation:
        st.explain("nothing to do: the JobSet is as it should be")
    return Plan(actions=actions, status=_normalized_status(st.status),
                requeue_after_seconds=whole_seconds(st.requeue_after),
                requeue_after=st.requeue_after, explanation=st.explanation,
                resource_version=st.js.resource_version, failure=st.failure)


def _normalized_status(status: dict) -> dict:
    out = dict(status)
    out.setdefault("restarts", 0)
    out.setdefault("restartsCountTowardsMax", 0)
    out.setdefault("terminalState", "")
    out.setdefault("conditions", [])
    out.setdefault("replicatedJobsStatus", [])
    return out
