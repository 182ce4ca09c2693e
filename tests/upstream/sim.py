"""A tiny in-memory cluster for multi-pass scenarios: decide, apply the plan, move Jobs along.

`World` holds one JobSet and what it owns as the API server would serve them. `step()` runs one
reconcile pass through the same path a client uses (objects -> DecideRequest -> core -> plan),
then applies the plan the way the shim would: creates (AlreadyExists is done), deletes with UID
preconditions (foreground deletes leave the Job with a deletionTimestamp until `finalize()`, the
way upstream's integration tests hold Jobs with the foregroundDeletion finalizer), JSON merge
patches, the status write and the events that follow it.

The Job-controller helpers (`ready`, `active`, `complete`, `fail`, ...) set Job status the way
batch/v1 reports it, so the next pass sees what the real controller would see.
"""

from __future__ import annotations

import copy
import itertools
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from decider.contract import convert
from decider.core import constants as c
from decider.core.decide import decide
from decider.core.model import Plan
from decider_client import observe

T0 = datetime(2026, 3, 1, 9, 0, 0, tzinfo=UTC)


def rfc3339(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


@dataclass
class World:
    jobset: dict[str, Any]
    gates: dict[str, bool] = field(default_factory=dict)
    controller: str = ""
    now: datetime = T0
    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)
    others: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    pods: list[dict[str, Any]] = field(default_factory=list)
    events: list[tuple[str, str, str]] = field(default_factory=list)
    plans: list[Plan] = field(default_factory=list)
    jobset_deleted: bool = False
    # Names of Jobs created, in creation order, across the whole scenario.
    created: list[str] = field(default_factory=list)
    _uids: itertools.count = field(default_factory=lambda: itertools.count(1))

    # ---- one pass -------------------------------------------------------------------------
    def decide(self) -> Plan:
        """One pass, asked both ways: with the client's typed summaries and with every object
        sent whole (observed_json). The answers must be the same bytes; every upstream table
        that runs through a World checks it at every pass."""
        owned = [*self.jobs.values(), *self.others.values(), *self.pods]
        args = (copy.deepcopy(self.jobset), owned, self.now)
        kwargs = {"controller_name": self.controller, "feature_gates": self.gates}
        typed = observe.build_decide_request(*args, **kwargs)
        raw = observe.build_raw_decide_request(*args, **kwargs)
        assert not raw.jobs and len(raw.observed_json) == len(owned)
        plan = decide(convert.observed_from_proto(typed))
        raw_answer = convert.decide_response(raw).SerializeToString(deterministic=True)
        typed_answer = convert.decide_response(typed).SerializeToString(deterministic=True)
        assert raw_answer == typed_answer, "raw objects and typed summaries decided differently"
        return plan

    def step(self) -> Plan:
        plan = self.decide()
        self.apply(plan)
        self.plans.append(plan)
        return plan

    def settle(self, limit: int = 25) -> list[Plan]:
        """Reconcile until a pass has nothing to do (the controller is level-triggered)."""
        plans = []
        for _ in range(limit):
            plan = self.step()
            plans.append(plan)
            if not plan.actions:
                return plans
        raise AssertionError(
            f"no fixed point after {limit} passes: {[(a.type, a.name) for a in plans[-1].actions]}"
        )

    # ---- the plan, applied --------------------------------------------------------------------
    def apply(self, plan: Plan) -> None:
        wrote_status = False
        for action in plan.actions:
            kind = action.type
            if kind == "CreateJob":
                assert action.object is not None
                self._create_job(action.object)
            elif kind == "DeleteJob":
                job = self.jobs.get(action.name)
                if job is None or job["metadata"]["uid"] != action.uid:
                    continue  # NotFound or precondition failed: nothing to delete
                if action.propagation_policy == c.FOREGROUND:
                    job["metadata"].setdefault("deletionTimestamp", rfc3339(self.now))
                else:
                    del self.jobs[action.name]
            elif kind in ("SuspendJob", "ResumeJob", "PatchJob"):
                job = self.jobs[action.name]
                assert job["metadata"]["uid"] == action.uid
                if action.clear_start_time:
                    job.setdefault("status", {}).pop("startTime", None)
                patched = merge_patch(job, action.patch)
                job.clear()
                job.update(patched)
            elif kind in ("CreateService", "CreatePVC"):
                assert action.object is not None
                key = (action.object["kind"], action.name)
                obj = copy.deepcopy(action.object)
                obj["metadata"].setdefault("uid", f"{key[0].lower()}-uid-{next(self._uids)}")
                self.others.setdefault(key, obj)
            elif kind == "UpdateService":
                svc = self.others[("Service", action.name)]
                assert svc["metadata"]["uid"] == action.uid
                patched = merge_patch(svc, action.patch)
                svc.clear()
                svc.update(patched)
            elif kind == "UpdateStatus":
                # A write mid-plan (execution_attempts.sync) carries its own status.
                self.jobset["status"] = copy.deepcopy(
                    plan.status if action.status is None else action.status)
                meta = self.jobset["metadata"]
                meta["resourceVersion"] = str(int(meta.get("resourceVersion") or "0") + 1)
                wrote_status = True
            elif kind == "Event":
                assert wrote_status, "an event tied to status must follow the status write"
                assert action.event is not None
                self.events.append((action.event.type, action.event.reason, action.event.message))
            elif kind == "DeleteJobSet":
                self.jobset_deleted = True
                self.jobset["metadata"]["deletionTimestamp"] = rfc3339(self.now)
            else:
                raise AssertionError(f"unexpected action {kind}")

    def _create_job(self, obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        if name in self.jobs:
            return  # AlreadyExists: done
        job = copy.deepcopy(obj)
        job["metadata"]["uid"] = f"job-uid-{next(self._uids)}"
        job["metadata"]["creationTimestamp"] = rfc3339(self.now)
        # API-server defaulting of batch/v1.
        job["spec"].setdefault("parallelism", 1)
        job["status"] = {}
        self.jobs[name] = job
        self.created.append(name)

    # ---- the rest of the cluster ---------------------------------------------------------------
    def tick(self, seconds: float = 1.0) -> None:
        self.now += timedelta(seconds=seconds)

    def finalize(self, count: int | None = None) -> list[str]:
        """Let foreground deletions finish: the Jobs with a deletionTimestamp disappear."""
        gone = [n for n, j in self.jobs.items() if j["metadata"].get("deletionTimestamp")]
        gone = gone if count is None else gone[:count]
        for name in gone:
            del self.jobs[name]
        return gone

    def delete_other(self, kind: str, name: str) -> None:
        del self.others[(kind, name)]

    def update_spec(self, **changes: Any) -> None:
        self.jobset["spec"].update(changes)
        self.jobset["metadata"]["generation"] = self.jobset["metadata"].get("generation", 1) + 1

    @property
    def status(self) -> dict[str, Any]:
        return self.jobset.get("status") or {}

    def condition(self, type_: str) -> dict[str, Any] | None:
        for cond in self.status.get("conditions") or ():
            if cond["type"] == type_:
                return cond
        return None

    def cond_summary(self, type_: str) -> tuple[str, str, str] | None:
        cond = self.condition(type_)
        return None if cond is None else (cond["status"], cond["reason"], cond["message"])

    def rjs(self) -> dict[str, tuple[int, int, int, int, int]]:
        """replicatedJobsStatus as name -> (ready, succeeded, failed, active, suspended)."""
        return {
            e["name"]: (e["ready"], e["succeeded"], e["failed"], e["active"], e["suspended"])
            for e in self.status.get("replicatedJobsStatus") or ()
        }

    def live(self) -> list[str]:
        """Jobs that exist and are not being deleted, sorted by name."""
        return sorted(n for n, j in self.jobs.items() if not j["metadata"].get("deletionTimestamp"))

    def of(self, rjob: str) -> list[str]:
        return [
            n
            for n in self.live()
            if self.jobs[n]["metadata"]["labels"][c.REPLICATED_JOB_NAME] == rjob
        ]

    def attempts(self) -> dict[int, int]:
        """How many Jobs exist per restart-attempt label (upstream's NumJobsByRestartAttempt)."""
        out: dict[int, int] = {}
        for job in self.jobs.values():
            attempt = int(job["metadata"]["labels"][c.RESTART_ATTEMPT])
            out[attempt] = out.get(attempt, 0) + 1
        return out

    def suspended(self) -> dict[str, bool]:
        return {n: bool(j["spec"].get("suspend")) for n, j in sorted(self.jobs.items())}

    # ---- the Job controller ------------------------------------------------------------------
    def _status(self, name: str) -> dict[str, Any]:
        job = self.jobs[name]
        status = job.setdefault("status", {})
        status.setdefault("startTime", rfc3339(self.now))
        return status

    def active(self, *names: str) -> None:
        for name in names:
            status = self._status(name)
            status["active"] = self.jobs[name]["spec"]["parallelism"]
            status.pop("ready", None)

    def ready(self, *names: str) -> None:
        for name in names:
            status = self._status(name)
            pods = self.jobs[name]["spec"]["parallelism"]
            status["active"] = pods
            status["ready"] = pods

    def complete(self, *names: str) -> None:
        for name in names:
            status = self._status(name)
            pods = self.jobs[name]["spec"]["parallelism"]
            status.update(active=0, ready=0, succeeded=pods)
            status.setdefault("conditions", []).extend(
                [
                    {
                        "type": "SuccessCriteriaMet",
                        "status": "True",
                        "lastTransitionTime": rfc3339(self.now),
                    },
                    {"type": "Complete", "status": "True", "lastTransitionTime": rfc3339(self.now)},
                ]
            )

    def fail(
        self,
        name: str,
        reason: str = "BackoffLimitExceeded",
        message: str = "",
        at: str | None = None,
    ) -> None:
        status = self._status(name)
        when = at or rfc3339(self.now)
        status.update(active=0, ready=0, failed=1)
        status.setdefault("conditions", []).extend(
            [
                {
                    "type": "FailureTarget",
                    "status": "True",
                    "reason": reason,
                    "message": message,
                    "lastTransitionTime": when,
                },
                {
                    "type": "Failed",
                    "status": "True",
                    "reason": reason,
                    "message": message,
                    "lastTransitionTime": when,
                },
            ]
        )

    def mark_suspended(self, *names: str) -> None:
        """The Job controller's Suspended=True condition for suspended Jobs."""
        for name in names:
            status = self.jobs[name].setdefault("status", {})
            status.setdefault("conditions", []).append(
                {"type": "Suspended", "status": "True", "lastTransitionTime": rfc3339(self.now)}
            )


def kinds(plan: Plan) -> list[str]:
    return [a.type for a in plan.actions]


def named(plan: Plan, type_: str) -> list[str]:
    return [a.name for a in plan.actions if a.type == type_]


def plan_events(plan: Plan) -> list[tuple[str, str, str]]:
    return [(a.event.type, a.event.reason, a.event.message) for a in plan.actions if a.event]
