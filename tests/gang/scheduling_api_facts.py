"""What kubernetes/api says the scheduling objects may hold, as data.

Read from kubernetes/api at 10b39a39bcee995dfe7cd5e8e7b922be5e46f1e2 (HEAD of master when
read, tagged v0.37.0-beta.0; no v0.37.0 tag exists yet), files scheduling/v1beta1/types.go
(Workload, PodGroup) and scheduling/v1alpha3/types.go (CompositePodGroup, and the Workload*
building blocks a controller embeds in its own API), and OwnerReference from
kubernetes/apimachinery pkg/apis/meta/v1/types.go (v0.36.3; unchanged since). Written down
here in this project's own structure: per Go struct, each field by its JSON name with

- ``type``: ``string``, ``int32``, the name of another struct here, or ``[]`` + one of those;
- ``required``: the field carries ``+required`` (``+k8s:required``): present, not null, and a
  string not empty;
- ``nullable``: the Go field is a pointer or a slice, so JSON null means unset;
- ``max_items``, ``minimum``, ``maximum``, ``fmt`` (``+k8s:format``), ``enum`` (a
  ``+k8s:enum`` string type), ``list_map_key`` (``+listType=map`` ``+listMapKey``);
- ``gate``: the Kubernetes feature gate that must be on for the API server to accept it.

and per struct the one-of rules its comments and markers state (``+union`` / ``+k8s:unionMember``
as "exactly one", the composite template's "at least one"). Field order and protobuf tags are
left out: JSON has no order, and the decider never speaks protobuf to the API server.
"""

from __future__ import annotations

from dataclasses import dataclass, field

SOURCE = ("kubernetes/api@10b39a39bcee995dfe7cd5e8e7b922be5e46f1e2 (v0.37.0-beta.0) "
          "scheduling/v1beta1/types.go, scheduling/v1alpha3/types.go")
V1BETA1 = "scheduling.k8s.io/v1beta1"
V1ALPHA3 = "scheduling.k8s.io/v1alpha3"

# Constants the files declare.
WORKLOAD_MAX_POD_GROUP_TEMPLATES = 8
WORKLOAD_MAX_TREE_DEPTH = 4
MAX_POD_GROUP_RESOURCE_CLAIMS = 4
HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000

# PreemptionPolicy (+enum, +k8s:enum): PreemptLowerPriority, Never.
ENUMS: dict[str, frozenset[str]] = {
    "PreemptionPolicy": frozenset({"PreemptLowerPriority", "Never"}),
}


@dataclass(frozen=True)
class F:
    type: str
    required: bool = False
    nullable: bool = False
    max_items: int | None = None
    minimum: int | None = None
    maximum: int | None = None
    fmt: str | None = None
    enum: str | None = None
    list_map_key: str | None = None
    gate: str | None = None


@dataclass(frozen=True)
class Struct:
    fields: dict[str, F]
    exactly_one: tuple[str, ...] = ()
    at_least_one: tuple[str, ...] = ()
    # Fields that are required once another is set (+k8s:dependentRequired).
    depends: dict[str, str] = field(default_factory=dict)


def _opt_ptr(t: str, **kw: object) -> F:
    return F(t, nullable=True, **kw)  # type: ignore[arg-type]


_PRIORITY_FIELDS = {
    "priorityClassName": F("string", fmt="long-name"),
    "priority": _opt_ptr("int32", maximum=HIGHEST_USER_DEFINABLE_PRIORITY),
    "preemptionPolicy": _opt_ptr("string", enum="PreemptionPolicy",
                                 gate="PodGroupPreemptionPolicy"),
}
_CLAIMS = _opt_ptr("[]PodGroupResourceClaim", max_items=MAX_POD_GROUP_RESOURCE_CLAIMS,
                   list_map_key="name", gate="DRAWorkloadResourceClaims")

