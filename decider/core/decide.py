"""One reconcile pass of a JobSet, in upstream's order (spec/jobset.md §2.2; the newer steps as
jobset_controller.go @4f0cbded has them, spec/upstream-next.md §1.4 F).

decide() reads top to bottom as the controller's procedure; each step lives in the module named
after the policy it applies. It is pure: the caller supplies the JobSet, what it owns, the time
and the options, and gets back the plan.
"""

from __future__ import annotations

from decider.core import (
    active_deadline,
    conditions,
    execution_attempts,
    failure_policy,
    headless_service,
    in_place_restart,
    name_conflicts,
    scheduling_objects,
    stale_jobs,
    startup_policy,
    stored_counters,
    success_policy,
    suspend,
    times,
    ttl_after_finished,
)
from decider.core import constants as c
from decider.core.child_jobs import (
    ReplicatedJobBuilder,
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
from decider.core.deletion import delete_jobs
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
        return _managed_elsewhere(js, observed, controller)

    st = PassState.start(js, observed)
    restart_job_gate = st.gate(c.GATE_RESTART_JOB)
    children = classify(js, observed.jobs, st.status, restart_job_gate)
    statuses = _update_replicated_jobs_status(st, children, restart_job_gate)
    stored_counters.explain(st)

    if conditions.finished(st.status):
        delete_jobs(st, children.active, "the JobSet is finished")
        scheduling_objects.reconcile(st)  # a finished JobSet keeps no scheduling objects
        ttl_after_finished.execute(st)
        return _finish(st)

    delete_jobs(st, children.previous, "it belongs to a previous restart attempt")

    if not js.suspend and _all_jobs_ready(js, statuses):
        conditions.set_restarting_false(st, c.REASON_JOBS_READY, c.MSG_JOBS_READY)

    # The active deadline is checked before the failure policy: a restart would reset it.
    active_deadline.sync_start_time(st)
    left = active_deadline.remaining(st)
    if active_deadline.expired(left):
        if children.successful and success_policy.execute(st, children.successful):
            return _finish(st)
        active_deadline.fail(st, children.active)
        return _finish(st)

    if children.failed:
        restarts_before = st.restarts
        failure_policy.execute(st, children.failed)
        active_deadline.reset_on_global_restart(st, restarts_before)
        execution_attempts.count_global_restart(st, restarts_before)
        return _finish(st)

    if children.successful and success_policy.execute(st, children.successful):
        return _finish(st)

    headless_service.reconcile(st)
    _create_pvcs(st)
    # Scheduling objects before any Job: deleted while suspended, else reconciled, and no Job
    # before they are all there (no-op without spec.scheduling or a gang annotation).
    gang = scheduling_objects.reconcile(st)
    if gang.failed:
        return _failed(st)
    if not gang.ready:
        return _finish(st)
    # A scheduling config changed while suspended: Jobs made for the old one are recreated.
    if stale_jobs.recreate(st, children.active, gang.plan):
        return _finish(st)
    if st.gate(c.GATE_ELASTIC_JOBSET):
        _sync_job_scaling(st, children.active)
    if not gang.blocked:
        execution_attempts.sync(st, children)
        held = _create_jobs(st, children, statuses, restart_job_gate)
        scheduling_objects.link_jobs(st, gang)
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
        if st.gate(c.GATE_IN_PLACE_RESTART) and not in_place_restart.execute(st):
            # Upstream's reconcile returns the error: what was done stands, no status write,
            # a retry with backoff (a pod's annotation changing also wakes the JobSet).
            st.requeue_after = name_conflicts.backoff(st, [])
            return _failed(st)
        elif not st.gate(c.GATE_IN_PLACE_RESTART):
            st.explain("restartStrategy InPlaceRestart needs the InPlaceRestart feature gate; "
                       "in-place restart is not reconciled")
    # Only a pass that ran to the end asks to be woken at the deadline (upstream returns early,
    # without it, while the gang objects are not ready).
    if left is not None and not gang.blocked:
        active_deadline.explain_requeue(st, left)
        if not st.requeue_after or left < st.requeue_after:
            st.requeue_after = left
    return _finish(st)


def _managed_elsewhere(js: JobSet, observed: Observed, controller: str) -> Plan:
    """Another controller runs the JobSet: nothing of it is ours but its TTL (#1315). Once that
    controller has written a Completed or Failed condition, ttlSecondsAfterFinished still
    deletes the JobSet; without a TTL it stays, as before."""
    sentence = (f"JobSet {js.namespace}/{js.name} is managed by {js.managed_by}, not "
                f"{controller}: nothing to do")
    if js.ttl_seconds_after_finished is None or not conditions.finished(js.status):
        return _untouched(js, sentence)
    st = PassState.start(js, observed)
    ttl_after_finished.execute(st)
    plan = _untouched(js, f"JobSet {js.namespace}/{js.name} is managed by {js.managed_by}, "
                          f"not {controller}: only its ttlSecondsAfterFinished applies")
    plan.explanation.extend(st.explanation)
    plan.actions = [a for a in st.actions if a.type == "DeleteJobSet"]
    plan.requeue_after = st.requeue_after
    plan.requeue_after_seconds = whole_seconds(st.requeue_after)
    return plan


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


def _existing(st: PassState) -> set[tuple[str, str]]:
    """(kind, name) of every observed object, asked once per object the pass may create."""
    return {(o.kind, o.name) for o in st.observed.objects}


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
    annotations = execution_attempts.annotation(st)
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
            builder = ReplicatedJobBuilder(js, rjob, st.status, counters, annotations)
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
    return _failed(st)


def _failed(st: PassState) -> Plan:
    """A reconcile that returns an error: what was done stands, the status of the pass is not
    written, and the pass is retried after st.requeue_after."""
    js = st.js
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
        st.explain(_status_written(st) if st.dirty
                   else "nothing to do: the JobSet is as it should be")
    return Plan(actions=actions, status=_normalized_status(st.status),
                requeue_after_seconds=whole_seconds(st.requeue_after),
                requeue_after=st.requeue_after, explanation=st.explanation,
                resource_version=st.js.resource_version, failure=st.failure)


def _status_written(st: PassState) -> str:
    """A pass whose only action is the status write (the counts of replicatedJobsStatus as Jobs
    move on) says which fields it writes, not that it has nothing to do."""
    # Compared, never changed: _normalized_status's shallow copies are enough.
    before = _normalized_status(st.js.status)
    after = _normalized_status(st.status)
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    return f"status updated: {', '.join(changed)}" if changed else "status written again"


def _normalized_status(status: dict) -> dict:
    out = dict(status)
    out.setdefault("restarts", 0)
    out.setdefault("restartsCountTowardsMax", 0)
    out.setdefault("terminalState", "")
    out.setdefault("conditions", [])
    out.setdefault("replicatedJobsStatus", [])
    return out
