"""A typed, defaulted view of the JobSet a decision reads.

The API server may hand the controller a JobSet that its webhook never defaulted (the CRD alone
defaults only replicas and groupName), so absent fields read as the webhook would have set them
(decider/core/jobset_spec.py). A JobSet that went through the webhook reads the same. Anything of
the wrong shape raises InvalidInput naming the field; when several fields are wrong, the first in
the order below is named: the spec's replicated Jobs, network, policies and PVC templates, then
the status and timestamps, then the metadata, then the rest of the spec.

A JobSet is read once per distinct content, its spec once per distinct spec
(decider/core/spec_cache.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from decider.core import access as acc
from decider.core import constants as c
from decider.core import times
from decider.core.errors import InvalidInput
from decider.core.jobset_spec import (
    Coordinator,
    DependsOn,
    FailurePolicy,
    FailureRule,
    Placement,
    ReplicatedJob,
    Spec,
    parse_head,
    parse_tail,
)
from decider.core.plain_json import plain_bytes
from decider.core.spec_cache import JOBSETS, SPECS

__all__ = ["Coordinator", "DependsOn", "FailurePolicy", "FailureRule", "JobSet", "Placement",
           "ReplicatedJob", "is_independent", "parse_jobset"]

# Kubernetes' limit on an object's name (a DNS subdomain).
_MAX_NAME_LENGTH = 253


@dataclass(frozen=True, slots=True)
class JobSet:
    """Shared by every pass over the same JobSet content: read, never written (a pass copies
    the status it builds)."""

    raw: dict[str, Any]
    name: str
    namespace: str
    uid: str
    resource_version: str
    labels: dict[str, str]
    annotations: dict[str, str]
    deletion_timestamp: str
    status: dict[str, Any]
    # The status as plain JSON bytes (plain_json.py), when it is: each pass copies the status
    # it builds on, and orjson copies it several times faster than a walk. None otherwise.
    status_json: bytes | None
    independent: bool
    # Shared with every JobSet of the same spec: read, never written.
    spec: Spec

    # The spec's fields, read through: the spec is shared, so they are not copied per JobSet.
    @property
    def replicated_jobs(self) -> tuple[ReplicatedJob, ...]:
        return self.spec.replicated_jobs

    @property
    def dns_hostnames(self) -> bool:
        return self.spec.dns_hostnames

    @property
    def publish_not_ready(self) -> bool:
        return self.spec.publish_not_ready

    @property
    def success_operator(self) -> str:
        return self.spec.success_operator

    @property
    def success_targets(self) -> tuple[str, ...]:
        return self.spec.success_targets

    @property
    def failure_policy(self) -> FailurePolicy | None:
        return self.spec.failure_policy

    @property
    def in_order(self) -> bool:
        return self.spec.in_order

    @property
    def suspend(self) -> bool:
        return self.spec.suspend

    @property
    def managed_by(self) -> str | None:
        return self.spec.managed_by

    @property
    def coordinator(self) -> Coordinator | None:
        return self.spec.coordinator

    @property
    def ttl_seconds_after_finished(self) -> int | None:
        return self.spec.ttl_seconds_after_finished

    @property
    def active_deadline_seconds(self) -> int | None:
        return self.spec.active_deadline_seconds

    @property
    def volume_claim_policies(self) -> tuple[dict[str, Any], ...]:
        return self.spec.volume_claim_policies

    @property
    def subdomain(self) -> str:
        """As written, or the JobSet's name when unset."""
        return self.spec.subdomain or self.name

    def rjob(self, name: str) -> ReplicatedJob | None:
        return self.spec.rjobs_by_name.get(name)

    def replicas_of(self, name: str) -> int:
        rjob = self.spec.rjobs_by_name.get(name)
        return rjob.replicas if rjob is not None else 0

    def placement(self, name: str) -> Placement:
        return self.spec.placement[name]

    @property
    def total_replicas(self) -> int:
        return self.spec.total_replicas


def is_independent(annotations: dict[str, str]) -> bool:
    """Per-Job independent suspend (seed 000): either spelling of the annotation."""
    return (annotations.get(c.RECONCILIATION_MODE) == c.RECONCILIATION_MODE_INDEPENDENT
            or annotations.get(c.SKIP_SUSPEND_RECONCILIATION) == "true")


def parse_jobset(obj: Any) -> JobSet:
    """Read a JobSet object (as the API server serves it) into the typed, defaulted view."""
    found = JOBSETS.get_by_source(obj)
    if found is not None:
        return found
    key = JOBSETS.key(obj) if type(obj) is dict else None
    found = JOBSETS.get(key)
    if found is not None:
        return found
    if key is None:
        return _parse(obj, private=False)
    source = JOBSETS.private_copy(key)
    js = _parse(source, private=True)
    JOBSETS.put(key, js, source)
    return js


