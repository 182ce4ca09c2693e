"""The CRD's structural schema, as far as JobSet's own fields go: types, required fields,
enums, minimums, maxItems, list-map keys and list-set items; plus the type meta and object meta
checks the API server applies to every custom resource.

The spec's JSON types are checked at every level, pod templates included, by types.py with the
API server's wording; the nodes here model the embedded batch/v1 Job template only where JobSet
itself reads it (counts, completion mode, pod metadata, scheduling fields, volumes and mounts),
and down to every list the CRD marks x-kubernetes-list-type map or set: the API server enforces
those lists' uniqueness on the JobSet itself (apiextensions' listtype validation), so a
duplicate there is refused at admission, not when the Job is created. The rules of the Job's
other values are the Job API's business. Which fields exist at all, down to the last pod
field, is crd.py's (strict decoding), from the full schema generated from upstream's CRD.

Messages follow apimachinery's wording where it has one ("Required value", "must have at most
5 items", `unsupported value "X": supported values: ...`); the type errors of this module's
nodes say what was expected, and are reported only for metadata (types.py has the spec's).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from decider.core import constants as c
from decider.core import k8s_names
from decider.core.admission import types
from decider.core.admission._util import (
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    byte_len,
    go_json,
    is_int,
    quote,
)
from decider.core.errors import FieldError


@dataclass(frozen=True, slots=True)
class Str:
    enum: tuple[str, ...] = ()
    max_length: int | None = None


@dataclass(frozen=True, slots=True)
class Int:
    minimum: int | None = None
    bits: int = 32


@dataclass(frozen=True, slots=True)
class Bool:
    pass


@dataclass(frozen=True, slots=True)
class StrMap:
    """map[string]string (labels, annotations, nodeSelector)."""


@dataclass(frozen=True, slots=True)
class Obj:
    props: Mapping[str, Node] = field(default_factory=dict)
    required: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Arr:
    items: Node
    max_items: int | None = None
    # x-kubernetes-list-type: map: the x-kubernetes-list-map-keys, in the CRD's order; the
    # combination of their values must be unique across the items.
    map_keys: tuple[str, ...] = ()
    # x-kubernetes-list-type: set: no item may appear twice.
    unique: bool = False
    min_items: int | None = None


Node = Str | Int | Bool | StrMap | Obj | Arr

_TYPE_MESSAGES: dict[type, str] = {
    Str: "must be a string",
    Int: "must be an integer",
    Bool: "must be a boolean",
    StrMap: "must be an object",
    Obj: "must be an object",
    Arr: "must be a list",
}
_TYPE_TEXTS = frozenset(_TYPE_MESSAGES.values())


def unsupported(value: str, allowed: tuple[str, ...]) -> str:
    return f"unsupported value {quote(value)}: supported values: " + ", ".join(
        quote(a) for a in allowed
    )


def _check(value: Any, node: Node, path: str, errs: list[FieldError]) -> None:
    """Append the errors of one value against one schema node. None means absent: nulls are
    pruned before validation, and required-ness is the parent object's check."""
    if value is None:
        return
    if isinstance(node, Str):
        if not isinstance(value, str):
            errs.append(FieldError(path, _TYPE_MESSAGES[Str]))
        elif node.enum and value not in node.enum:
            errs.append(FieldError(path, unsupported(value, node.enum)))
        elif node.max_length is not None and byte_len(value) > node.max_length:
            errs.append(FieldError(path, f"Too long: may not be more than {node.max_length} "
                                         "bytes"))
    elif isinstance(node, Int):
        if not is_int(value):
            errs.append(FieldError(path, _TYPE_MESSAGES[Int]))
            return
        lo, hi = (INT32_MIN, INT32_MAX) if node.bits == 32 else (INT64_MIN, INT64_MAX)
        if not lo <= value <= hi:
            # The webhook decodes into Go int32/int: an out-of-range number fails there.
            errs.append(FieldError(path, f"must be a {node.bits}-bit integer (from {lo} to {hi})"))
        elif node.minimum is not None and value < node.minimum:
            errs.append(FieldError(path, f"must be greater than or equal to {node.minimum}"))
    elif isinstance(node, Bool):
        if not isinstance(value, bool):
            errs.append(FieldError(path, _TYPE_MESSAGES[Bool]))
    elif isinstance(node, StrMap):
        if not isinstance(value, dict):
            errs.append(FieldError(path, _TYPE_MESSAGES[StrMap]))
            return
        for key, item in value.items():
            if not isinstance(item, str):
                errs.append(FieldError(f"{path}[{key}]", _TYPE_MESSAGES[Str]))
    elif isinstance(node, Obj):
        if not isinstance(value, dict):
            errs.append(FieldError(path, _TYPE_MESSAGES[Obj]))
            return
        for name in node.required:
            if value.get(name) is None:
                errs.append(FieldError(f"{path}.{name}", "Required value"))
        for name, sub in node.props.items():
            _check(value.get(name), sub, f"{path}.{name}", errs)
    elif isinstance(node, Arr):
        _check_array(value, node, path, errs)


