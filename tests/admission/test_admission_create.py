"""validate_create: one row per upstream rule and message (spec §3.2-§3.3), plus the
structural schema, this project's Independent mode and the deliberate differences."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from decider.core.admission import validate_create

from .jobsets import chain, delete, job_spec, jobset, pod_spec, put, rjob

ON = {"InPlaceRestart": True, "RestartJob": True, "ElasticJobSet": True}
DNS1035_REGEX = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
    "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
DNS1123_SUBDOMAIN_REGEX = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


def with_spec(fn: Any):
    """A mutator calling fn(js) for edits that need more than put/delete."""
    return fn


def _in_place(js: dict[str, Any]) -> None:
    js["spec"]["failurePolicy"] = {"restartStrategy": "InPlaceRestart"}


def _vcp(*names: str, when_deleted: str | None = None, mounted: bool = True):
    def mutate(js: dict[str, Any]) -> None:
        policy: dict[str, Any] = {
            "templates": [
                {"metadata": {"name": n}, "spec": {"accessModes": ["ReadWriteOnce"]}} for n in names
            ]
        }
        if when_deleted is not None:
            policy["retentionPolicy"] = {"whenDeleted": when_deleted}
        js["spec"]["volumeClaimPolicies"] = [policy]
        if mounted:
            pod_spec(js, 0)["containers"][0]["volumeMounts"] = [
                {"name": n, "mountPath": f"/{n}"} for n in dict.fromkeys(names)
            ]

    return mutate


def _coordinator(rj: str = "leader", job_index: int = 0, pod_index: int = 0):
    return put(
        "spec.coordinator", {"replicatedJob": rj, "jobIndex": job_index, "podIndex": pod_index}
    )


def _rules(*rules: dict[str, Any]):
    return put("spec.failurePolicy", {"rules": list(rules)})


def _pattern(pattern: str):
    return _rules({"action": "FailJobSet", "onJobFailureMessagePatterns": [pattern]})


def _generate_name(prefix: str):
    def mutate(js: dict[str, Any]) -> None:
        del js["metadata"]["name"]
        js["metadata"]["generateName"] = prefix

    return mutate


def _second_rjob_depends_on(*names: str):
    return put("spec.replicatedJobs[1].dependsOn", [{"name": n, "status": "Ready"} for n in names])


INDEPENDENT = "jobset.sigs.k8s.io/reconciliation-mode"
SKIP_SUSPEND = "jobset.sigs.k8s.io/skip-suspend-reconciliation"
PVC_SPEC = {"accessModes": ["ReadWriteOnce"]}

# (mutator, feature gates, existing PVCs, field, message)
ERROR_ROWS = [
    # --- type meta and object meta
    pytest.param(
        put("kind", "Job"),
        None,
        None,
        "kind",
        'unsupported value "Job": supported values: "JobSet"',
        id="schema/kind",
    ),
    pytest.param(
        put("apiVersion", "jobset.x-k8s.io/v1alpha1"),
        None,
        None,
        "apiVersion",
        'unsupported value "jobset.x-k8s.io/v1alpha1": supported values: '
        '"jobset.x-k8s.io/v1alpha2"',
        id="schema/apiVersion",
    ),
    pytest.param(
        delete("apiVersion"),
        None,
        None,
        "apiVersion",
        "Required value",
        id="schema/apiVersion-required",
    ),
    pytest.param(
        delete("metadata.name"),
        None,
        None,
        "metadata.name",
        "name or generateName is required",
        id="meta/name-or-generateName",
    ),
    pytest.param(
        put("metadata.name", "Bad_Name"),
        None,
        None,
        "metadata.name",
        DNS1123_SUBDOMAIN_REGEX,
        id="meta/name-dns1123-subdomain",
    ),
    # ValidateLabels reports key and value errors at the map; label texts come from
    # apimachinery's content package, which counts bytes.
    pytest.param(
        put("metadata.labels", {"team": "x" * 64}),
        None,
        None,
        "metadata.labels",
        "must be no more than 63 bytes",
        id="meta/ValidateLabels-value-too-long",
    ),
    pytest.param(
        put("metadata.labels", {"k" * 64: "v"}),
        None,
        None,
        "metadata.labels",
        "name part must be no more than 63 bytes",
        id="meta/ValidateLabels-key-name-too-long",
    ),
    pytest.param(
        put("metadata.labels", {"a": 1}),
        None,
        None,
        "metadata.labels[a]",
        "must be a string",
        id="schema/labels-values-are-strings",
    ),
    # --- structural schema of spec
    pytest.param(put("spec", []), None, None, "spec",
                 'spec in body must be of type object: "array"', id="schema/spec-type"),
    pytest.param(
        put("spec.replicatedJobs", {}),
        None,
        None,
        "spec.replicatedJobs",
        'spec.replicatedJobs in body must be of type array: "object"',
        id="schema/replicatedJobs-type",
    ),
    pytest.param(
        put("spec.replicatedJobs", [None]),
        None,
        None,
        "spec.replicatedJobs[0]",
        'spec.replicatedJobs[0] in body must be of type object: "null"',
        id="schema/replicatedJobs-null-item",
    ),
    pytest.param(
        put("spec.replicatedJobs[0].replicas", "2"),
        None,
        None,
        "spec.replicatedJobs[0].replicas",
        'spec.replicatedJobs[0].replicas in body must be of type integer: "string"',
        id="schema/replicas-type",
    ),
    pytest.param(
        put("spec.replicatedJobs[0].replicas", True),
        None,
        None,
        "spec.replicatedJobs[0].replicas",
        'spec.replicatedJobs[0].replicas in body must be of type int32: ""',
        id="schema/replicas-bool-is-not-an-integer",
    ),
    pytest.param(
        put("spec.replicatedJobs[0].replicas", -1),
        None,
        None,
        "spec.replicatedJobs[0].replicas",
        "must be greater than or equal to 0",
        id="schema/replicas-minimum",
    ),
    pytest.param(
        put("spec.replicatedJobs[0].replicas", 2**31),
        None,
        None,
        "spec.replicatedJobs[0].replicas",
        "must be a 32-bit integer (from -2147483648 to 2147483647)",
        id="schema/replicas-int32",
    ),
    # Upstream's webhook writes `name: ""` (a Go round trip) and admits it; deliberately not.
    pytest.param(
        delete("spec.replicatedJobs[0].name"),
        None,
        None,
        "spec.replicatedJobs[0].name",
        "Required value",
        id="deliberate/rjob-name-required",
    ),
    pytest.param(
        put("spec.replicatedJobs[0].name", ""),
        None,
        None,
        "spec.replicatedJobs[0].name",
        "Required value",
        id="deliberate/rjob-name-empty",
    ),
    # The webhook's Go round trip writes the missing template as a zero struct and defaults it:
    # the schema then finds a pod without containers.
    pytest.param(
        delete("spec.replicatedJobs[0].template"),
        None,
        None,
        "spec.replicatedJobs[0].template.spec.template.spec.containers",
        "Required value",
        id="webhook-round-trip/rjob-template-missing-pod-containers-required",
    ),
    pytest.param(
        put("spec.replicatedJobs[0].template", {}),
        None,
        None,
        "spec.replicatedJobs[0].template.spec.template.spec.containers",
        "Required value",
        id="schema/pod-containers-required-after-webhook-defaults",
    ),
    pytest.param(
        put("spec.replicatedJobs[1].name", "leader"),
        None,
        None,
        "spec.replicatedJobs[1]",
        'Duplicate value: {"name":"leader"}',
        id="listtype/replicatedJobs-list-map-key-unique",
    ),
    pytest.param(
        put("spec.replicatedJobs[1].dependsOn", [{"status": "Ready"}]),
        None,
        None,
        "spec.replicatedJobs[1].dependsOn[0].name",
        "replicatedJob: worker cannot depend on replicatedJob: ",
        id="webhook-round-trip/dependsOn-name-written-empty-unknown-rjob",
    ),
    pytest.param(
        put("spec.replicatedJobs[1].dependsOn", [{"name": "leader"}]),
        None,
        None,
        "spec.replicatedJobs[1].dependsOn[0].status",
        'unsupported value "": supported values: "Ready", "Complete"',
        id="webhook-round-trip/dependsOn-status-written-empty-enum",
    ),
    pytest.param(
        put("spec.replicatedJobs[1].dependsOn", [{"name": "leader", "status": "Done"}]),
        None,
        None,
        "spec.replicatedJobs[1].dependsOn[0].status",
        'unsupported value "Done": supported values: "Ready", "Complete"',
        id="schema/dependsOn-status-enum",
    ),
    pytest.param(
        put(
            "spec.replicatedJobs[1].dependsOn",
            [{"name": f"d{i}", "status": "Ready"} for i in range(6)],
        ),
        None,
        None,
        "spec.replicatedJobs[1].dependsOn",
        "must have at most 5 items",
        id="schema/dependsOn-maxItems",
    ),
    pytest.param(
        _second_rjob_depends_on("leader", "leader"),
        None,
        None,
        "spec.replicatedJobs[1].dependsOn[1]",
        'Duplicate value: {"name":"leader"}',
        id="listtype/dependsOn-list-map-key-unique",
    ),
    pytest.param(
        put("spec.successPolicy", {"targetReplicatedJobs": []}),
        None,
        None,
        "spec.successPolicy.operator",
        'unsupported value "": supported values: "All", "Any"',
        id="webhook-round-trip/successPolicy-operator-written-empty-enum",
    ),
    pytest.param(
        put("spec.successPolicy", {"operator": "Some"}),
        None,
        None,
        "spec.successPolicy.operator",
        'unsupported value "Some": supported values: "All", "Any"',
        id="schema/successPolicy-operator-enum",
    ),
    pytest.param(
        _rules({"name": "r"}),
        None,
        None,
        "spec.failurePolicy.rules[0].action",
        'unsupported value "": supported values: "FailJobSet"',
        id="webhook-round-trip/rule-action-written-empty-enum",
    ),
    pytest.param(
        _rules({"action": "Explode"}),
        None,
        None,
        "spec.failurePolicy.rules[0].action",
        'unsupported value "Explode": supported values: "FailJobSet", "RestartJobSet", '
        '"RestartJobSetAndIgnoreMaxRestarts", "RestartJob", '
        '"RestartJobAndIgnoreMaxRestarts"',
        id="schema/rule-action-enum",
    ),
    pytest.param(
        put("spec.failurePolicy", {"restartStrategy": "Reboot"}),
        None,
        None,
        "spec.failurePolicy.restartStrategy",
        'unsupported value "Reboot": supported values: "Recreate", "BlockingRecreate", '
        '"InPlaceRestart"',
        id="schema/restartStrategy-enum",
    ),
    pytest.param(
        put("spec.startupPolicy", {}),
        None,
        None,
        "spec.startupPolicy.startupPolicyOrder",
        'unsupported value "": supported values: "AnyOrder", "InOrder"',
        id="webhook-round-trip/startupPolicyOrder-written-empty-enum",
    ),
    pytest.param(
        put("spec.startupPolicy", {"startupPolicyOrder": "Random"}),
        None,
        None,
        "spec.startupPolicy.startupPolicyOrder",
        'unsupported value "Random": supported values: "AnyOrder", "InOrder"',
        id="schema/startupPolicyOrder-enum",
    ),
    pytest.param(
        put("spec.ttlSecondsAfterFinished", -5),
        None,
        None,
        "spec.ttlSecondsAfterFinished",
        "must be greater than or equal to 0",
        id="schema/ttlSecondsAfterFinished-minimum",
    ),
    pytest.param(
        put("spec.suspend", "yes"),
        None,
        None,
        "spec.suspend",
        'spec.suspend in body must be of type boolean: "string"',
        id="schema/suspend-type",
    ),
    pytest.param(
        put("spec.coordinator", {"jobIndex": 0}),
        None,
        None,
        "spec.coordinator.replicatedJob",
        "coordinator replicatedJob  does not exist",
        id="webhook-round-trip/coordinator-replicatedJob-written-empty",
    ),
    pytest.param(
        put("spec.volumeClaimPolicies", [{}] * 51),
        None,
        None,
        "spec.volumeClaimPolicies",
        "must have at most 50 items",
        id="schema/volumeClaimPolicies-maxItems",
    ),
    pytest.param(
        put("spec.volumeClaimPolicies", [{"templates": [{}] * 51}]),
        None,
        None,
        "spec.volumeClaimPolicies[0].templates",
        "must have at most 50 items",
        id="schema/volumeClaimPolicies-templates-maxItems",
    ),
    pytest.param(
        put("spec.volumeClaimPolicies", [{"retentionPolicy": {"whenDeleted": "Keep"}}]),
        None,
        None,
        "spec.volumeClaimPolicies[0].retentionPolicy.whenDeleted",
        'unsupported value "Keep": supported values: "Delete", "Retain"',
        id="schema/whenDeleted-enum",
    ),
    # --- CEL
    pytest.param(
        chain(
            put("spec.startupPolicy", {"startupPolicyOrder": "InOrder"}),
            _second_rjob_depends_on("leader"),
        ),
        None,
        None,
        "spec",
        "StartupPolicy and DependsOn APIs are mutually exclusive",
        id="cel/startupPolicy-InOrder-and-dependsOn-exclusive",
    ),
    pytest.param(
        chain(
            _vcp("data"),
            put("spec.volumeClaimPolicies[0].templates[0].metadata.namespace", "other"),
        ),
        None,
        None,
        "spec.volumeClaimPolicies[0]",
        "namespace cannot be set for VolumeClaimPolicies templates",
        id="cel/volumeClaimPolicies-template-namespace-names-the-policy",
    ),
    # A rule that selects a field the object lacks fails to evaluate: apiextensions reports
    # "<error> evaluating rule: <message>" at the object the rule sits on.
    pytest.param(
        put("spec.volumeClaimPolicies", [{}]),
        None,
        None,
        "spec.volumeClaimPolicies[0]",
        "no such key: templates evaluating rule: namespace cannot be set for "
        "VolumeClaimPolicies templates",
        id="cel/volumeClaimPolicies-without-templates-no-such-key",
    ),
    pytest.param(
        chain(put("spec.startupPolicy", {"startupPolicyOrder": "InOrder"}),
              delete("spec.replicatedJobs")),
        None,
        None,
        "spec",
        "no such key: replicatedJobs evaluating rule: StartupPolicy and DependsOn APIs are "
        "mutually exclusive",
        id="cel/InOrder-without-replicatedJobs-no-such-key",
    ),
    # --- validating webhook, in upstream's order
    pytest.param(
        _in_place,
        None,
        None,
        "spec.failurePolicy.restartStrategy",
        "InPlaceRestart restart strategy cannot be set when InPlaceRestart feature gate "
        "is disabled",
        id="webhook/InPlaceRestart-gate-disabled",
    ),
    pytest.param(
        put("spec.replicatedJobs[0].dependsOn", [{"name": "worker", "status": "Ready"}]),
        None,
        None,
        "spec.replicatedJobs[0].dependsOn",
        "DependsOn can't be set for the first ReplicatedJob",
        id="webhook/first-rjob-dependsOn",
    ),
    pytest.param(
        put("spec.network", {"subdomain": "Bad_Sub"}),
        None,
        None,
        "spec.network.subdomain",
        DNS1123_SUBDOMAIN_REGEX,
        id="webhook/subdomain-dns1123-subdomain",
    ),
    pytest.param(
        put("spec.network", {"subdomain": "a.b"}),
        None,
        None,
        "spec.network.subdomain",
        DNS1035_REGEX,
        id="webhook/subdomain-dns1035-label",
    ),
    pytest.param(
        put("spec.network", {"subdomain": "a" * 64}),
        None,
        None,
        "spec.network.subdomain",
        ".spec.network.subdomain is too long, must be less than 63 characters",
        id="webhook/subdomain-too-long",
    ),
    pytest.param(
        put("spec.managedBy", "shim"),
        None,
        None,
        "spec.managedBy",
        'must be a domain-prefixed path (such as "acme.io/foo")',
        id="webhook/managedBy-domain-prefixed-path",
    ),
    pytest.param(
        put("spec.managedBy", "Example.com/x"),
        None,
        None,
        "spec.managedBy",
        DNS1123_SUBDOMAIN_REGEX,
        id="webhook/managedBy-host-dns1123",
    ),
    pytest.param(
        put("spec.managedBy", "example.com/" + "x" * 60),
        None,
        None,
        "spec.managedBy",
        "may not be more than 63 bytes",
        id="webhook/managedBy-too-long",
    ),
    pytest.param(
        chain(
            put("spec.replicatedJobs[1].replicas", 65536),
            put("spec.replicatedJobs[1].template.spec.parallelism", 65536),
        ),
        None,
        None,
        "spec.replicatedJobs[1].replicas",
        "the product of replicas and parallelism must not exceed 2147483647 for "
        "replicatedJob 'worker'",
        id="webhook/replicas-times-parallelism",
    ),
    pytest.param(
        put("spec.replicatedJobs[0].groupName", "Group_A"),
        None,
        None,
        "spec.replicatedJobs[0].groupName",
        DNS1035_REGEX,
        id="webhook/groupName-dns1035",
    ),
    pytest.param(
        put("spec.replicatedJobs[0].groupName", "g" * 64),
        None,
        None,
        "spec.replicatedJobs[0].groupName",
        ".spec.replicatedJob[].groupName is too long, must be less than 63 characters",
        id="webhook/groupName-too-long",
    ),
    pytest.param(
        put("metadata.name", "j" * 56),
        None,
        None,
        "spec.replicatedJobs[1].name",
        "JobSet name is too long, job names generated for this JobSet will exceed 63 characters",
        id="webhook/job-name-too-long",
    ),
    pytest.param(
        put("spec.replicatedJobs[0].name", "lead.er"),
        None,
        None,
        "spec.replicatedJobs[0].name",
        DNS1035_REGEX,
        id="webhook/job-name-dns1035",
    ),
    pytest.param(
        chain(
            put("metadata.name", "j" * 46),
            put("spec.replicatedJobs[0].template.spec.completions", 100),
        ),
        None,
        None,
        "spec.replicatedJobs[0].name",
        "JobSet name is too long, pod names generated for this JobSet will exceed 63 characters",
        id="webhook/pod-name-too-long",
    ),
    pytest.param(
        _generate_name("g" * 70),
        None,
        None,
        "spec.replicatedJobs[1].name",
        "JobSet name is too long, job names generated for this JobSet will exceed 63 characters",
        id="webhook/generateName-cut-to-58-plus-5",
    ),
    pytest.param(
        chain(
            put("spec.replicatedJobs", [rjob("a"), rjob("b"), rjob("c")]),
            _second_rjob_depends_on("c"),
        ),
        None,
        None,
        "spec.replicatedJobs[1].dependsOn[0].name",
        "replicatedJob: b cannot depend on replicatedJob: c",
        id="webhook/dependsOn-later-rjob",
    ),
    pytest.param(
        _second_rjob_depends_on("ghost"),
        None,
        None,
        "spec.replicatedJobs[1].dependsOn[0].name",
        "replicatedJob: worker cannot depend on replicatedJob: ghost",
        id="webhook/dependsOn-unknown-rjob",
    ),
    pytest.param(
        _in_place,
        ON,
        None,
        "spec.replicatedJobs[0].template.spec.backoffLimit",
        "replicatedJob leader: must be set to 2147483647 (MaxInt32) when in-place "
        "restart is enabled",
        id="webhook/in-place-backoffLimit",
    ),
    pytest.param(
        _in_place,
        ON,
        None,
        "spec.replicatedJobs[0].template.spec.podReplacementPolicy",
        "replicatedJob leader: must be set to Failed when in-place restart is enabled",
        id="webhook/in-place-podReplacementPolicy",
    ),
    pytest.param(
        _in_place,
        ON,
        None,
        "spec.replicatedJobs[1].template.spec.completions",
        "replicatedJob worker: completions and parallelism must be set and equal to each "
        "other when in-place restart is enabled",
        id="webhook/in-place-completions",
    ),
    pytest.param(
        put("spec.successPolicy", {"operator": "All", "targetReplicatedJobs": ["x"]}),
        None,
        None,
        "spec.successPolicy.targetReplicatedJobs[0]",
        "invalid replicatedJob name 'x' does not appear in .spec.ReplicatedJobs",
        id="webhook/successPolicy-target",
    ),
    pytest.param(
        _rules({"action": "FailJobSet"}, {"action": "RestartJob"}),
        None,
        None,
        "spec.failurePolicy.rules[1].action",
        "RestartJob and RestartJobAndIgnoreMaxRestarts failure policy actions are not "
        "allowed when RestartJob feature gate is disabled",
        id="webhook/RestartJob-gate-disabled",
    ),
    pytest.param(
        chain(
            _rules({"action": "RestartJobAndIgnoreMaxRestarts"}),
            put("spec.replicatedJobs[1].replicas", 1025),
        ),
        ON,
        None,
        "spec.replicatedJobs[1].replicas",
        "JobSet cannot have a failure policy rule with RestartJob or "
        "RestartJobAndIgnoreMaxRestarts action and a replicated job with replicas > 1024",
        id="webhook/RestartJob-replicas-over-1024",
    ),
    pytest.param(
        _rules({"action": "FailJobSet", "name": "r" * 129}),
        None,
        None,
        "spec.failurePolicy.rules[0].name",
        "invalid failure policy rule name of length 129, the rule name must be at least "
        "1 characters long and at most 128 characters long",
        id="webhook/rule-name-length",
    ),
    pytest.param(
        _rules({"action": "FailJobSet", "name": "1st-rule"}),
        None,
        None,
        "spec.failurePolicy.rules[0].name",
        "invalid failure policy rule name '1st-rule', a failure policy rule name must "
        "start with an alphabetic character, optionally followed by a string of "
        "alphanumeric characters or '_,:', and must end with an alphanumeric character "
        "or '_'",
        id="webhook/rule-name-format",
    ),
    pytest.param(
        _rules({"action": "FailJobSet", "targetReplicatedJobs": ["leader", "nope"]}),
        None,
        None,
        "spec.failurePolicy.rules[0].targetReplicatedJobs[1]",
        "invalid replicatedJob name 'nope' in failure policy does not appear in "
        ".spec.ReplicatedJobs",
        id="webhook/rule-target",
    ),
    pytest.param(
        _rules({"action": "FailJobSet", "onJobFailureReasons": ["OOMKilled"]}),
        None,
        None,
        "spec.failurePolicy.rules[0].onJobFailureReasons[0]",
        "invalid job failure reason 'OOMKilled' in failure policy is not a recognized "
        "job failure reason",
        id="webhook/rule-reason",
    ),
    pytest.param(
        _rules(
            {"action": "FailJobSet", "name": "a"},
            {"action": "FailJobSet"},
            {"action": "RestartJobSet", "name": "a"},
        ),
        None,
        None,
        "spec.failurePolicy.rules[2].name",
        "rule names are not unique, rules with indices [0 2] all have the same name 'a'",
        id="webhook/rule-names-unique",
    ),
    pytest.param(
        _coordinator("ghost"),
        None,
        None,
        "spec.coordinator.replicatedJob",
        "coordinator replicatedJob ghost does not exist",
        id="webhook/coordinator-rjob-exists",
    ),
    pytest.param(
        _coordinator("leader", job_index=1),
        None,
        None,
        "spec.coordinator.jobIndex",
        "coordinator job index 1 is invalid for replicatedJob leader",
        id="webhook/coordinator-job-index",
    ),
    pytest.param(
        _coordinator("worker"),
        None,
        None,
        "spec.coordinator.replicatedJob",
        "job for coordinator pod must be indexed completion mode, and completions "
        "number must be set",
        id="webhook/coordinator-indexed-with-completions",
    ),
    pytest.param(
        _coordinator("leader", pod_index=1),
        None,
        None,
        "spec.coordinator.podIndex",
        "coordinator pod index 1 is invalid for replicatedJob leader job index 0",
        id="webhook/coordinator-pod-index",
    ),
    pytest.param(
        chain(_coordinator("leader"), put("spec.network", {"subdomain": "s" * 50})),
        None,
        None,
        "spec.coordinator",
        'spec will lead to invalid label value "js-leader-0-0.' + "s" * 50 + '" for '
        'coordinator label "jobset.sigs.k8s.io/coordinator" (long JobSet / '
        "ReplicatedJob / SubDomain name?): must be no more than 63 bytes",
        id="webhook/coordinator-label-value",
    ),
    pytest.param(
        _vcp("data", "data"),
        None,
        None,
        "spec.volumeClaimPolicies[0].templates[1].name",
        "names must be unique for VolumeClaimPolicies template",
        id="webhook/vcp-template-names-unique",
    ),
    pytest.param(
        _vcp("Data"),
        None,
        None,
        "spec.volumeClaimPolicies[0].templates[0].name",
        DNS1123_SUBDOMAIN_REGEX,
        id="webhook/vcp-template-name-dns1123",
    ),
    pytest.param(
        _vcp("d" * 61),
        None,
        None,
        "spec.volumeClaimPolicies[0].templates[0].name",
        "VolumeClaimPolicies template name is too long",
        id="webhook/vcp-pvc-name-length",
    ),
    pytest.param(
        chain(
            _vcp("data"),
            put(
                "spec.replicatedJobs[1].template.spec.template.spec.volumes",
                [{"name": "data", "emptyDir": {}}],
            ),
        ),
        None,
        None,
        "spec.replicatedJobs[1].template.spec.template.spec.volumes[0].name",
        "volume name conflicts with VolumeClaimPolicy template name: data",
        id="webhook/vcp-volume-name-conflict",
    ),
    pytest.param(
        _vcp("data", mounted=False),
        None,
        None,
        "spec.replicatedJobs",
        "replicatedJob containers don't have a matching volumeMount: data from VolumeClaimPolicies",
        id="webhook/vcp-needs-a-volumeMount",
    ),
    pytest.param(
        _vcp("data", when_deleted="Retain"),
        None,
        {"data-js": {"spec": {"accessModes": ["ReadWriteMany"]}}},
        "spec.volumeClaimPolicies[0].templates[0].spec",
        "spec does not match existing PVC data-js in namespace default",
        id="webhook/vcp-existing-pvc-spec",
    ),
    pytest.param(
        _vcp("data"),
        None,
        {"data-js": {"spec": PVC_SPEC}},
        "spec.volumeClaimPolicies[0].retentionPolicy.whenDeleted",
        "retentionPolicy must be retain when PVC exists",
        id="webhook/vcp-existing-pvc-retain",
    ),
    # --- deliberate differences
    pytest.param(
        _pattern("(unclosed"),
        None,
        None,
        "spec.failurePolicy.rules[0].onJobFailureMessagePatterns[0]",
        "invalid regular expression '(unclosed': missing closing ): `(unclosed`",
        id="deliberate/message-pattern-invalid",
    ),
    pytest.param(
        _pattern(r"(a)\1"),
        None,
        None,
        "spec.failurePolicy.rules[0].onJobFailureMessagePatterns[0]",
        "backreference \\1 is not supported by Go's regexp",
        id="deliberate/message-pattern-backreference",
    ),
    pytest.param(
        _pattern("evicted(?=x)"),
        None,
        None,
        "spec.failurePolicy.rules[0].onJobFailureMessagePatterns[0]",
        "lookahead (?=...) is not supported by Go's regexp",
        id="deliberate/message-pattern-lookahead",
    ),
    pytest.param(
        _pattern("(?!x)y"),
        None,
        None,
        "spec.failurePolicy.rules[0].onJobFailureMessagePatterns[0]",
        "negative lookahead (?!...) is not supported",
        id="deliberate/pattern-neg-lookahead",
    ),
    pytest.param(
        _pattern("(?<=x)y"),
        None,
        None,
        "spec.failurePolicy.rules[0].onJobFailureMessagePatterns[0]",
        "lookbehind (?<=...) is not supported",
        id="deliberate/pattern-lookbehind",
    ),
    pytest.param(
        _pattern("(?<!x)y"),
        None,
        None,
        "spec.failurePolicy.rules[0].onJobFailureMessagePatterns[0]",
        "negative lookbehind (?<!...) is not supported",
        id="deliberate/pattern-negative-lookbehind",
    ),
    pytest.param(
        _second_rjob_depends_on("worker"),
        None,
        None,
        "spec.replicatedJobs[1].dependsOn[0].name",
        "replicatedJob: worker cannot depend on itself",
        id="deliberate/self-dependency",
    ),
    # --- Independent reconciliation mode (seed 000)
    pytest.param(
        chain(put("metadata.annotations", {INDEPENDENT: "Independent"}), put("spec.suspend", True)),
        None,
        None,
        "spec.suspend",
        "must not be set when the JobSet's reconciliation mode is Independent",
        id="independent/suspend-must-be-unset",
    ),
    pytest.param(
        chain(
            put("metadata.annotations", {INDEPENDENT: "Independent"}), put("spec.suspend", False)
        ),
        None,
        None,
        "spec.suspend",
        "must not be set when the JobSet's reconciliation mode is Independent",
        id="independent/suspend-false-is-set-too",
    ),
    pytest.param(
        chain(put("metadata.annotations", {SKIP_SUSPEND: "true"}), put("spec.suspend", True)),
        None,
        None,
        "spec.suspend",
        "must not be set when the JobSet's reconciliation mode is Independent",
        id="independent/skip-suspend-reconciliation-spelling",
    ),
    pytest.param(
        put("metadata.annotations", {INDEPENDENT: "independent"}),
        None,
        None,
        f"metadata.annotations[{INDEPENDENT}]",
        'unsupported value "independent": supported values: "Independent"',
        id="independent/annotation-value",
    ),
]


@pytest.mark.parametrize(("mutate", "gates", "pvcs", "field", "message"), ERROR_ROWS)
def test_create_error(mutate, gates, pvcs, field, message):
    js = jobset()
    mutate(js)
    errors = validate_create(js, gates, pvcs)
    assert any(e.field == field and message in e.message for e in errors), errors


def _valid_in_place(js: dict[str, Any]) -> None:
    _in_place(js)
    for i in range(2):
        spec = job_spec(js, i)
        spec.update(backoffLimit=2**31 - 1, podReplacementPolicy="Failed")
        spec.update(parallelism=2, completions=2)


VALID_ROWS = [
    pytest.param(lambda js: None, None, None, id="valid/base"),
    pytest.param(_second_rjob_depends_on("leader"), None, None, id="valid/dependsOn-earlier"),
    pytest.param(put("spec.replicatedJobs[1].replicas", 0), None, None, id="valid/zero-replicas"),
    pytest.param(_generate_name("my-js-"), None, None, id="valid/generateName"),
    pytest.param(put("spec.network", {"subdomain": "svc"}), None, None, id="valid/subdomain"),
    pytest.param(put("spec.managedBy", "jobset-decider.io/shim"), None, None, id="valid/managedBy"),
    pytest.param(_coordinator("leader"), None, None, id="valid/coordinator"),
    pytest.param(
        _rules({"action": "RestartJob", "onJobFailureMessagePatterns": ["^OOM.*$"]}),
        ON,
        None,
        id="valid/RestartJob-with-gate",
    ),
    pytest.param(_valid_in_place, ON, None, id="valid/in-place-restart-with-gate"),
    pytest.param(
        _vcp("data", when_deleted="Retain"),
        None,
        {"data-js": {"spec": PVC_SPEC}},
        id="valid/vcp-existing-pvc-retained-and-equal",
    ),
    pytest.param(
        put("metadata.annotations", {INDEPENDENT: "Independent"}),
        None,
        None,
        id="valid/independent-without-suspend",
    ),
    pytest.param(
        put("spec.startupPolicy", {"startupPolicyOrder": "InOrder"}),
        None,
        None,
        id="valid/InOrder-without-dependsOn",
    ),
    pytest.param(
        put("spec.replicatedJobs[0].replicas", 2.0),
        None,
        None,
        id="valid/integral-float-is-an-integer",
    ),
]


@pytest.mark.parametrize(("mutate", "gates", "pvcs"), VALID_ROWS)
def test_create_valid(mutate, gates, pvcs):
    js = jobset()
    mutate(js)
    before = copy.deepcopy(js)
    assert validate_create(js, gates, pvcs) == []
    assert js == before, "validate_create must not mutate its input"


def test_schema_errors_stop_before_the_webhook():
    # The API server never calls the validating webhook for an object its schema rejects.
    js = jobset()
    js["spec"]["replicatedJobs"][0]["replicas"] = "x"
    js["spec"]["network"] = {"subdomain": "Bad_Sub"}
    fields = [e.field for e in validate_create(js)]
    # A type error also keeps the CEL rules from running; the API server says so at <nil>.
    assert fields == ["spec.replicatedJobs[0].replicas", "<nil>"]


def test_unknown_and_non_bool_gates_are_ignored():
    js = jobset()
    _in_place(js)
    errors = validate_create(js, {"InPlaceRestart": "yes", "NoSuchGate": True})
    assert [e.field for e in errors] == ["spec.failurePolicy.restartStrategy"]


def test_listtype_reports_a_repeated_key_once_at_its_second_item():
    # validateListSet: a key is reported when seen the second time, never again after.
    js = jobset(rjob("leader", 1), rjob("worker", 1), rjob("worker", 1), rjob("worker", 1))
    dups = [(e.field, e.message) for e in validate_create(js) if "Duplicate" in e.message]
    assert dups == [("spec.replicatedJobs[2]", 'Duplicate value: {"name":"worker"}')]
