"""The one check of every object said to be observed, on every side of the contract.

An observed object reaches the decider by five roads: whole in a typed entry
(`objects[i].object_json`: Decide, Simulate, PlanGang, Validate), whole in `observed_json[i]`
(Decide, Simulate), as Validate's old object (`old_object_json`, and so an AdmissionReview's
`oldObject`), as the Job a Validate or the object a PlanGang asks about, and through the
summarizer (decider_api/summarize.py) of a client that sends Jobs and Pods typed. Whatever the
road, the object is checked here, once, before any reader runs: its metadata (name, namespace,
uid, labels, annotations, ownerReferences, deletionTimestamp, finalizers...) and the parts of
its spec and status that the decider reads, against the JSON types the Kubernetes API gives
them. A wrong type is an ObservationError naming the field's path in the request (the server
answers it INVALID_ARGUMENT, decider/contract/convert.py `observed`); the summarizer and the
readers of the decider's core then take those types as given and check nothing again.

It imports nothing of the decider: a client may import it.

What is checked is the type, never a value the API server would store: a negative counter in
a status, an annotation that is not a number, a label of another JobSet are what a cluster can
hold, and the core reconciles them as upstream does (docs/decisions.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class ObservationError(ValueError):
    """An object could not be turned into a request; `field` names where."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}" if field else message)

_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)
_KINDS = {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
          int: "an integer"}


def _got(value: Any) -> str:
    return type(value).__name__


def _want(value: Any, path: str, kind: type) -> None:
    # JSON true is not the integer 1 here, as it is not to Go's decoder.
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ObservationError(path, f"must be {_KINDS[kind]}, got {_got(value)}")


def _int(value: Any, path: str, bounds: tuple[int, int] = _INT32) -> None:
    if value is None:
        return
    _want(value, path, int)
    if not bounds[0] <= value <= bounds[1]:
        bits = 32 if bounds == _INT32 else 64
        raise ObservationError(path, f"must be a {bits}-bit integer (from {bounds[0]} to "
                                    f"{bounds[1]}), got {value}")


def _str(value: Any, path: str) -> None:
    if value is not None:
        _want(value, path, str)


def _bool(value: Any, path: str) -> None:
    if value is not None:
        _want(value, path, bool)


def _map(value: Any, path: str) -> dict[str, Any]:
    if value is None:
        return {}
    _want(value, path, dict)
    return value


def _list(value: Any, path: str) -> list[Any]:
    if value is None:
        return []
    _want(value, path, list)
    return value


def _str_map(value: Any, path: str) -> None:
    for key, item in _map(value, path).items():
        # A null value in a map[string]string decodes to "" in Go; only other types are wrong.
        if item is not None and not isinstance(item, str):
            raise ObservationError(f"{path}[{key}]", f"must be a string, got {_got(item)}")


def _entries(value: Any, path: str) -> list[tuple[dict[str, Any], str]]:
    """The objects of a list of objects, each with its path; a null entry is not an object."""
    out = []
    for i, item in enumerate(_list(value, path)):
        where = f"{path}[{i}]"
        if item is None:
            raise ObservationError(where, "must be an object, got null")
        out.append((_map(item, where), where))
    return out


def _fields(obj: dict[str, Any], path: str, check: Callable[[Any, str], None],
            *keys: str) -> None:
    for key in keys:
        check(obj.get(key), f"{path}.{key}")


# --- metadata and conditions: every kind --------------------------------------------------------

def _metadata(meta: dict[str, Any], path: str) -> None:
    """ObjectMeta: the fields any reader of the decider (or of the client) looks at."""
    _fields(meta, path, _str, "name", "generateName", "namespace", "uid", "resourceVersion",
            "creationTimestamp", "deletionTimestamp")
    _fields(meta, path, lambda v, p: _int(v, p, _INT64), "generation",
            "deletionGracePeriodSeconds")
    _str_map(meta.get("labels"), f"{path}.labels")
    _str_map(meta.get("annotations"), f"{path}.annotations")
    for ref, where in _entries(meta.get("ownerReferences"), f"{path}.ownerReferences"):
        _fields(ref, where, _str, "apiVersion", "kind", "name", "uid")
        _fields(ref, where, _bool, "controller", "blockOwnerDeletion")
    for i, finalizer in enumerate(_list(meta.get("finalizers"), f"{path}.finalizers")):
        _str(finalizer, f"{path}.finalizers[{i}]")


def _conditions(status: dict[str, Any], path: str) -> None:
    """metav1.Condition and the conditions of the built-in kinds: strings throughout."""
    for cond, where in _entries(status.get("conditions"), f"{path}.conditions"):
        _fields(cond, where, _str, "type", "status", "reason", "message",
                "lastTransitionTime", "lastProbeTime", "lastUpdateTime")
        _int(cond.get("observedGeneration"), f"{where}.observedGeneration", _INT64)


# --- what the core reads of each kind -------------------------------------------------------------

