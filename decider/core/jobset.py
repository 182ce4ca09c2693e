"""A typed, defaulted view of the JobSet a decision reads.

The API server may hand the controller a JobSet that its webhook never defaulted (the CRD alone
defaults only replicas and groupName), so absent fields read as the webhook would have set them:
network DNS hostnames on, success policy All, startup policy AnyOrder. A JobSet that went through
the webhook reads the same. Anything of the wrong shape raises InvalidInput naming the field.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from decider.core import access as acc
from decider.core import constants as c
from decider.core import times
from decider.core.errors import InvalidInput
from decider.core.go_regex import GoRegexp, compile_go_regex


def _enum(value: Any, path: str, allowed: tuple[str, ...], default: str) -> str:
    s = acc.as_str(value, path, default)
    if s not in allowed:
        raise InvalidInput.at(path, f'unsupported value "{s}": supported values: '
                              + ", ".join(f'"{a}"' for a in allowed))
    return s


@dataclass(slots=True)
class DependsOn:
    name: str
    status: str  # "Ready" | "Complete"


@dataclass(slots=True)
class ReplicatedJob:
    name: str
    group_name: str
    replicas: int
    template: dict[str, Any]  # JobTemplateSpec, copied opaquely into child Jobs
    depends_on: list[DependsOn]
    parallelism: int | None
    completions: int | None
    indexed: bool


@dataclass(slots=True)
class FailureRule:
    name: str
    action: str
    reasons: list[str]
    patterns: list[GoRegexp | None]  # None: a pattern Go does not compile never matches
    targets: list[str]


@dataclass(slots=True)
class FailurePolicy:
    max_restarts: int
    restart_strategy: str
    rules: list[FailureRule]


@dataclass(slots=True)
class Coordinator:
    replicated_job: str
    job_index: int
    pod_index: int


@dataclass(slots=True)
class JobSet:
    raw: dict[str, Any]
    name: str
    namespace: str
    uid: str
    resource_version: str
    labels: dict[str, str]
    annotations: dict[str, str]
    deletion_timestamp: str
    replicated_jobs: list[ReplicatedJob]
    dns_hostnames: bool
    subdomain: str
    publish_not_ready: bool
    success_operator: str
    success_targets: list[str]
    failure_policy: FailurePolicy | None
    in_order: bool
    suspend: bool
    managed_by: str | None
    coordinator: Coordinator | None
    ttl_seconds_after_finished: int | None
    volume_claim_policies: list[dict[str, Any]]
    status: dict[str, Any]
    independent: bool = False
    _replicas_by_name: dict[str, int] = field(default_factory=dict)

    def rjob(self, name: str) -> ReplicatedJob | None:
        for rj in self.replicated_jobs:
            if rj.name == name:
                return rj
        return None

    @property
    def total_replicas(self) -> int:
        return sum(rj.replicas for rj in self.replicated_jobs)


def is_independent(annotations: dict[str, str]) -> bool:
    """Per-Job independent suspend (seed 000): either spelling of the annotation."""
    return (annotations.get(c.RECONCILIATION_MODE) == c.RECONCILIATION_MODE_INDEPENDENT
            or annotations.get(c.SKIP_SUSPEND_RECONCILIATION) == "true")


def _compile(pattern: str) -> GoRegexp | None:
    # Upstream compiles with Go's regexp when a Job fails and a pattern that does not compile
    # never matches; admission refuses those, and a JobSet that skipped it reads them as None.
    return compile_go_regex(pattern)


def _object(value: Any, path: str) -> dict[str, Any]:
    """A list item the pass reads as an object: unlike an absent field, null is no object."""
    if not isinstance(value, dict):
        raise InvalidInput.at(path, "must be an object")
    return value


def _validate_meta(meta: Any, path: str) -> dict[str, Any]:
    meta = acc.as_map(meta, path)
    acc.as_str_map(meta.get("labels"), f"{path}.labels")
    acc.as_str_map(meta.get("annotations"), f"{path}.annotations")
    return meta


def _validate_template(template: dict[str, Any], path: str) -> None:
    """The parts of the opaque Job template the pass reads (child Job labels, pod labels and
    annotations, scheduling directives merged on resume, volume mounts for PVCs): a JobSet that
    skipped the API server's schema crashed the pass with junk there, so check their shape."""
    _validate_meta(template.get("metadata"), f"{path}.metadata")
    tspec = acc.as_map(template.get("spec"), f"{path}.spec")
    pod = acc.as_map(tspec.get("template"), f"{path}.spec.template")
    _validate_meta(pod.get("metadata"), f"{path}.spec.template.metadata")
    ppath = f"{path}.spec.template.spec"
    pod_spec = acc.as_map(pod.get("spec"), ppath)
    acc.as_str_map(pod_spec.get("nodeSelector"), f"{ppath}.nodeSelector")
    acc.as_list(pod_spec.get("tolerations"), f"{ppath}.tolerations")
    acc.as_list(pod_spec.get("schedulingGates"), f"{ppath}.schedulingGates")
    acc.as_list(pod_spec.get("volumes"), f"{ppath}.volumes")
    for key in ("containers", "initContainers"):
        for i, container in enumerate(acc.as_list(pod_spec.get(key), f"{ppath}.{key}")):
            container = _object(container, f"{ppath}.{key}[{i}]")
            for j, mount in enumerate(acc.as_list(container.get("volumeMounts"),
                                                  f"{ppath}.{key}[{i}].volumeMounts")):
                _object(mount, f"{ppath}.{key}[{i}].volumeMounts[{j}]")


