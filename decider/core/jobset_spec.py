"""The spec of a JobSet, read into typed, defaulted form and validated.

Everything here depends on `spec` alone, so jobset.py parses one spec once and reuses the result
for every later pass that sends the same spec (decider/core/spec_cache.py). What a pass may not
change is immutable: frozen dataclasses and tuples. The JSON inside (Job templates, PVC
templates) stays the caller's dicts, which no pass writes to (tests/support/spec_cache_check.py
checks).

Absent fields read as JobSet's webhook would have set them: network DNS hostnames on, success
policy All, startup policy AnyOrder. Anything of the wrong shape raises InvalidInput naming the
field.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from decider.core import access as acc
from decider.core import constants as c
from decider.core.errors import InvalidInput
from decider.core.go_regex import GoRegexp
from decider.core.pattern_budget import PatternBudget


def enum(value: Any, path: str, allowed: tuple[str, ...], default: str) -> str:
    s = acc.as_str(value, path, default)
    if s not in allowed:
        raise InvalidInput.at(path, f'unsupported value "{s}": supported values: '
                              + ", ".join(f'"{a}"' for a in allowed))
    return s


@dataclass(frozen=True, slots=True)
class DependsOn:
    name: str
    status: str  # "Ready" | "Complete"


@dataclass(frozen=True, slots=True)
class ReplicatedJob:
    name: str
    group_name: str
    replicas: int
    template: dict[str, Any]  # JobTemplateSpec, copied opaquely into child Jobs
    depends_on: tuple[DependsOn, ...]
    parallelism: int | None
    completions: int | None
    indexed: bool


@dataclass(frozen=True, slots=True)
class FailureRule:
    name: str
    action: str
    reasons: frozenset[str]
    patterns: tuple[GoRegexp | None, ...]  # None: a pattern Go does not compile never matches
    targets: frozenset[str]


@dataclass(frozen=True, slots=True)
class FailurePolicy:
    max_restarts: int
    restart_strategy: str
    rules: tuple[FailureRule, ...]


@dataclass(frozen=True, slots=True)
class Coordinator:
    replicated_job: str
    job_index: int
    pod_index: int


@dataclass(frozen=True, slots=True)
class Placement:
    """Where the Jobs of one replicated Job stand among all the JobSet's Jobs (the global and
    group index labels), computed once per spec: a pass building the Jobs of many replicated
    Jobs would otherwise walk all of them for each one."""

    global_offset: int
    group_offset: int
    group_replicas: int


@dataclass(frozen=True, slots=True)
class Spec:
    replicated_jobs: tuple[ReplicatedJob, ...]
    dns_hostnames: bool
    subdomain: str  # as written: "" means the JobSet's name
    publish_not_ready: bool
    success_operator: str
    success_targets: tuple[str, ...]
    failure_policy: FailurePolicy | None
    in_order: bool
    suspend: bool
    managed_by: str | None
    coordinator: Coordinator | None
    ttl_seconds_after_finished: int | None
    # JobSetActiveDeadlineSeconds (KEP-1186): seconds of continuous activity allowed.
    active_deadline_seconds: int | None
    volume_claim_policies: tuple[dict[str, Any], ...]
    # Derived, for lookups in O(1): by replicated Job name.
    rjobs_by_name: dict[str, ReplicatedJob]
    placement: dict[str, Placement]
    total_replicas: int
    # What building a replicated Job's Jobs needs from its template (decider/core/
    # job_template.py), worked out the first time a pass builds one: a memo of pure functions
    # of this spec, so filling it changes no answer.
    job_templates: dict[Any, Any]


@dataclass(frozen=True, slots=True)
class SpecHead:
    """The fields validated before the JobSet's status and metadata (upstream's order of
    errors: the first one found is the one reported)."""

    spec: dict[str, Any]
    replicated_jobs: tuple[ReplicatedJob, ...]
    network: dict[str, Any]
    dns: bool | None
    publish: bool | None
    success: dict[str, Any]
    startup: dict[str, Any]
    coordinator: Coordinator | None
    managed_by: str | None
    volume_claim_policies: tuple[dict[str, Any], ...]


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
            cpath = f"{ppath}.{key}[{i}]"
            container = _object(container, cpath)
            acc.as_str(container.get("name"), f"{cpath}.name")
            for j, mount in enumerate(acc.as_list(container.get("volumeMounts"),
                                                  f"{cpath}.volumeMounts")):
                _object(mount, f"{cpath}.volumeMounts[{j}]")
            # The headless Service declares the ports (#1300) and a resume copies requests
            # and limits into the Jobs (KEP-1150): both read these as the CRD types them.
            for j, port in enumerate(acc.as_list(container.get("ports"), f"{cpath}.ports")):
                port = _object(port, f"{cpath}.ports[{j}]")
                acc.as_int(port.get("containerPort"), f"{cpath}.ports[{j}].containerPort")
                acc.as_str(port.get("protocol"), f"{cpath}.ports[{j}].protocol")
            resources = acc.as_map(container.get("resources"), f"{cpath}.resources")
            for part in ("requests", "limits"):
                acc.as_map(resources.get(part), f"{cpath}.resources.{part}")


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
    enum(retention.get("whenDeleted"), f"{path}.retentionPolicy.whenDeleted",
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
            status=enum(d.get("status"), f"{dpath}.status", c.DEPENDS_ON_STATUSES,
                        c.DEPENDS_ON_READY),
        ))
    mode = acc.as_str(tspec.get("completionMode"), f"{path}.template.spec.completionMode",
                      c.INDEXED)
    return ReplicatedJob(
        name=name,
        group_name=acc.as_str(item.get("groupName"), f"{path}.groupName") or "default",
        replicas=acc.as_int(item.get("replicas"), f"{path}.replicas", 1, minimum=0),
        template=template,
        depends_on=tuple(deps),
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
    budget = PatternBudget()
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
            action=enum(r.get("action"), f"{rpath}.action", c.FAILURE_ACTIONS, ""),
            # Sets: only membership is asked, once per failed Job.
            reasons=frozenset(acc.as_str(x, f"{rpath}.onJobFailureReasons[{j}]") for j, x in
                              enumerate(acc.as_list(r.get("onJobFailureReasons"),
                                                    f"{rpath}.onJobFailureReasons"))),
            # Upstream compiles with Go's regexp when a Job fails, and a pattern that does not
            # compile never matches; admission refuses those, and those past the JobSet's
            # pattern budget: a JobSet that skipped it reads them as None.
            patterns=tuple(budget.matcher(p) for p in patterns),
            targets=frozenset(acc.as_str(x, f"{rpath}.targetReplicatedJobs[{j}]") for j, x in
                              enumerate(acc.as_list(r.get("targetReplicatedJobs"),
                                                    f"{rpath}.targetReplicatedJobs"))),
        ))
    return FailurePolicy(
        max_restarts=acc.as_int(fp.get("maxRestarts"), f"{path}.maxRestarts", 0, minimum=0),
        restart_strategy=enum(fp.get("restartStrategy"), f"{path}.restartStrategy",
                              c.RESTART_STRATEGIES, c.RECREATE),
        rules=tuple(rules),
    )


def parse_head(spec: dict[str, Any]) -> SpecHead:
    rjobs = tuple(_parse_rjob(item, f"spec.replicatedJobs[{i}]") for i, item in
                  enumerate(acc.as_list(spec.get("replicatedJobs"), "spec.replicatedJobs")))
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
    vcps = tuple(_volume_claim_policy(v, f"spec.volumeClaimPolicies[{i}]") for i, v in
                 enumerate(acc.as_list(spec.get("volumeClaimPolicies"),
                                       "spec.volumeClaimPolicies")))
    return SpecHead(spec=spec, replicated_jobs=rjobs, network=network, dns=dns,
                    publish=publish, success=success, startup=startup, coordinator=coordinator,
                    managed_by=managed_by, volume_claim_policies=vcps)


def _placement(rjobs: tuple[ReplicatedJob, ...]) -> dict[str, Placement]:
    group_totals: dict[str, int] = {}
    for rj in rjobs:
        group_totals[rj.group_name] = group_totals.get(rj.group_name, 0) + rj.replicas
    out: dict[str, Placement] = {}
    global_offset = 0
    group_offsets: dict[str, int] = {}
    for rj in rjobs:
        group_offset = group_offsets.get(rj.group_name, 0)
        out[rj.name] = Placement(global_offset, group_offset, group_totals[rj.group_name])
        global_offset += rj.replicas
        group_offsets[rj.group_name] = group_offset + rj.replicas
    return out


def parse_tail(head: SpecHead) -> Spec:
    """The rest of the spec, validated after the JobSet's status and metadata."""
    spec, network, success, startup = head.spec, head.network, head.success, head.startup
    subdomain = acc.as_str(network.get("subdomain"), "spec.network.subdomain")
    success_operator = enum(success.get("operator"), "spec.successPolicy.operator",
                            c.OPERATORS, c.OPERATOR_ALL)
    success_targets = tuple(acc.as_str(x, f"spec.successPolicy.targetReplicatedJobs[{i}]")
                            for i, x in enumerate(acc.as_list(
                                success.get("targetReplicatedJobs"),
                                "spec.successPolicy.targetReplicatedJobs")))
    failure_policy = _parse_failure_policy(spec.get("failurePolicy"), "spec.failurePolicy")
    in_order = enum(startup.get("startupPolicyOrder"), "spec.startupPolicy.startupPolicyOrder",
                    c.STARTUP_ORDERS, c.ANY_ORDER) == c.IN_ORDER
    suspend = bool(acc.as_bool(spec.get("suspend"), "spec.suspend"))
    ttl = acc.as_int(spec.get("ttlSecondsAfterFinished"), "spec.ttlSecondsAfterFinished",
                     minimum=0)
    # The CRD's Minimum=1: the API server stores nothing smaller.
    active_deadline = acc.as_int64(spec.get("activeDeadlineSeconds"),
                                   "spec.activeDeadlineSeconds", minimum=1)
    rjobs = head.replicated_jobs
    return Spec(
        replicated_jobs=rjobs,
        # Upstream skips the Service when enableDNSHostnames is nil; the webhook sets it true,
        # so only an explicit false turns DNS off here.
        dns_hostnames=head.dns is not False,
        subdomain=subdomain,
        publish_not_ready=head.publish is not False,
        success_operator=success_operator,
        success_targets=success_targets,
        failure_policy=failure_policy,
        in_order=in_order,
        suspend=suspend,
        managed_by=head.managed_by,
        coordinator=head.coordinator,
        ttl_seconds_after_finished=ttl,
        active_deadline_seconds=active_deadline,
        volume_claim_policies=head.volume_claim_policies,
        rjobs_by_name={rj.name: rj for rj in rjobs},
        placement=_placement(rjobs),
        total_replicas=sum(rj.replicas for rj in rjobs),
        job_templates={},
    )