def _pod_template(template: dict[str, Any], path: str) -> None:
    """A Job's pod template: what the summarizer keeps of it (summarize._pod_template) and the
    containers a resume rewrites."""
    _metadata(_map(template.get("metadata"), f"{path}.metadata"), f"{path}.metadata")
    spec = _map(template.get("spec"), f"{path}.spec")
    _str_map(spec.get("nodeSelector"), f"{path}.spec.nodeSelector")
    for tol, where in _entries(spec.get("tolerations"), f"{path}.spec.tolerations"):
        _fields(tol, where, _str, "key", "operator", "value", "effect")
        # int64 in the Kubernetes API.
        _int(tol.get("tolerationSeconds"), f"{where}.tolerationSeconds", _INT64)
    for gate, where in _entries(spec.get("schedulingGates"), f"{path}.spec.schedulingGates"):
        _str(gate.get("name"), f"{where}.name")
    group = _map(spec.get("schedulingGroup"), f"{path}.spec.schedulingGroup")
    _str(group.get("podGroupName"), f"{path}.spec.schedulingGroup.podGroupName")
    for key in ("containers", "initContainers"):
        _entries(spec.get(key), f"{path}.spec.{key}")


def _job(spec: dict[str, Any], status: dict[str, Any], path: str) -> None:
    _bool(spec.get("suspend"), f"{path}.spec.suspend")
    _fields(spec, f"{path}.spec", _int, "parallelism", "completions", "backoffLimit")
    _pod_template(_map(spec.get("template"), f"{path}.spec.template"), f"{path}.spec.template")
    _fields(status, f"{path}.status", _int, "active", "ready", "succeeded", "failed",
            "terminating")
    _fields(status, f"{path}.status", _str, "startTime", "completionTime")


def _pod(spec: dict[str, Any], status: dict[str, Any], path: str) -> None:
    _str(status.get("phase"), f"{path}.status.phase")
    for key in ("initContainerStatuses", "containerStatuses"):
        for cs, where in _entries(status.get(key), f"{path}.status.{key}"):
            _str(cs.get("name"), f"{where}.name")
            _int(cs.get("restartCount"), f"{where}.restartCount")


def _service(spec: dict[str, Any], status: dict[str, Any], path: str) -> None:
    _fields(spec, f"{path}.spec", _str, "clusterIP", "type")
    for port, where in _entries(spec.get("ports"), f"{path}.spec.ports"):
        _fields(port, where, _str, "name", "protocol", "appProtocol")
        _fields(port, where, _int, "port", "nodePort")
        target = port.get("targetPort")
        if target is not None and not isinstance(target, str):
            # IntOrString: an integer or a string, nothing else.
            _int(target, f"{where}.targetPort")


def _gang(spec: dict[str, Any], status: dict[str, Any], path: str) -> None:
    """Workloads, PodGroups, CompositePodGroups (and their Volcano and scheduler-plugins
    kin): the core reads their metadata and status conditions (checked for every kind) and
    compares their spec with its own, where a value of another type is drift, not an error."""


def _jobset(spec: dict[str, Any], status: dict[str, Any], path: str) -> None:
    """A stored JobSet (Validate's old object): the status the admission rules read. Counters
    are int32s of any sign: the CRD sets no minimum on them (docs/decisions.md)."""
    where = f"{path}.status"
    _fields(status, where, _int, "restarts", "restartsCountTowardsMax",
            "previousInPlaceRestartAttempt", "currentInPlaceRestartAttempt")
    _fields(status, where, _str, "terminalState", "startTime")
    for rjs, rpath in _entries(status.get("replicatedJobsStatus"),
                               f"{where}.replicatedJobsStatus"):
        _str(rjs.get("name"), f"{rpath}.name")
        _fields(rjs, rpath, _int, "ready", "succeeded", "failed", "active", "suspended")
        for key in ("jobRestarts", "jobRestartsCountTowardsMax"):
            for j, value in enumerate(_list(rjs.get(key), f"{rpath}.{key}")):
                _int(value, f"{rpath}.{key}[{j}]")


_BY_KIND: dict[str, Callable[[dict[str, Any], dict[str, Any], str], None]] = {
    "Job": _job, "Pod": _pod, "Service": _service, "JobSet": _jobset,
    "Workload": _gang, "PodGroup": _gang, "CompositePodGroup": _gang,
}


def check_observed(obj: Any, path: str, kind: str = "") -> dict[str, Any]:
    """`obj` (the request's field `path`) if its metadata, spec and status have the types the
    Kubernetes API gives them where the decider reads them; ObservationError naming the first
    field that has not. kind: the kind a typed entry declares, for an object that names none.
    An empty `path` names the fields by their paths in the object alone (`metadata.name`), as
    the subject of a Validate is named."""
    if not path:
        try:
            return check_observed(obj, ".", kind)
        except ObservationError as exc:
            raise ObservationError(exc.field.lstrip("."), exc.message) from None
    _want(obj, path, dict)
    _fields(obj, path, _str, "apiVersion", "kind")
    _metadata(_map(obj.get("metadata"), f"{path}.metadata"), f"{path}.metadata")
    spec = _map(obj.get("spec"), f"{path}.spec")
    status = _map(obj.get("status"), f"{path}.status")
    _conditions(status, f"{path}.status")
    reader = _BY_KIND.get(obj.get("kind") or kind)
    if reader is not None:
        reader(spec, status, path)
    return obj


__all__ = ["ObservationError", "check_observed"]