def _parse(obj: Any, private: bool) -> JobSet:
    """private: `obj` is a cache's own copy, which nobody changes: its spec needs no other."""
    if not isinstance(obj, dict):
        raise InvalidInput.at("jobset", "must be a JSON object")
    kind = obj.get("kind")
    if kind != c.KIND:
        raise InvalidInput.at("kind", f'must be "{c.KIND}", got {kind!r}')
    api_version = obj.get("apiVersion")
    if api_version != c.API_VERSION:
        raise InvalidInput.at("apiVersion", f'must be "{c.API_VERSION}", got {api_version!r}')
    meta = acc.as_map(obj.get("metadata"), "metadata")
    name = acc.as_str(meta.get("name"), "metadata.name")
    if not name:
        raise InvalidInput.at("metadata.name", "Required value")
    if len(name) > _MAX_NAME_LENGTH:
        # The API server stores no longer name; the plan's Jobs and Service would be longer.
        raise InvalidInput.at("metadata.name",
                              f"must be no more than {_MAX_NAME_LENGTH} characters")
    raw_spec = acc.as_map(obj.get("spec"), "spec")
    status = acc.as_map(obj.get("status"), "status")
    annotations = acc.as_str_map(meta.get("annotations"), "metadata.annotations")

    key = SPECS.key(raw_spec)
    spec = SPECS.get(key)
    # A cached spec was read without error, so only the checks below can fail, in this order;
    # reading it again would find its errors, if any, before, between and after them.
    source = None
    head = None
    if spec is None:
        source = raw_spec if key is None or private else SPECS.private_copy(key)
        head = parse_head(source)
    _validate_status(status)
    for field in ("creationTimestamp", "deletionTimestamp"):
        times.check(acc.as_str(meta.get(field), f"metadata.{field}"), f"metadata.{field}")
    namespace = acc.as_str(meta.get("namespace"), "metadata.namespace", "default") or "default"
    uid = acc.as_str(meta.get("uid"), "metadata.uid")
    resource_version = acc.as_str(meta.get("resourceVersion"), "metadata.resourceVersion")
    labels = acc.as_str_map(meta.get("labels"), "metadata.labels")
    if head is not None:
        spec = parse_tail(head)
        if key is not None:
            SPECS.put(key, spec, source)
    assert spec is not None
    return JobSet(
        raw=obj,
        name=name,
        namespace=namespace,
        uid=uid,
        resource_version=resource_version,
        labels=labels,
        annotations=annotations,
        deletion_timestamp=acc.as_str(meta.get("deletionTimestamp"),
                                      "metadata.deletionTimestamp"),
        status=status,
        status_json=plain_bytes(status),
        independent=is_independent(annotations),
        spec=spec,
    )


def _validate_status(status: dict[str, Any]) -> None:
    # The CRD sets no minimum on the restart counters, so the API server stores a negative
    # one; upstream counts on from it (and recomputes replicatedJobsStatus), and so does the
    # pass (counters.py explains it). The in-place attempts and executionAttempts have
    # Minimum=0: the API server stores no negative one.
    for key in ("restarts", "restartsCountTowardsMax"):
        acc.as_int(status.get(key), f"status.{key}", 0)
    acc.as_str(status.get("terminalState"), "status.terminalState")
    # Everything the pass reads or writes back is checked here, so that a malformed status is
    # InvalidInput naming the field rather than a crash later: a null list item (_map reads
    # None as {}, but the pass reads items as objects), non-integer counts (sorted and written
    # into the proto's int32 fields) and the in-place restart attempts.
    for key in ("previousInPlaceRestartAttempt", "currentInPlaceRestartAttempt",
                "executionAttempts"):
        acc.as_int(status.get(key), f"status.{key}", minimum=0)
    times.check(acc.as_str(status.get("startTime"), "status.startTime"), "status.startTime")
    for i, cond in enumerate(acc.as_list(status.get("conditions"), "status.conditions")):
        cpath = f"status.conditions[{i}]"
        if cond is None:
            raise InvalidInput.at(cpath, "must be an object")
        cond = acc.as_map(cond, cpath)
        for key in ("type", "status", "reason", "message", "lastTransitionTime"):
            acc.as_str(cond.get(key), f"{cpath}.{key}")
        times.check(cond.get("lastTransitionTime"), f"{cpath}.lastTransitionTime")
    seen: set[str] = set()
    for i, rjs in enumerate(acc.as_list(status.get("replicatedJobsStatus"),
                                        "status.replicatedJobsStatus")):
        rpath = f"status.replicatedJobsStatus[{i}]"
        if rjs is None:
            raise InvalidInput.at(rpath, "must be an object")
        rjs = acc.as_map(rjs, rpath)
        # Required by the CRD; the pass sorts and matches entries by it.
        name = acc.as_str(rjs.get("name"), f"{rpath}.name")
        if not name:
            raise InvalidInput.at(f"{rpath}.name", "Required value")
        # A list map keyed by name in the CRD: with two entries of one name, the pass would
        # read one entry's jobRestarts and drop the other's (a restart counter going back).
        if name in seen:
            raise InvalidInput.at(f"{rpath}.name", f'duplicate value "{name}"')
        seen.add(name)
        for key in ("ready", "succeeded", "failed", "active", "suspended"):
            acc.as_int(rjs.get(key), f"{rpath}.{key}")
        for key in ("jobRestarts", "jobRestartsCountTowardsMax"):
            for j, v in enumerate(acc.as_list(rjs.get(key), f"{rpath}.{key}")):
                # An entry of an int32 list is no optional field: null is not a count.
                if v is None:
                    raise InvalidInput.at(f"{rpath}.{key}[{j}]", "must be an integer, got null")
                acc.as_int(v, f"{rpath}.{key}[{j}]")