def _volume_claim_policy(value: Any, path: str) -> dict[str, Any]:
    """The PVC templates the pass copies into PersistentVolumeClaims, checked as above."""
    policy = acc.as_map(value, path)
    for i, template in enumerate(acc.as_list(policy.get("templates"), f"{path}.templates")):
        tpath = f"{path}.templates[{i}]"
        template = _object(template, tpath)
        meta = _validate_meta(template.get("metadata"), f"{tpath}.metadata")
        acc.as_str(meta.get("name"), f"{tpath}.metadata.name")
        acc.as_map(template.get("spec"), f"{tpath}.spec")
    retention = acc.as_map(policy.get("retentionPolicy"), f"{path}.retentionPolicy")
    _enum(retention.get("whenDeleted"), f"{path}.retentionPolicy.whenDeleted",
          c.RETENTION_POLICIES, c.RETENTION_DELETE)
    return policy


def _parse_rjob(item: Any, path: str) -> ReplicatedJob:
    item = acc.as_map(item, path)
    name = acc.as_str(item.get("name"), f"{path}.name")
    if not name:
        raise InvalidInput.at(f"{path}.name", "Required value")
    template = item.get("template")
    if template is None:
        raise InvalidInput.at(f"{path}.template", "Required value")
    template = acc.as_map(template, f"{path}.template")
    tspec = acc.as_map(template.get("spec"), f"{path}.template.spec")
    _validate_template(template, f"{path}.template")
    deps = []
    for j, d in enumerate(acc.as_list(item.get("dependsOn"), f"{path}.dependsOn")):
        dpath = f"{path}.dependsOn[{j}]"
        d = acc.as_map(d, dpath)
        deps.append(DependsOn(
            name=acc.as_str(d.get("name"), f"{dpath}.name"),
            status=_enum(d.get("status"), f"{dpath}.status", c.DEPENDS_ON_STATUSES,
                         c.DEPENDS_ON_READY),
        ))
    mode = acc.as_str(tspec.get("completionMode"), f"{path}.template.spec.completionMode",
                c.INDEXED)
    return ReplicatedJob(
        name=name,
        group_name=acc.as_str(item.get("groupName"), f"{path}.groupName") or "default",
        replicas=acc.as_int(item.get("replicas"), f"{path}.replicas", 1, minimum=0),
        template=template,
        depends_on=deps,
        parallelism=acc.as_int(tspec.get("parallelism"), f"{path}.template.spec.parallelism",
                         minimum=0),
        completions=acc.as_int(tspec.get("completions"), f"{path}.template.spec.completions",
                         minimum=0),
        indexed=mode == c.INDEXED,
    )


