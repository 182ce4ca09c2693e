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

# Every request's objects go through here (ten thousand Jobs in one): a field's path is
# spelled out only when the field is wrong. JSON true is not the integer 1 here, as to Go; a
# mapping of a dict's own kind (an informer's cache may hand one) is an object.


def _not_int(value: Any) -> bool:
    return isinstance(value, bool) or not isinstance(value, int)


def _at(path: str, key: str | int) -> str:
    return f"{path}[{key}]" if isinstance(key, int) else f"{path}.{key}"


def _wrong(path: str, kind: type, value: Any) -> ObservationError:
    got = "null" if value is None else type(value).__name__
    return ObservationError(path, f"must be {_KINDS[kind]}, got {got}")


def _int(value: Any, path: str, bounds: tuple[int, int] = _INT32) -> None:
    if value is None:
        return
    if _not_int(value):
        raise _wrong(path, int, value)
    if not bounds[0] <= value <= bounds[1]:
        bits = 32 if bounds == _INT32 else 64
        raise ObservationError(path, f"must be a {bits}-bit integer (from {bounds[0]} to "
                                     f"{bounds[1]}), got {value}")


def _str(value: Any, path: str) -> None:
    if value is not None and not isinstance(value, str):
        raise _wrong(path, str, value)


def _map(value: Any, path: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _wrong(path, dict, value)
    return value


def _list(value: Any, path: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _wrong(path, list, value)
    return value


def _strs(obj: dict[str, Any], path: str, keys: tuple[str, ...]) -> None:
    for key in keys:
        value = obj.get(key)
        if value is not None and not isinstance(value, str):
            raise _wrong(_at(path, key), str, value)


def _ints(obj: dict[str, Any], path: str, keys: tuple[str, ...],
          bounds: tuple[int, int] = _INT32) -> None:
    for key in keys:
        value = obj.get(key)
        if value is not None and (_not_int(value) or
                                  not bounds[0] <= value <= bounds[1]):
            _int(value, _at(path, key), bounds)


def _bools(obj: dict[str, Any], path: str, keys: tuple[str, ...]) -> None:
    for key in keys:
        value = obj.get(key)
        if value is not None and not isinstance(value, bool):
            raise _wrong(_at(path, key), bool, value)


def _child(obj: dict[str, Any], path: str, key: str) -> dict[str, Any]:
    value = obj.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _wrong(_at(path, key), dict, value)
    return value


def _str_map(obj: dict[str, Any], path: str, key: str) -> None:
    for name, item in _child(obj, path, key).items():
        # Null too: no protobuf map holds it (Go would decode it as "").
        if not isinstance(item, str):
            raise _wrong(f"{_at(path, key)}[{name}]", str, item)


def _entries(obj: dict[str, Any], path: str, key: str) -> list[dict[str, Any]]:
    """The objects of the list obj[key]; a null entry is not an object either."""
    value = obj.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise _wrong(_at(path, key), list, value)
    for i, item in enumerate(value):
        if not isinstance(item, dict):
            raise _wrong(f"{_at(path, key)}[{i}]", dict, item)
    return value


def _each(obj: dict[str, Any], path: str, key: str,
          check: Callable[[dict[str, Any], str], None]) -> None:
    """check(entry, its path) for each object of the list obj[key]."""
    for i, item in enumerate(_entries(obj, path, key)):
        check(item, f"{_at(path, key)}[{i}]")


# --- metadata and conditions: every kind --------------------------------------------------------

_META_STRINGS = ("name", "generateName", "namespace", "uid", "resourceVersion",
                 "creationTimestamp", "deletionTimestamp")
_REF_STRINGS = ("apiVersion", "kind", "name", "uid")
_COND_STRINGS = ("type", "status", "reason", "message", "lastTransitionTime", "lastProbeTime",
                 "lastUpdateTime")


def _owner_reference(ref: dict[str, Any], path: str) -> None:
    _strs(ref, path, _REF_STRINGS)
    _bools(ref, path, ("controller", "blockOwnerDeletion"))


def _metadata(obj: dict[str, Any], path: str) -> None:
    """ObjectMeta (obj["metadata"]): the fields any reader of the decider or client looks at."""
    meta = _child(obj, path, "metadata")
    path = _at(path, "metadata")
    _strs(meta, path, _META_STRINGS)
    _ints(meta, path, ("generation", "deletionGracePeriodSeconds"), _INT64)
    _str_map(meta, path, "labels")
    _str_map(meta, path, "annotations")
    _each(meta, path, "ownerReferences", _owner_reference)
    finalizers = _list(meta.get("finalizers"), _at(path, "finalizers"))
    for i, finalizer in enumerate(finalizers):
        _str(finalizer, f"{path}.finalizers[{i}]")


def _condition(cond: dict[str, Any], path: str) -> None:
    _strs(cond, path, _COND_STRINGS)
    _ints(cond, path, ("observedGeneration",), _INT64)


# --- what the core reads of each kind -------------------------------------------------------------

def _toleration(tol: dict[str, Any], path: str) -> None:
    _strs(tol, path, ("key", "operator", "value", "effect"))
    # int64 in the Kubernetes API.
    _ints(tol, path, ("tolerationSeconds",), _INT64)


def _gate(gate: dict[str, Any], path: str) -> None:
    _strs(gate, path, ("name",))


def _pod_template(template: dict[str, Any], path: str) -> None:
    """A Job's pod template: what the summarizer keeps of it (summarize._pod_template) and the
    containers a resume rewrites."""
    _metadata(template, path)
    spec = _child(template, path, "spec")
    path = _at(path, "spec")
    _str_map(spec, path, "nodeSelector")
    _each(spec, path, "tolerations", _toleration)
    _each(spec, path, "schedulingGates", _gate)
    _strs(_child(spec, path, "schedulingGroup"), _at(path, "schedulingGroup"),
          ("podGroupName",))
    _entries(spec, path, "containers")
    _entries(spec, path, "initContainers")


def _job(spec: dict[str, Any], status: dict[str, Any], path: str) -> None:
    spath = _at(path, "spec")
    _bools(spec, spath, ("suspend",))
    _ints(spec, spath, ("parallelism", "completions", "backoffLimit"))
    _pod_template(_child(spec, spath, "template"), _at(spath, "template"))
    stpath = _at(path, "status")
    _ints(status, stpath, ("active", "ready", "succeeded", "failed", "terminating"))
    _strs(status, stpath, ("startTime", "completionTime"))


def _container_status(cs: dict[str, Any], path: str) -> None:
    _strs(cs, path, ("name",))
    _ints(cs, path, ("restartCount",))


def _pod(spec: dict[str, Any], status: dict[str, Any], path: str) -> None:
    stpath = _at(path, "status")
    _strs(status, stpath, ("phase",))
    _each(status, stpath, "initContainerStatuses", _container_status)
    _each(status, stpath, "containerStatuses", _container_status)


def _port(port: dict[str, Any], path: str) -> None:
    _strs(port, path, ("name", "protocol", "appProtocol"))
    _ints(port, path, ("port", "nodePort"))
    target = port.get("targetPort")
    if target is not None and not isinstance(target, str):
        # IntOrString: an integer or a string, nothing else.
        _int(target, _at(path, "targetPort"))


def _service(spec: dict[str, Any], status: dict[str, Any], path: str) -> None:
    spath = _at(path, "spec")
    _strs(spec, spath, ("clusterIP", "type"))
    _each(spec, spath, "ports", _port)


def _gang(spec: dict[str, Any], status: dict[str, Any], path: str) -> None:
    """Workloads, PodGroups, CompositePodGroups (and their Volcano and scheduler-plugins
    kin): the core reads their metadata and status conditions (checked for every kind) and
    compares their spec with its own, where a value of another type is drift, not an error."""


def _replicated_job_status(entry: dict[str, Any], path: str) -> None:
    _strs(entry, path, ("name",))
    _ints(entry, path, ("ready", "succeeded", "failed", "active", "suspended"))
    for key in ("jobRestarts", "jobRestartsCountTowardsMax"):
        for j, value in enumerate(_list(entry.get(key), _at(path, key))):
            if _not_int(value):
                raise _wrong(f"{path}.{key}[{j}]", int, value)
            _int(value, f"{path}.{key}[{j}]")


def _jobset(spec: dict[str, Any], status: dict[str, Any], path: str) -> None:
    """A stored JobSet (Validate's old object): the status the admission rules read. Counters
    are int32s of any sign: the CRD sets no minimum on them (docs/decisions.md)."""
    stpath = _at(path, "status")
    _ints(status, stpath, ("restarts", "restartsCountTowardsMax",
                           "previousInPlaceRestartAttempt", "currentInPlaceRestartAttempt"))
    _strs(status, stpath, ("terminalState", "startTime"))
    _each(status, stpath, "replicatedJobsStatus", _replicated_job_status)


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
    if not isinstance(obj, dict):
        raise _wrong(path, dict, obj)
    _strs(obj, path, ("apiVersion", "kind"))
    _metadata(obj, path)
    spec = _child(obj, path, "spec")
    status = _child(obj, path, "status")
    _each(status, _at(path, "status"), "conditions", _condition)
    reader = _BY_KIND.get(obj.get("kind") or kind)
    if reader is not None:
        reader(spec, status, path)
    return obj


__all__ = ["ObservationError", "check_observed"]
