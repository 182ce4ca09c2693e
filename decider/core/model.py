"""The core's inputs and outputs: plain data, no behaviour beyond small derived facts."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from decider.core import constants as c


@dataclass(slots=True)
class JobCondition:
    type: str
    status: str
    reason: str = ""
    message: str = ""
    last_transition_time: str = ""


@dataclass(slots=True)
class Toleration:
    key: str = ""
    operator: str = ""
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, key in (("key", "key"), ("operator", "operator"), ("value", "value"),
                          ("effect", "effect")):
            v = getattr(self, name)
            if v:
                out[key] = v
        if self.toleration_seconds is not None:
            out["tolerationSeconds"] = self.toleration_seconds
        return out


@dataclass(slots=True)
class PodTemplateSummary:
    # Mappings, not dicts: an adapter may hand over read-only maps it already has.
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    node_selector: Mapping[str, str] = field(default_factory=dict)
    tolerations: list[Toleration] = field(default_factory=list)
    scheduling_gates: list[str] = field(default_factory=list)
    # The Job's containers and init containers, when sent (for a suspended Job): a resume under
    # MutablePodResourcesForSuspendedJobSets writes new resources into them. None: not sent.
    containers: list[Any] | None = None
    init_containers: list[Any] | None = None
    # spec.schedulingGroup: False when absent; then pod_group_name says nothing.
    scheduling_group: bool = False
    pod_group_name: str | None = None


@dataclass(slots=True)
class ObservedJob:
    """A child Job as the caller observed it."""

    name: str
    uid: str = ""
    controller_uid: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    suspend: bool | None = None
    parallelism: int | None = None
    completions: int | None = None
    active: int = 0
    ready: int = 0
    succeeded: int = 0
    failed: int = 0
    conditions: list[JobCondition] = field(default_factory=list)
    creation_timestamp: str = ""
    deletion_timestamp: str = ""
    start_time: str = ""
    pod_template: PodTemplateSummary | None = None
    resource_version: str = ""

    def finished(self) -> str:
        """'Complete', 'Failed' or '' — the first finishing condition that is True decides,
        as batch/v1 and upstream's IsJobFinished read it."""
        for cond in self.conditions:
            if cond.status == "True" and cond.type in (c.JOB_COMPLETE, c.JOB_FAILED):
                return cond.type
        return ""

    def condition(self, type_: str) -> JobCondition | None:
        for cond in self.conditions:
            if cond.type == type_:
                return cond
        return None


@dataclass(slots=True)
class ObservedObject:
    """Another object that exists now: Service, PVC, Workload, PodGroup."""

    api_version: str
    kind: str
    name: str
    uid: str = ""
    controller_uid: str = ""
    obj: dict[str, Any] | None = None


@dataclass(slots=True)
class ObservedPod:
    name: str
    phase: str = ""
    annotations: dict[str, str] = field(default_factory=dict)
    max_container_restarts: int = 0


@dataclass(frozen=True, slots=True)
class Options:
    controller_name: str = ""
    feature_gates: Mapping[str, bool] = field(default_factory=dict)
    # Gang scheduling of JobSets that ask for it: "" means the newest API generation and the
    # "kubernetes" target (decider.core.gang.NEWEST / KUBERNETES).
    gang_api_version: str = ""
    gang_target: str = ""
    # The caller's ceiling on the plan's size in bytes (0: none). Checked before Job manifests
    # are built, so a plan that could never be sent is refused without building it.
    max_plan_bytes: int = 0

    def gate(self, name: str) -> bool:
        return bool(self.feature_gates.get(name, c.GATE_DEFAULTS.get(name, False)))


@dataclass(slots=True)
class Observed:
    """Everything one decision needs; the caller supplies all of it."""

    jobset: dict[str, Any]
    now: datetime
    jobs: list[ObservedJob] = field(default_factory=list)
    objects: list[ObservedObject] = field(default_factory=list)
    pods: list[ObservedPod] = field(default_factory=list)
    options: Options = field(default_factory=Options)


@dataclass(slots=True)
class Event:
    type: str
    reason: str
    message: str


@dataclass(slots=True)
class Action:
    """One side effect. `type` is one of design.md's action kinds (CreateJob, DeleteJob, ...).

    A CreateJob action may be a job_manifests.LazyJobAction: the same fields, its `object`
    built when first read."""

    type: str
    name: str
    namespace: str = ""
    api_version: str = ""
    kind: str = ""
    uid: str = ""
    object: dict[str, Any] | None = None
    patch: dict[str, Any] | None = None
    clear_start_time: bool = False
    propagation_policy: str = ""
    reason: str = ""
    event: Event | None = None
    # UpdateStatus: the status to write at this point of the plan, when not the plan's own (a
    # write upstream makes mid-pass: execution_attempts.sync).
    status: dict[str, Any] | None = None
    # An event to record if applying the action fails ("{error}": the API server's error).
    on_failure: Event | None = None
    # `object` holds only strings, booleans, nulls, integers within 64 bits, lists and dicts
    # with string keys (a Job built from a template checked once): every JSON encoder writes it
    # byte for byte alike, so an adapter may use a faster one. False promises nothing.
    plain_json: bool = False


@dataclass(slots=True)
class FailureOutcome:
    """What the failure policy did in a pass: the rule that matched ("" when none did, or the
    JobSet has no policy), the action applied, and the Job whose failure it acted on. A caller
    that asks "which rule fired?" (telemetry, Simulate) reads it here instead of matching the
    rules again."""

    rule: str
    action: str
    job: str
    # That Job's failure reason and message (its Failed condition).
    reason: str = ""
    message: str = ""


@dataclass(slots=True)
class Plan:
    actions: list[Action] = field(default_factory=list)
    status: dict[str, Any] = field(default_factory=dict)
    # requeue_after rounded up to whole seconds (0: no requeue), for callers that read seconds.
    requeue_after_seconds: int = 0
    explanation: list[str] = field(default_factory=list)
    resource_version: str = ""
    # Set when the failure policy acted in this pass (telemetry and simulation read it).
    failure: FailureOutcome | None = None
    # The requeue delay at full precision: a TTL's exact remainder, as upstream requeues for it.
    requeue_after: timedelta = timedelta(0)


def whole_seconds(delay: timedelta) -> int:
    """A delay rounded up to whole seconds: a caller that waits this long never comes early."""
    micros = delay // timedelta(microseconds=1)
    return max(0, -(-micros // 1_000_000))