# Structs both files declare alike (compared line by line when read).
_SHARED: dict[str, Struct] = {
    "TypedLocalObjectReference": Struct({
        "apiGroup": F("string", fmt="long-name"),
        "kind": F("string", required=True, fmt="path-segment"),
        "name": F("string", required=True, fmt="path-segment"),
    }),
    "PodGroupSchedulingPolicy": Struct({
        "basic": _opt_ptr("BasicSchedulingPolicy"),
        "gang": _opt_ptr("GangSchedulingPolicy"),
    }, exactly_one=("basic", "gang")),
    "BasicSchedulingPolicy": Struct({}),
    "GangSchedulingPolicy": Struct({"minCount": F("int32", required=True, minimum=1)}),
    "PodGroupResourceClaim": Struct({
        "name": F("string", required=True, fmt="short-name"),
        "resourceClaimName": _opt_ptr("string", fmt="long-name"),
        "resourceClaimTemplateName": _opt_ptr("string", fmt="long-name"),
    }, exactly_one=("resourceClaimName", "resourceClaimTemplateName")),
    "DisruptionMode": Struct({
        "single": _opt_ptr("SingleDisruptionMode"),
        "all": _opt_ptr("AllDisruptionMode"),
    }, exactly_one=("single", "all")),
    "SingleDisruptionMode": Struct({}),
    "AllDisruptionMode": Struct({}),
    "WorkloadReference": Struct({
        "workloadName": F("string", required=True, fmt="long-name"),
        "templateName": F("string", required=True, fmt="short-name"),
    }),
    "PodGroupSchedulingConstraints": Struct({
        "topology": _opt_ptr("[]TopologyConstraint", max_items=1),
    }),
    "TopologyConstraint": Struct({"key": F("string", required=True, fmt="label-key")}),
    "CompositePodGroupSchedulingPolicy": Struct({
        "basic": _opt_ptr("CompositeBasicSchedulingPolicy"),
        "gang": _opt_ptr("CompositeGangSchedulingPolicy"),
    }, exactly_one=("basic", "gang")),
    "CompositeBasicSchedulingPolicy": Struct({}),
    "CompositeGangSchedulingPolicy": Struct({
        "minGroupCount": F("int32", required=True, minimum=1)}),
    "CompositeDisruptionMode": Struct({
        "single": _opt_ptr("SingleCompositeDisruptionMode"),
        "all": _opt_ptr("AllCompositeDisruptionMode"),
    }, exactly_one=("single", "all")),
    "SingleCompositeDisruptionMode": Struct({}),
    "AllCompositeDisruptionMode": Struct({}),
    "CompositePodGroupSchedulingConstraints": Struct({
        "topology": _opt_ptr("[]TopologyConstraint", max_items=1),
    }),
    "PodGroupTemplate": Struct({
        "name": F("string", required=True, fmt="short-name"),
        "schedulingPolicy": F("PodGroupSchedulingPolicy", required=True),
        # The only pointer of these without omitempty: Go writes it as null when unset.
        "schedulingConstraints": _opt_ptr("PodGroupSchedulingConstraints",
                                          gate="TopologyAwareWorkloadScheduling"),
        "resourceClaims": _CLAIMS,
        "disruptionMode": _opt_ptr("DisruptionMode"),
        **_PRIORITY_FIELDS,
    }),
    "CompositePodGroupTemplate": Struct({
        "name": F("string", required=True, fmt="short-name"),
        "schedulingPolicy": F("CompositePodGroupSchedulingPolicy", required=True),
        "schedulingConstraints": _opt_ptr("CompositePodGroupSchedulingConstraints"),
        "disruptionMode": _opt_ptr("CompositeDisruptionMode"),
        **_PRIORITY_FIELDS,
        "podGroupTemplates": _opt_ptr("[]PodGroupTemplate",
                                      max_items=WORKLOAD_MAX_POD_GROUP_TEMPLATES,
                                      list_map_key="name"),
        "compositePodGroupTemplates": _opt_ptr("[]CompositePodGroupTemplate",
                                               max_items=WORKLOAD_MAX_POD_GROUP_TEMPLATES,
                                               list_map_key="name"),
    }, at_least_one=("podGroupTemplates", "compositePodGroupTemplates")),
    "WorkloadSpec": Struct({
        "controllerRef": _opt_ptr("TypedLocalObjectReference"),
        # json:"podGroupTemplates" (no omitempty), yet +optional and a union member.
        "podGroupTemplates": _opt_ptr("[]PodGroupTemplate",
                                      max_items=WORKLOAD_MAX_POD_GROUP_TEMPLATES,
                                      list_map_key="name"),
        "compositePodGroupTemplates": _opt_ptr("[]CompositePodGroupTemplate",
                                               max_items=WORKLOAD_MAX_POD_GROUP_TEMPLATES,
                                               list_map_key="name", gate="CompositePodGroup"),
    }, exactly_one=("podGroupTemplates", "compositePodGroupTemplates")),
    "PodGroupSpec": Struct({
        "parentCompositePodGroupName": _opt_ptr("string", fmt="long-name",
                                                gate="CompositePodGroup"),
        "workloadRef": _opt_ptr("WorkloadReference"),
        "schedulingPolicy": F("PodGroupSchedulingPolicy", required=True),
        "schedulingConstraints": _opt_ptr("PodGroupSchedulingConstraints",
                                          gate="TopologyAwareWorkloadScheduling"),
        "resourceClaims": _CLAIMS,
        "disruptionMode": _opt_ptr("DisruptionMode"),
        **_PRIORITY_FIELDS,
    }, depends={"parentCompositePodGroupName": "workloadRef"}),
    # Objects: metadata (ObjectMeta), spec (+required), status (+optional; the decider never
    # writes a status, so it is not described further).
    "Workload": Struct({"metadata": F("ObjectMeta"), "spec": F("WorkloadSpec", required=True)}),
    "PodGroup": Struct({"metadata": F("ObjectMeta"), "spec": F("PodGroupSpec", required=True)}),
    # apimachinery: the parts of ObjectMeta the decider writes, and OwnerReference whole.
    "ObjectMeta": Struct({
        "name": F("string", fmt="long-name"),
        "namespace": F("string", fmt="short-name"),
        "labels": _opt_ptr("map"),
        "annotations": _opt_ptr("map"),
        "ownerReferences": _opt_ptr("[]OwnerReference"),
    }),
    "OwnerReference": Struct({
        "apiVersion": F("string", required=True),
        "kind": F("string", required=True),
        "name": F("string", required=True),
        "uid": F("string", required=True),
        "controller": _opt_ptr("bool"),
        "blockOwnerDeletion": _opt_ptr("bool"),
    }),
}

