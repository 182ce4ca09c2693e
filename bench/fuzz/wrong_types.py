"""Wrong JSON types at the fields the decider reads of an observed object (issue 27).

Every observed object reaches the decider's one check (decider_api/observed_shape.py) by some
road; these mutations put a value of another JSON type at one field of its metadata, spec or
status that the check (and then the core) reads, for the object's kind, creating the field's
parents when they are missing. What the server must answer is INVALID_ARGUMENT naming the
field (the webhook: a denial), never INTERNAL: a blind mutation rarely lands exactly there.
"""

from __future__ import annotations

import random
import re
from typing import Any

# Values of every JSON type: whichever the field wants, most of them are wrong.
WRONG = (1, -1, 0, 2**31, 2**40, -(2**63) - 1, 1.5, True, False, "x", "", "1", [], [1], [None],
         ["x"], {}, {"x": 1}, {"": None}, None)

META = ("metadata", "metadata.name", "metadata.namespace", "metadata.uid",
        "metadata.generateName", "metadata.resourceVersion", "metadata.creationTimestamp",
        "metadata.deletionTimestamp", "metadata.generation", "metadata.labels",
        "metadata.labels[jobset.sigs.k8s.io/jobset-name]", "metadata.annotations",
        "metadata.annotations[jobset.sigs.k8s.io/in-place-restart-attempt]",
        "metadata.ownerReferences", "metadata.ownerReferences[0]",
        "metadata.ownerReferences[0].uid", "metadata.ownerReferences[0].controller",
        "metadata.ownerReferences[0].apiVersion", "metadata.ownerReferences[0].kind",
        "metadata.ownerReferences[0].name", "metadata.ownerReferences[0].blockOwnerDeletion",
        "metadata.finalizers", "metadata.finalizers[0]", "apiVersion", "kind")
CONDITIONS = ("status", "status.conditions", "status.conditions[0]", "status.conditions[0].type",
              "status.conditions[0].status", "status.conditions[0].reason",
              "status.conditions[0].message", "status.conditions[0].lastTransitionTime",
              "status.conditions[0].observedGeneration")
_TEMPLATE = "spec.template"
BY_KIND = {
    "Job": ("spec", "spec.suspend", "spec.parallelism", "spec.completions", _TEMPLATE,
            f"{_TEMPLATE}.metadata", f"{_TEMPLATE}.metadata.labels",
            f"{_TEMPLATE}.metadata.annotations", f"{_TEMPLATE}.spec",
            f"{_TEMPLATE}.spec.nodeSelector", f"{_TEMPLATE}.spec.nodeSelector[x]",
            f"{_TEMPLATE}.spec.tolerations", f"{_TEMPLATE}.spec.tolerations[0]",
            f"{_TEMPLATE}.spec.tolerations[0].key",
            f"{_TEMPLATE}.spec.tolerations[0].tolerationSeconds",
            f"{_TEMPLATE}.spec.schedulingGates", f"{_TEMPLATE}.spec.schedulingGates[0].name",
            f"{_TEMPLATE}.spec.schedulingGroup",
            f"{_TEMPLATE}.spec.schedulingGroup.podGroupName", f"{_TEMPLATE}.spec.containers",
            f"{_TEMPLATE}.spec.containers[0]", f"{_TEMPLATE}.spec.initContainers",
            "status.active", "status.ready", "status.succeeded", "status.failed",
            "status.startTime"),
    "Pod": ("status.phase", "status.containerStatuses", "status.containerStatuses[0]",
            "status.containerStatuses[0].restartCount", "status.initContainerStatuses"),
    "Service": ("spec", "spec.ports", "spec.ports[0]", "spec.ports[0].name",
                "spec.ports[0].port", "spec.ports[0].targetPort", "spec.ports[0].protocol",
                "spec.clusterIP"),
    "JobSet": ("status.restarts", "status.restartsCountTowardsMax", "status.terminalState",
               "status.startTime", "status.previousInPlaceRestartAttempt",
               "status.currentInPlaceRestartAttempt", "status.replicatedJobsStatus",
               "status.replicatedJobsStatus[0]", "status.replicatedJobsStatus[0].name",
               "status.replicatedJobsStatus[0].ready", "status.replicatedJobsStatus[0].active",
               "status.replicatedJobsStatus[0].jobRestarts",
               "status.replicatedJobsStatus[0].jobRestarts[0]", "spec"),
    "Workload": ("spec",), "PodGroup": ("spec",), "CompositePodGroup": ("spec",),
}
_PART = re.compile(r"[^.\[\]]+|\[[^\]]+\]")


def _step(node: Any, key: str | int, make: Any) -> Any:
    """node[key], made (`make()`) when it is missing or not a container to go into."""
    if isinstance(node, dict):
        if not isinstance(node.get(key), dict | list):
            node[key] = make()
        return node[key]
    assert isinstance(key, int)
    while len(node) <= key:
        node.append(make())
    if not isinstance(node[key], dict | list):
        node[key] = make()
    return node[key]


def force(doc: dict[str, Any], path: str, value: Any) -> None:
    """Put `value` at `path` (`a.b[0].c`, `m[label/key]`), making its parents as needed."""
    parts: list[str | int] = []
    for part in _PART.findall(path):
        inner = part[1:-1] if part.startswith("[") else part
        parts.append(int(inner) if part.startswith("[") and inner.isdigit() else inner)
    node: Any = doc
    for key, nxt in zip(parts, parts[1:], strict=False):
        node = _step(node, key, list if isinstance(nxt, int) else dict)
    last = parts[-1]
    if isinstance(node, list):
        assert isinstance(last, int)
        while len(node) <= last:
            node.append({})
        node[last] = value
    else:
        node[last] = value


def fields_of(obj: Any) -> tuple[str, ...]:
    kind = obj.get("kind") if isinstance(obj, dict) else None
    return META + CONDITIONS + BY_KIND.get(kind if isinstance(kind, str) else "", ())


def wrong_type(obj: Any, rng: random.Random) -> None:
    """One field the decider reads of `obj`, set to a value of a (most likely) wrong type."""
    if not isinstance(obj, dict):
        return
    kind = obj.get("kind")
    # Metadata half the time: every reader of every kind goes through it.
    path = rng.choice(rng.choice((META, META, CONDITIONS,
                                  BY_KIND.get(kind if isinstance(kind, str) else "", META))))
    if path.startswith("metadata.") and not isinstance(obj.get("metadata"), dict):
        obj["metadata"] = {}
    try:
        force(obj, path, rng.choice(WRONG))
    except (AssertionError, TypeError):
        obj["metadata"] = rng.choice(WRONG)  # the path crossed a value made wrong before
