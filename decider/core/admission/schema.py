"""A JobSet's structural schema, as far as JobSet's own fields go, and the checks of a whole
object against it: the type meta and object meta checks the API server applies to every custom
resource, then the spec.

The spec's JSON types are checked at every level, pod templates included, by types.py with the
API server's wording; the nodes here model the embedded batch/v1 Job template only where JobSet
itself reads it (counts, completion mode, pod metadata, scheduling fields, volumes and mounts),
and down to every list the CRD marks x-kubernetes-list-type map or set: the API server enforces
those lists' uniqueness on the JobSet itself (apiextensions' listtype validation), so a
duplicate there is refused at admission, not when the Job is created. The rules of the Job's
other values are the Job API's business. Which fields exist at all, down to the last pod
field, is crd.py's (strict decoding), from the full schema generated from upstream's CRD. How
each node is checked, and in what words, is structural.py's; the type errors of its nodes are
reported only for metadata here (types.py has the spec's).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from decider.core import constants as c
from decider.core import k8s_names
from decider.core.admission import types
from decider.core.admission._util import byte_len
from decider.core.admission.structural import (
    TYPE_MESSAGES,
    TYPE_TEXTS,
    Arr,
    Bool,
    Int,
    Obj,
    Str,
    StrMap,
    check,
    unsupported,
)
from decider.core.errors import FieldError

_META = Obj(
    {
        "name": Str(),
        "generateName": Str(),
        "namespace": Str(),
        "labels": StrMap(),
        "annotations": StrMap(),
        "finalizers": Arr(Str()),
    }
)
# resources.claims of a container and of the pod: ResourceClaims used, unique by name.
_RESOURCE_CLAIMS = Arr(
    Obj({"name": Str(), "request": Str()}, required=("name",)), map_keys=("name",)
)
_CONTAINER = Obj(
    {
        "name": Str(),
        "image": Str(),
        "volumeMounts": Arr(
            Obj({"name": Str(), "mountPath": Str()}, required=("mountPath", "name")),
            map_keys=("mountPath",),
        ),
        # Keyed on port and protocol: 80/TCP and 80/UDP may coexist. protocol is defaulted to
        # TCP before validation, so a port without one is the same as one saying TCP.
        "ports": Arr(
            Obj(
                {"containerPort": Int(), "protocol": Str(), "name": Str()},
                required=("containerPort",),
            ),
            map_keys=("containerPort", "protocol"),
        ),
        "env": Arr(Obj({"name": Str(), "value": Str()}, required=("name",)), map_keys=("name",)),
        "volumeDevices": Arr(
            Obj({"name": Str(), "devicePath": Str()}, required=("devicePath", "name")),
            map_keys=("devicePath",),
        ),
        "resources": Obj({"claims": _RESOURCE_CLAIMS}),
        # Walked only to reach the exit-code set; the rest is the Job API's.
        "restartPolicyRules": Arr(Obj({"exitCodes": Obj({"values": Arr(Int(), unique=True)})})),
    },
    required=("name",),
)
_POD_SPEC = Obj(
    {
        "restartPolicy": Str(),
        "nodeSelector": StrMap(),
        "tolerations": Arr(
            Obj(
                {
                    "key": Str(),
                    "operator": Str(),
                    "value": Str(),
                    "effect": Str(),
                    "tolerationSeconds": Int(bits=64),
                }
            )
        ),
        "schedulingGates": Arr(Obj({"name": Str()}, required=("name",)), map_keys=("name",)),
        "volumes": Arr(Obj({"name": Str()}, required=("name",)), map_keys=("name",)),
        "containers": Arr(_CONTAINER, map_keys=("name",)),
        "initContainers": Arr(_CONTAINER, map_keys=("name",)),
        "ephemeralContainers": Arr(_CONTAINER, map_keys=("name",)),
        "priority": Int(),
        # Keyed on both: one zone constraint may be DoNotSchedule and another ScheduleAnyway.
        "topologySpreadConstraints": Arr(
            Obj(
                {"maxSkew": Int(), "topologyKey": Str(), "whenUnsatisfiable": Str()},
                required=("maxSkew", "topologyKey", "whenUnsatisfiable"),
            ),
            map_keys=("topologyKey", "whenUnsatisfiable"),
        ),
        "hostAliases": Arr(Obj({"ip": Str()}, required=("ip",)), map_keys=("ip",)),
        # name is not required but defaulted to "": two nameless secrets are duplicates.
        "imagePullSecrets": Arr(Obj({"name": Str()}), map_keys=("name",)),
        "resourceClaims": Arr(Obj({"name": Str()}, required=("name",)), map_keys=("name",)),
        "resources": Obj({"claims": _RESOURCE_CLAIMS}),
    },
    required=("containers",),
)
_JOB_SPEC = Obj(
    {
        "parallelism": Int(),
        "completions": Int(),
        "backoffLimit": Int(),
        "backoffLimitPerIndex": Int(),
        "maxFailedIndexes": Int(),
        "activeDeadlineSeconds": Int(bits=64),
        "ttlSecondsAfterFinished": Int(),
        "completionMode": Str(),
        "podReplacementPolicy": Str(),
        "managedBy": Str(),
        "suspend": Bool(),
        "manualSelector": Bool(),
        # Walked only to reach the exit-code set; the rest is the Job API's.
        "podFailurePolicy": Obj(
            {"rules": Arr(Obj({"onExitCodes": Obj({"values": Arr(Int(), unique=True)})}))}
        ),
        "template": Obj({"metadata": _META, "spec": _POD_SPEC}),
    },
    required=("template",),
)
_REPLICATED_JOB = Obj(
    {
        "name": Str(),
        "groupName": Str(),
        "template": Obj({"metadata": _META, "spec": _JOB_SPEC}),
        "replicas": Int(minimum=0),
        "dependsOn": Arr(
            Obj({"name": Str(), "status": Str(c.DEPENDS_ON_STATUSES)}, required=("name", "status")),
            max_items=5,
            map_keys=("name",),
        ),
    },
    required=("name", "template"),
)
_FAILURE_RULE = Obj(
    {
        "name": Str(),
        "action": Str(c.FAILURE_ACTIONS),
        "onJobFailureReasons": Arr(Str()),
        "onJobFailureMessagePatterns": Arr(Str()),
        "targetReplicatedJobs": Arr(Str()),
    },
    required=("action", "name"),
)
_PVC_TEMPLATE = Obj(
    {
        "apiVersion": Str(),
        "kind": Str(),
        "metadata": _META,
        "spec": Obj(),
        # The PVC's status is in the CRD too, its conditions a list map keyed on type.
        "status": Obj(
            {
                "conditions": Arr(
                    Obj({"type": Str(), "status": Str()}, required=("status", "type")),
                    map_keys=("type",),
                )
            }
        ),
    }
)
# spec.scheduling's structural limits (tools/crd/scheduling.yaml); its unions and rules are
# CEL's and the webhook's (gang/was_rules).
_TOPOLOGY = Obj({"topology": Arr(Obj({"key": Str()}, required=("key",)))})
_COMPOSITE_POLICY = Obj({"basic": Obj(), "gang": Obj({"minGroupCount": Int()})})
_DISRUPTION = Obj({"single": Obj(), "all": Obj()})
_SCHEDULING = Obj(
    {
        "schedulingPolicy": _COMPOSITE_POLICY,
        "schedulingConstraints": _TOPOLOGY,
        "disruptionMode": _DISRUPTION,
        "replicatedJobs": Arr(
            Obj(
                {
                    "targetReplicatedJobs": Arr(Str(max_length=256), max_items=50, unique=True,
                                                min_items=1),
                    "schedulingPolicy": _COMPOSITE_POLICY,
                    "schedulingConstraints": _TOPOLOGY,
                    "disruptionMode": _DISRUPTION,
                    "job": Obj(
                        {
                            "schedulingPolicy": Obj(
                                {"basic": Obj(), "gang": Obj({"minCount": Int()})}),
                            "schedulingConstraints": _TOPOLOGY,
                            "disruptionMode": _DISRUPTION,
                            "resourceClaims": Arr(
                                Obj({"name": Str(), "resourceClaimName": Str(),
                                     "resourceClaimTemplateName": Str()}, required=("name",)),
                                max_items=4,
                            ),
                        }
                    ),
                },
                required=("targetReplicatedJobs",),
            ),
            max_items=50,
        ),
    }
)
SPEC = Obj(
    {
        "replicatedJobs": Arr(_REPLICATED_JOB, map_keys=("name",)),
        "network": Obj(
            {"enableDNSHostnames": Bool(), "subdomain": Str(), "publishNotReadyAddresses": Bool()}
        ),
        "successPolicy": Obj(
            {"operator": Str(c.OPERATORS), "targetReplicatedJobs": Arr(Str())},
            required=("operator",),
        ),
        "failurePolicy": Obj(
            {
                "maxRestarts": Int(),
                "restartStrategy": Str(c.RESTART_STRATEGIES),
                "rules": Arr(_FAILURE_RULE),
            }
        ),
        "startupPolicy": Obj(
            {"startupPolicyOrder": Str(c.STARTUP_ORDERS)}, required=("startupPolicyOrder",)
        ),
        "suspend": Bool(),
        "coordinator": Obj(
            {"replicatedJob": Str(), "jobIndex": Int(bits=64), "podIndex": Int(bits=64)},
            required=("replicatedJob",),
        ),
        "managedBy": Str(),
        "ttlSecondsAfterFinished": Int(minimum=0),
        # KEP-1186: +kubebuilder:validation:Minimum=1, whatever the gate says.
        "activeDeadlineSeconds": Int(bits=64, minimum=1),
        "volumeClaimPolicies": Arr(
            Obj(
                {
                    "templates": Arr(_PVC_TEMPLATE, max_items=50),
                    "retentionPolicy": Obj({"whenDeleted": Str(c.RETENTION_POLICIES)}),
                }
            ),
            max_items=50,
        ),
        "scheduling": _SCHEDULING,
    }
)


def _type_meta_errors(obj: dict[str, Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    for key, expected in (("apiVersion", c.API_VERSION), ("kind", c.KIND)):
        value = obj.get(key)
        if value is None:
            errs.append(FieldError(key, "Required value"))
        elif not isinstance(value, str):
            errs.append(FieldError(key, TYPE_MESSAGES[Str]))
        elif value != expected:
            errs.append(FieldError(key, unsupported(value, (expected,))))
    return errs


def _object_meta_errors(meta: Any) -> list[FieldError]:
    """The API server's generic ObjectMeta checks that matter for a JobSet."""
    errs: list[FieldError] = []
    if meta is None:
        meta = {}
    check(meta, _META, "metadata", errs)
    if errs:
        return errs
    name, generate_name = meta.get("name") or "", meta.get("generateName") or ""
    if not name and not generate_name:
        errs.append(FieldError("metadata.name", "name or generateName is required"))
    if name:
        errs.extend(FieldError("metadata.name", m) for m in k8s_names.is_dns1123_subdomain(name))
    elif generate_name:
        # apimachinery's MaskTrailingDash: a trailing '-' is allowed in a prefix, so it is
        # replaced by a letter before the prefix is validated as a name.
        prefix = generate_name
        if len(prefix) > 1 and prefix.endswith("-"):
            prefix = prefix[:-1] + "a"
        errs.extend(
            FieldError("metadata.generateName", m) for m in k8s_names.is_dns1123_subdomain(prefix)
        )
    namespace = meta.get("namespace")
    if namespace:
        errs.extend(
            FieldError("metadata.namespace", m) for m in k8s_names.is_dns1123_label(namespace)
        )
    for key, value in (meta.get("labels") or {}).items():
        # ValidateLabels names the map, not the entry, for key and value errors alike.
        errs.extend(FieldError("metadata.labels", m) for m in k8s_names.is_qualified_name(str(key)))
        errs.extend(FieldError("metadata.labels", m) for m in k8s_names.is_label_value(value))
    total = 0
    for key, value in (meta.get("annotations") or {}).items():
        # Annotation keys are checked lowercased (apimachinery ValidateAnnotations).
        errs.extend(
            FieldError("metadata.annotations", m)
            for m in k8s_names.is_qualified_name(str(key).lower())
        )
        total += byte_len(str(key)) + byte_len(value)
    if total > 256 * 1024:
        errs.append(FieldError("metadata.annotations", "may not be more than 262144 bytes"))
    return errs


def schema_errors(obj: Any, skip: Collection[str] = ()) -> list[FieldError]:
    """Structural errors of a whole JobSet object (expected already defaulted). The spec's
    types are the full schema's (types.py, the API server's wording), so this module's own
    type messages are dropped there; skip: paths another check already refused."""
    if not isinstance(obj, dict):
        return [FieldError("", "a JobSet must be a JSON object")]
    errs = _type_meta_errors(obj)
    errs.extend(_object_meta_errors(obj.get("metadata")))
    spec = obj.get("spec")
    errs.extend(types.type_errors(spec, skip))
    spec_errs: list[FieldError] = []
    check(spec, SPEC, "spec", spec_errs)
    errs.extend(e for e in spec_errs if e.message not in TYPE_TEXTS)
    return errs