V1BETA1_TYPES: dict[str, Struct] = dict(_SHARED)

V1ALPHA3_TYPES: dict[str, Struct] = {
    **_SHARED,
    "CompositePodGroup": Struct({
        "metadata": F("ObjectMeta"),
        "spec": F("CompositePodGroupSpec", required=True),
    }),
    "CompositePodGroupSpec": Struct({
        "parentCompositePodGroupName": _opt_ptr("string", fmt="long-name"),
        # A pointer, yet +required and json:"workloadRef" without omitempty.
        "workloadRef": F("WorkloadReference", required=True, nullable=True),
        "schedulingPolicy": F("CompositePodGroupSchedulingPolicy", required=True),
        "schedulingConstraints": _opt_ptr("CompositePodGroupSchedulingConstraints"),
        "disruptionMode": _opt_ptr("CompositeDisruptionMode"),
        **_PRIORITY_FIELDS,
    }),
    # The building blocks (v1alpha3 only) a controller embeds in its own API: what upstream's
    # JobSet spec.scheduling (types@51c2c13c) is made of.
    "WorkloadPodGroupSchedulingPolicy": Struct({
        "basic": _opt_ptr("WorkloadPodGroupBasicSchedulingPolicy"),
        "gang": _opt_ptr("WorkloadPodGroupGangSchedulingPolicy"),
    }, exactly_one=("basic", "gang")),
    "WorkloadPodGroupBasicSchedulingPolicy": Struct({}),
    "WorkloadPodGroupGangSchedulingPolicy": Struct({
        "minCount": _opt_ptr("int32", minimum=1)}),
    "WorkloadPodGroupSchedulingConstraints": Struct({
        "topology": _opt_ptr("[]TopologyConstraint", max_items=1)}),
    "WorkloadPodGroupResourceClaim": Struct({
        "name": F("string", required=True, fmt="short-name"),
        "resourceClaimName": _opt_ptr("string", fmt="long-name"),
        "resourceClaimTemplateName": _opt_ptr("string", fmt="long-name"),
    }, exactly_one=("resourceClaimName", "resourceClaimTemplateName")),
    "WorkloadPodGroupDisruptionMode": Struct({
        "single": _opt_ptr("WorkloadPodGroupSingleDisruptionMode"),
        "all": _opt_ptr("WorkloadPodGroupAllDisruptionMode"),
    }, exactly_one=("single", "all")),
    "WorkloadPodGroupSingleDisruptionMode": Struct({}),
    "WorkloadPodGroupAllDisruptionMode": Struct({}),
    "WorkloadCompositePodGroupSchedulingPolicy": Struct({
        "basic": _opt_ptr("WorkloadCompositePodGroupBasicSchedulingPolicy"),
        "gang": _opt_ptr("WorkloadCompositePodGroupGangSchedulingPolicy"),
    }, exactly_one=("basic", "gang")),
    "WorkloadCompositePodGroupBasicSchedulingPolicy": Struct({}),
    "WorkloadCompositePodGroupGangSchedulingPolicy": Struct({
        "minGroupCount": _opt_ptr("int32", minimum=1)}),
    "WorkloadCompositePodGroupSchedulingConstraints": Struct({
        "topology": _opt_ptr("[]TopologyConstraint", max_items=1)}),
    "WorkloadCompositePodGroupDisruptionMode": Struct({
        "single": _opt_ptr("WorkloadCompositePodGroupSingleDisruptionMode"),
        "all": _opt_ptr("WorkloadCompositePodGroupAllDisruptionMode"),
    }, exactly_one=("single", "all")),
    "WorkloadCompositePodGroupSingleDisruptionMode": Struct({}),
    "WorkloadCompositePodGroupAllDisruptionMode": Struct({}),
}

# (apiVersion, kind) of each object the decider may emit for spec.scheduling -> its facts.
KINDS: dict[tuple[str, str], dict[str, Struct]] = {
    (V1BETA1, "Workload"): V1BETA1_TYPES,
    (V1BETA1, "PodGroup"): V1BETA1_TYPES,
    (V1ALPHA3, "CompositePodGroup"): V1ALPHA3_TYPES,
}