def _parse_failure_policy(value: Any, path: str) -> FailurePolicy | None:
    if value is None:
        return None
    fp = acc.as_map(value, path)
    rules = []
    for i, r in enumerate(acc.as_list(fp.get("rules"), f"{path}.rules")):
        rpath = f"{path}.rules[{i}]"
        r = acc.as_map(r, rpath)
        patterns = [acc.as_str(p, f"{rpath}.onJobFailureMessagePatterns[{j}]") for j, p in
                    enumerate(acc.as_list(r.get("onJobFailureMessagePatterns"),
                                          f"{rpath}.onJobFailureMessagePatterns"))]
        if r.get("action") is None:
            raise InvalidInput.at(f"{rpath}.action", "Required value")
        rules.append(FailureRule(
            # The webhook names unnamed rules; a JobSet that skipped it reads the same.
            name=acc.as_str(r.get("name"), f"{rpath}.name") or f"failurePolicyRule{i}",
            action=_enum(r.get("action"), f"{rpath}.action", c.FAILURE_ACTIONS, ""),
            reasons=[acc.as_str(x, f"{rpath}.onJobFailureReasons[{j}]") for j, x in
                     enumerate(acc.as_list(r.get("onJobFailureReasons"),
                                           f"{rpath}.onJobFailureReasons"))],
            patterns=[_compile(p) for p in patterns],
            targets=[acc.as_str(x, f"{rpath}.targetReplicatedJobs[{j}]") for j, x in
                     enumerate(acc.as_list(r.get("targetReplicatedJobs"),
                                           f"{rpath}.targetReplicatedJobs"))],
        ))
    return FailurePolicy(
        max_restarts=acc.as_int(fp.get("maxRestarts"), f"{path}.maxRestarts", 0, minimum=0),
        restart_strategy=_enum(fp.get("restartStrategy"), f"{path}.restartStrategy",
                               c.RESTART_STRATEGIES, c.RECREATE),
        rules=rules,
    )


