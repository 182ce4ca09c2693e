"""Observed Jobs read straight from the request's protobuf messages.

Copying ten thousand `ObservedJob` messages into the core's dataclasses was three quarters of a
large request (labels, conditions, pod templates, eighteen fields each), while a pass reads a
handful of fields of most Jobs. A `JobView` is an `ObservedJob` that keeps its message: the
fields every pass reads are fetched once, the rest when asked; nothing is copied, and the core
reads it as it reads any ObservedJob. Maps are the message's read-only maps, conditions its
Condition messages (which have the fields of a JobCondition). It is for one decision: a caller
that keeps or changes Jobs (the simulator) gets plain ObservedJobs from convert.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any

from decider.contract import json_input
from decider.core.errors import InvalidInput
from decider.core.model import ObservedJob, PodTemplateSummary, Toleration
from decider_api.v1 import decider_pb2 as pb


def _field(name: str) -> property:
    # A getter in C: a Python function per read would cost as much as the read itself.
    return property(attrgetter(f"_m.{name}"))


def _toleration(t: pb.Toleration) -> Toleration:
    return Toleration(key=t.key, operator=t.operator, value=t.value, effect=t.effect,
                      toleration_seconds=t.toleration_seconds
                      if t.HasField("toleration_seconds") else None)


def containers(text: str, job: str, field: str) -> list[Any] | None:
    """A Job's containers sent as JSON (PodTemplateSummary.containers_json): None when not sent;
    InvalidInput naming the Job when not a JSON list of objects whose names are strings and
    whose resources, requests and limits (what a resume reads and rewrites) are objects.
    Parsed as every other JSON of a request is (json_input): no NaN, no lone surrogate,
    bounded nesting, since the resume writes these containers back into its patch."""
    if not text:
        return None
    where = f"jobs[name={job}].pod_template.{field}"
    value = json_input.load(text, where)
    if not isinstance(value, list) or not all(isinstance(c, dict) for c in value):
        raise InvalidInput.at(where, "must be a JSON list of objects")
    for i, container in enumerate(value):
        # A resume matches containers by name.
        if not isinstance(container.get("name", ""), str):
            raise InvalidInput.at(f"{where}[{i}].name", "must be a string")
        resources = container.get("resources")
        if resources is None:
            continue
        if not isinstance(resources, dict):
            raise InvalidInput.at(f"{where}[{i}].resources", "must be an object")
        for part in ("requests", "limits"):
            if not isinstance(resources.get(part) or {}, dict):
                raise InvalidInput.at(f"{where}[{i}].resources.{part}", "must be an object")
    return value


def pod_template(msg: pb.ObservedJob) -> PodTemplateSummary | None:
    """The summary of a Job's pod template as the core reads it."""
    if not msg.HasField("pod_template"):
        return None
    pt = msg.pod_template
    return PodTemplateSummary(
        labels=pt.labels, annotations=pt.annotations, node_selector=pt.node_selector,
        tolerations=[_toleration(t) for t in pt.tolerations],
        scheduling_gates=list(pt.scheduling_gates),
        containers=containers(pt.containers_json, msg.name, "containers_json"),
        init_containers=containers(pt.init_containers_json, msg.name, "init_containers_json"),
        scheduling_group=pt.HasField("scheduling_group"),
        pod_group_name=pt.scheduling_group.pod_group_name
        if pt.scheduling_group.HasField("pod_group_name") else None)


# The fields every pass reads of every Job: fetched in one C call when the view is made and
# kept in the dataclass's own slots, where the core reads them at the speed of a dataclass (a
# read from the message costs several times more, and some are read three times a pass).
_HOT = attrgetter("name", "controller_uid", "labels", "conditions", "active", "ready",
                  "succeeded", "creation_timestamp", "deletion_timestamp", "start_time")


class JobView(ObservedJob):
    __slots__ = ("_m",)

    def __init__(self, msg: pb.ObservedJob) -> None:  # no ObservedJob.__init__: nothing copied
        self._m = msg
        (self.name, self.controller_uid, self.labels, self.conditions, self.active,
         self.ready, self.succeeded, self.creation_timestamp, self.deletion_timestamp,
         self.start_time) = _HOT(msg)
        # proto3 optional fields: None when unset, as the dataclass has them. Set and non-zero
        # is the common case: one read.
        value = msg.suspend
        self.suspend = value if value or msg.HasField("suspend") else None
        value = msg.parallelism
        self.parallelism = value if value or msg.HasField("parallelism") else None
        value = msg.completions
        self.completions = value if value or msg.HasField("completions") else None

    # Read by few passes, from the message when asked.
    uid = _field("uid")
    annotations = _field("annotations")
    failed = _field("failed")
    resource_version = _field("resource_version")

    @property
    def pod_template(self) -> PodTemplateSummary | None:  # type: ignore[override]
        # Read only when a Job is resumed, or (spec.scheduling) checked for staleness: built
        # then, not kept.
        return pod_template(self._m)

    def __repr__(self) -> str:
        return f"JobView({self._m.name!r})"


def job_views(messages: Any) -> list[ObservedJob]:
    return [JobView(m) for m in messages]