def _check_array(value: Any, node: Arr, path: str, errs: list[FieldError]) -> None:
    if not isinstance(value, list):
        errs.append(FieldError(path, _TYPE_MESSAGES[Arr]))
        return
    if node.max_items is not None and len(value) > node.max_items:
        errs.append(FieldError(path, f"must have at most {node.max_items} items"))
    if node.min_items is not None and len(value) < node.min_items:
        errs.append(FieldError(path, f"{path} in body should have at least {node.min_items} "
                                     "items"))
    # The API server reports schema and list-type errors together; each duplicate follows its
    # item's own errors, as the single-key check always has.
    duplicates = _duplicates(value, node)
    for index, item in enumerate(value):
        item_path = f"{path}[{index}]"
        if item is None:
            # A null list item is not pruned; it is simply not of the item type.
            errs.append(FieldError(item_path, _TYPE_MESSAGES[type(node.items)]))
        else:
            _check(item, node.items, item_path, errs)
        if index in duplicates:
            errs.append(FieldError(item_path, f"Duplicate value: {duplicates[index]}"))


def _duplicates(items: list[Any], node: Arr) -> dict[int, str]:
    """apiextensions' listtype validation of one list: index -> the duplicate value as the
    API server shows it. Each repeated key (set: item) is reported once, at its second
    occurrence. A list map's key is the object of the key fields an item has (an absent key, or
    a null item, counts as unspecified), shown as json.Marshal writes it: keys sorted. Nulls
    are pruned and defaults applied before (ports' protocol TCP), so what is compared is what
    the API server compares."""
    identities: list[tuple[str, str]] = []
    shown: list[str] = []
    if node.map_keys:
        if any(item is not None and not isinstance(item, dict) for item in items):
            # validateListMap refuses a list with a non-object item outright and compares no
            # keys; the item's own type error says what is wrong with it.
            return {}
        for item in items:
            key = {k: item[k] for k in node.map_keys if k in item} if item else {}
            shown.append(go_json(_go_numbers(key)))
            if len(node.map_keys) > 1:
                # Several keys: the key objects themselves are compared (as JSON).
                identities.append(_identity(key))
            elif key:
                # One key: its value alone is compared.
                identities.append(_identity(next(iter(key.values()))))
            else:
                identities.append(("unspecified", ""))
    elif node.unique:
        for item in items:
            identities.append(_identity(item))
            # field.Error prints a string with %q, another scalar with %v, the rest as JSON.
            shown.append(quote(item) if isinstance(item, str) else go_json(_go_numbers(item)))
    counts: dict[tuple[str, str], int] = {}
    out: dict[int, str] = {}
    for index, identity in enumerate(identities):
        counts[identity] = counts.get(identity, 0) + 1
        if counts[identity] == 2:
            out[index] = shown[index]
    return out


def _identity(value: Any) -> tuple[str, str]:
    """What validateListSet compares: objects and lists by their json.Marshal text (80.0 is
    written 80), scalars by Go equality, which tells int64 80 from float64 80 and a string
    from a number, as the JSON text of the Python value does."""
    if isinstance(value, dict | list):
        return ("compound", go_json(_go_numbers(value)))
    return ("scalar", go_json(value))


def _go_numbers(value: Any) -> Any:
    """value with integral floats as ints: Go prints a float64 80 as 80, Python as 80.0."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return int(value)
    if isinstance(value, dict):
        return {k: _go_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_go_numbers(v) for v in value]
    return value


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
            errs.append(FieldError(key, _TYPE_MESSAGES[Str]))
        elif value != expected:
            errs.append(FieldError(key, unsupported(value, (expected,))))
    return errs


def _object_meta_errors(meta: Any) -> list[FieldError]:
    """The API server's generic ObjectMeta checks that matter for a JobSet."""
    errs: list[FieldError] = []
    if meta is None:
        meta = {}
    _check(meta, _META, "metadata", errs)
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
    _check(spec, SPEC, "spec", spec_errs)
    errs.extend(e for e in spec_errs if e.message not in _TYPE_TEXTS)
    return errs