def parse_jobset(obj: Any) -> JobSet:
    """Read a JobSet object (as the API server serves it) into the typed, defaulted view."""
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
    spec = acc.as_map(obj.get("spec"), "spec")
    status = acc.as_map(obj.get("status"), "status")
    annotations = acc.as_str_map(meta.get("annotations"), "metadata.annotations")

    rjobs = [_parse_rjob(item, f"spec.replicatedJobs[{i}]") for i, item in
             enumerate(acc.as_list(spec.get("replicatedJobs"), "spec.replicatedJobs"))]
    seen: set[str] = set()
    for i, rj in enumerate(rjobs):
        if rj.name in seen:
            raise InvalidInput.at(f"spec.replicatedJobs[{i}].name", f'duplicate value "{rj.name}"')
        seen.add(rj.name)

    network = acc.as_map(spec.get("network"), "spec.network")
    dns = acc.as_bool(network.get("enableDNSHostnames"), "spec.network.enableDNSHostnames")
    publish = acc.as_bool(network.get("publishNotReadyAddresses"),
                    "spec.network.publishNotReadyAddresses")
    success = acc.as_map(spec.get("successPolicy"), "spec.successPolicy")
    startup = acc.as_map(spec.get("startupPolicy"), "spec.startupPolicy")
    coord_raw = spec.get("coordinator")
    coordinator = None
    if coord_raw is not None:
        cr = acc.as_map(coord_raw, "spec.coordinator")
        coordinator = Coordinator(
            replicated_job=acc.as_str(cr.get("replicatedJob"), "spec.coordinator.replicatedJob"),
            job_index=acc.as_int(cr.get("jobIndex"), "spec.coordinator.jobIndex", 0),
            pod_index=acc.as_int(cr.get("podIndex"), "spec.coordinator.podIndex", 0),
        )
    managed_by = spec.get("managedBy")
    if managed_by is not None:
        managed_by = acc.as_str(managed_by, "spec.managedBy")
    vcps = [_volume_claim_policy(v, f"spec.volumeClaimPolicies[{i}]") for i, v in
            enumerate(acc.as_list(spec.get("volumeClaimPolicies"), "spec.volumeClaimPolicies"))]
    _validate_status(status)
    for key in ("creationTimestamp", "deletionTimestamp"):
        times.check(acc.as_str(meta.get(key), f"metadata.{key}"), f"metadata.{key}")

    js = JobSet(
        raw=obj,
        name=name,
        namespace=acc.as_str(meta.get("namespace"), "metadata.namespace", "default") or "default",
        uid=acc.as_str(meta.get("uid"), "metadata.uid"),
        resource_version=acc.as_str(meta.get("resourceVersion"), "metadata.resourceVersion"),
        labels=acc.as_str_map(meta.get("labels"), "metadata.labels"),
        annotations=annotations,
        deletion_timestamp=acc.as_str(meta.get("deletionTimestamp"), "metadata.deletionTimestamp"),
        replicated_jobs=rjobs,
        # Upstream skips the Service when enableDNSHostnames is nil; the webhook sets it true, so
        # only an explicit false turns DNS off here.
        dns_hostnames=dns is not False,
        subdomain=acc.as_str(network.get("subdomain"), "spec.network.subdomain") or name,
        publish_not_ready=publish is not False,
        success_operator=_enum(success.get("operator"), "spec.successPolicy.operator",
                               c.OPERATORS, c.OPERATOR_ALL),
        success_targets=[acc.as_str(x, f"spec.successPolicy.targetReplicatedJobs[{i}]") for i, x in
                         enumerate(acc.as_list(success.get("targetReplicatedJobs"),
                                         "spec.successPolicy.targetReplicatedJobs"))],
        failure_policy=_parse_failure_policy(spec.get("failurePolicy"), "spec.failurePolicy"),
        in_order=_enum(startup.get("startupPolicyOrder"), "spec.startupPolicy.startupPolicyOrder",
                       c.STARTUP_ORDERS, c.ANY_ORDER) == c.IN_ORDER,
        suspend=bool(acc.as_bool(spec.get("suspend"), "spec.suspend")),
        managed_by=managed_by,
        coordinator=coordinator,
        ttl_seconds_after_finished=acc.as_int(spec.get("ttlSecondsAfterFinished"),
                                        "spec.ttlSecondsAfterFinished", minimum=0),
        volume_claim_policies=vcps,
        status=status,
        independent=is_independent(annotations),
    )
    js._replicas_by_name = {rj.name: rj.replicas for rj in rjobs}
    return js


def _validate_status(status: dict[str, Any]) -> None:
    for key in ("restarts", "restartsCountTowardsMax"):
        acc.as_int(status.get(key), f"status.{key}", 0, minimum=0)
    acc.as_str(status.get("terminalState"), "status.terminalState")
    # Everything the pass reads or writes back is checked here, so that a malformed status is
    # InvalidInput naming the field rather than a crash later: a null list item (_map reads
    # None as {}, but the pass reads items as objects), non-integer counts (sorted and written
    # into the proto's int32 fields) and the in-place restart attempts.
    for key in ("previousInPlaceRestartAttempt", "currentInPlaceRestartAttempt"):
        acc.as_int(status.get(key), f"status.{key}", minimum=0)
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
            acc.as_int(rjs.get(key), f"{rpath}.{key}", minimum=0)
        for key in ("jobRestarts", "jobRestartsCountTowardsMax"):
            for j, v in enumerate(acc.as_list(rjs.get(key), f"{rpath}.{key}")):
                acc.as_int(v, f"{rpath}.{key}[{j}]", minimum=0)
