"""Where the entries of an expanded Decide request came from, to name them as the client sent
them.

A request may carry observed objects whole (`observed_json`); convert.py summarizes them into the
typed lists, and every check names a typed field (`jobs[0].start_time`). For an object sent whole
that is a field the client never wrote: an error is renamed here, only once raised, to the
object's own JSON path (`observed_json[1].status.startTime`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from decider.core.errors import FieldError, InvalidInput, TooLarge


@dataclass(frozen=True, slots=True)
class Sent:
    """The index in observed_json of each summary _summarized made, per typed list."""

    jobs: list[int]
    objects: list[int]
    pods: list[int]
    # Pods sent whole that are not the JobSet's (summarize.pod_of): left out, and named in the
    # plan's explanation.
    unlisted_pods: list[str] = field(default_factory=list)


# Typed field -> the field of the object it was summarized from (decider_api/summarize.py), for
# naming in an error what a client sent whole. An entry is (JSON path, table of the entry's own
# fields or None); None: a scalar or a map, whose key (`[key]`) follows as it is. A list's
# entries keep their indexes (summarize.py drops none); "" names the field an entry is.
_PathTable = dict[str, tuple[str, "_PathTable | None"]]
_CONDITION: _PathTable = {
    "type": ("type", None), "status": ("status", None), "reason": ("reason", None),
    "message": ("message", None), "last_transition_time": ("lastTransitionTime", None),
}
_TOLERATION: _PathTable = {
    "key": ("key", None), "operator": ("operator", None), "value": ("value", None),
    "effect": ("effect", None), "toleration_seconds": ("tolerationSeconds", None),
}
_POD_TEMPLATE: _PathTable = {
    "labels": ("metadata.labels", None), "annotations": ("metadata.annotations", None),
    "node_selector": ("spec.nodeSelector", None), "tolerations": ("spec.tolerations", _TOLERATION),
    # A scheduling gate is summarized to its name.
    "scheduling_gates": ("spec.schedulingGates", {"": ("name", None)}),
    "scheduling_group": ("spec.schedulingGroup", {"pod_group_name": ("podGroupName", None)}),
}
_JSON_PATHS: dict[str, _PathTable] = {
    "jobs": {
        "name": ("metadata.name", None), "uid": ("metadata.uid", None),
        "controller_uid": ("metadata.ownerReferences", None),
        "labels": ("metadata.labels", None), "annotations": ("metadata.annotations", None),
        "creation_timestamp": ("metadata.creationTimestamp", None),
        "deletion_timestamp": ("metadata.deletionTimestamp", None),
        "resource_version": ("metadata.resourceVersion", None),
        "suspend": ("spec.suspend", None), "parallelism": ("spec.parallelism", None),
        "completions": ("spec.completions", None), "pod_template": ("spec.template", _POD_TEMPLATE),
        "active": ("status.active", None), "ready": ("status.ready", None),
        "succeeded": ("status.succeeded", None), "failed": ("status.failed", None),
        "start_time": ("status.startTime", None), "conditions": ("status.conditions", _CONDITION),
    },
    "pods": {
        "name": ("metadata.name", None), "annotations": ("metadata.annotations", None),
        "phase": ("status.phase", None),
        "max_container_restarts": ("status.containerStatuses", None),
    },
    "objects": {
        # The object itself (summarize.object_summary keeps it whole, keys unchanged).
        "object_json": ("", None),
        "name": ("metadata.name", None), "uid": ("metadata.uid", None),
        "controller_uid": ("metadata.ownerReferences", None),
        "api_version": ("apiVersion", None), "kind": ("kind", None),
    },
}
_ATTR = re.compile(r"\.(\w+)")
_ENTRY = re.compile(r"(jobs|pods|objects)\[(\d+)\]")


def _json_path(rest: str, table: _PathTable) -> str | None:
    """`rest` of a typed field (".conditions[0].last_transition_time") as the path of the JSON
    field it came from (".status.conditions[0].lastTransitionTime"); None if not in `table`."""
    if not rest:
        leaf = table.get("")
        return "." + leaf[0] if leaf else ""
    match = _ATTR.match(rest)
    entry = table.get(match[1]) if match else None
    if match is None or entry is None:
        return None
    path, fields = entry
    head, tail = ("." + path if path else ""), rest[match.end():]
    if fields is None:
        return head + tail
    index = ""
    if tail.startswith("["):
        end = tail.find("]") + 1
        index, tail = tail[:end], tail[end:]
    inner = _json_path(tail, fields)
    return None if inner is None else head + index + inner


@dataclass(frozen=True, slots=True)
class Origins:
    """Where the entries of an expanded request came from, to name in an error the field a
    client sent: each typed list holds the request's own entries (`typed` of them), then the
    summaries of `sent`. Consulted only when an error is raised: the checks name the typed
    field, and the success path does no work for objects sent whole."""

    typed: dict[str, int]
    sent: Sent
    jobs: Any  # the expanded request's Jobs: the failure policy names a Job by its name

    def field(self, field: str) -> str:
        """`field` of the expanded request as the client sent it: unchanged for a typed entry,
        `observed_json[i].<JSON path>` for a summary."""
        match = _ENTRY.match(field)
        if match is not None and int(match[2]) < len(getattr(self.sent, match[1])) + \
                self.typed[match[1]]:
            kind, k, rest = match[1], int(match[2]), field[match.end():]
        elif field.startswith("jobs["):
            # jobs[<name>] (core/failure_policy.py). A Job named by digits is read as an index
            # above, as it was before: the typed path is ambiguous there too.
            k = next((k for k, job in enumerate(self.jobs)
                      if field.startswith(f"jobs[{job.name}]")), -1)
            if k < 0:
                return field
            kind, rest = "jobs", field[len(f"jobs[{self.jobs[k].name}]"):]
        else:
            return field
        k -= self.typed[kind]
        if k < 0:
            return field
        path = _json_path(rest, _JSON_PATHS[kind])
        # A field the table does not know keeps its typed name, under the object's.
        return f"observed_json[{getattr(self.sent, kind)[k]}]" + (rest if path is None else path)

    def renamed(self, exc: InvalidInput | TooLarge) -> InvalidInput | TooLarge:
        """`exc` naming what the client sent; `exc` itself when it names nothing sent whole."""
        if isinstance(exc, InvalidInput):
            errors = [FieldError(self.field(e.field), e.message) for e in exc.errors]
            if errors == exc.errors:
                return exc
            return type(exc)(errors)
        field = self.field(exc.field)
        # A subclass carries more than a field and a message: it is left as it is.
        if field == exc.field or type(exc) is not TooLarge:
            return exc
        return TooLarge(field, str(exc).removeprefix(f"{exc.field}: "))
