"""The decider's pod sets (RPC PodSets) beside the pod sets on Kueue's Workload.

What is compared is what Kueue's JobSet integration writes on the Workload from the JobSet alone
(`PodSets()` in kueue's jobset_controller.go): the pod sets' order and names, each count, the
minCount, the topology request, and the pod template's node selector and tolerations. Resource
requests are not: Kueue's Workload carries the pod template, and what it charges the quota
also passes through the cluster's LimitRanges, RuntimeClass overheads and Kueue's resource
transformations, which the decider never sees (docs/gang.md, "Kueue view").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from google.protobuf.json_format import MessageToDict

from decider_api.v1 import decider_pb2 as pb

Obj = dict[str, Any]


def _toleration(value: Obj) -> Obj:
    """A toleration as Kubernetes means it: an empty operator is Equal, empty strings absent."""
    out: Obj = {k: value[k] for k in ("key", "value", "effect") if value.get(k)}
    out["operator"] = value.get("operator") or "Equal"
    seconds = value.get("tolerationSeconds")
    if seconds is not None:
        out["tolerationSeconds"] = int(seconds)
    return out


def decider_view(pod_set: pb.PodSet) -> Obj:
    """One decider pod set in the Workload's field names."""
    view: Obj = {"name": pod_set.name, "count": int(pod_set.count),
                 "nodeSelector": dict(pod_set.node_selector),
                 "tolerations": [_toleration({
                     "key": t.key, "operator": t.operator, "value": t.value, "effect": t.effect,
                     "tolerationSeconds": (t.toleration_seconds
                                           if t.HasField("toleration_seconds") else None)})
                     for t in pod_set.tolerations]}
    if pod_set.HasField("min_count"):
        view["minCount"] = int(pod_set.min_count)
    view["topologyRequest"] = (MessageToDict(pod_set.topology_request)
                               if pod_set.HasField("topology_request") else {})
    return view


def workload_view(pod_set: Obj) -> Obj:
    """One of the Workload's spec.podSets, reduced to what is compared."""
    spec = ((pod_set.get("template") or {}).get("spec")) or {}
    view: Obj = {"name": pod_set.get("name", ""), "count": int(pod_set.get("count") or 0),
                 "nodeSelector": dict(spec.get("nodeSelector") or {}),
                 "tolerations": [_toleration(t) for t in spec.get("tolerations") or []]}
    if pod_set.get("minCount") is not None:
        view["minCount"] = int(pod_set["minCount"])
    view["topologyRequest"] = dict(pod_set.get("topologyRequest") or {})
    return view


FIELDS = ("count", "minCount", "topologyRequest", "nodeSelector", "tolerations")


def differences(decider: Sequence[pb.PodSet], workload: Sequence[Obj]) -> list[str]:
    """Each disagreement, naming the Workload's field; empty when they agree."""
    ours = [decider_view(p) for p in decider]
    theirs = [workload_view(p) for p in workload]
    names_ours = [p["name"] for p in ours]
    names_theirs = [p["name"] for p in theirs]
    if names_ours != names_theirs:
        return [f"spec.podSets names: the Workload has {names_theirs}, "
                f"the decider {names_ours}"]
    out: list[str] = []
    for i, (mine, other) in enumerate(zip(ours, theirs, strict=True)):
        for field in FIELDS:
            a, b = other.get(field), mine.get(field)
            if a != b:
                out.append(f"spec.podSets[{i}] ({mine['name']}).{field}: the Workload has "
                           f"{_show(a)}, the decider {_show(b)}")
    return out


def _show(value: Any) -> str:
    return "none" if value is None else repr(value)
