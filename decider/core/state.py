"""The working state of one reconcile pass: the status being built and the plan so far."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from decider.core.errors import TooLarge
from decider.core.jobset import JobSet
from decider.core.model import Action, Event, FailureOutcome, Observed, Options
from decider.core.times import parse_rfc3339


def format_time(t: datetime) -> str:
    """RFC 3339 at second precision in UTC, as metav1.Time serializes. Written out rather than
    with strftime, whose %Y drops the zeros of years before 1000 on glibc ("999-05-01T..."): a
    time the API server, and the decider's own input check, refuse."""
    if t.utcoffset():
        t = t.astimezone(UTC)
    return (f"{t.year:04d}-{t.month:02d}-{t.day:02d}T"
            f"{t.hour:02d}:{t.minute:02d}:{t.second:02d}Z")


def copy_json(value: Any) -> Any:
    """Deep copy of JSON data (dicts, lists, scalars): several times faster than deepcopy, which
    keeps a memo for cycles JSON cannot have; it was the largest fixed cost of a small pass."""
    if isinstance(value, dict):
        return {k: copy_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [copy_json(v) for v in value]
    return value


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch, returning a new value; `target` is left as it was."""
    if not isinstance(patch, dict):
        return copy_json(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def parse_time(value: str) -> datetime | None:
    """A time of the input (checked by times.check as it was read); None when absent."""
    return parse_rfc3339(value) if value else None


class PlanTooLarge(TooLarge):
    """A plan over Options.max_plan_bytes, with its figures: a caller that lent Decide only what
    was left of its own budget (Simulate, whose answer holds many plans) words the refusal in
    terms of its whole answer instead of the share it lent."""

    def __init__(self, field: str, message: str, *, what: str, needed: int) -> None:
        super().__init__(field, message)
        self.what = what
        self.needed = needed


@dataclass(slots=True)
class PassState:
    js: JobSet
    observed: Observed
    status: dict[str, Any]
    now_str: str
    dirty: bool = False
    actions: list[Action] = field(default_factory=list)
    # Events tied to a status change: upstream records them only after the status write.
    status_events: list[Event] = field(default_factory=list)
    explanation: list[str] = field(default_factory=list)
    # When to decide again if nothing changes first (zero: only on a change).
    requeue_after: timedelta = timedelta(0)
    # Bytes the plan's manifests are known to need at least, against Options.max_plan_bytes.
    planned_bytes: int = 0
    failure: FailureOutcome | None = None

    @classmethod
    def start(cls, js: JobSet, observed: Observed) -> PassState:
        status = orjson.loads(js.status_json) if js.status_json is not None \
            else copy_json(js.status)
        # A JSON null is the field's zero value, as Go decodes it: `"conditions": null` is no
        # conditions (the pass appends to the list; null was a crash).
        status = {k: v for k, v in status.items() if v is not None}
        status.setdefault("restarts", 0)
        return cls(js=js, observed=observed, status=status, now_str=format_time(observed.now))

    @property
    def options(self) -> Options:
        return self.observed.options

    @property
    def now(self) -> datetime:
        return self.observed.now

    def gate(self, name: str) -> bool:
        return self.observed.options.gate(name)

    def explain(self, sentence: str) -> None:
        self.explanation.append(sentence)

    def act(self, action: Action) -> None:
        if not action.namespace:
            action.namespace = self.js.namespace
        self.actions.append(action)

    def reserve(self, nbytes: int, field: str, what: str) -> None:
        """Count `nbytes` of plan against the caller's budget; TooLarge before it is exceeded."""
        self.planned_bytes += nbytes
        limit = self.observed.options.max_plan_bytes
        if limit and self.planned_bytes > limit:
            raise PlanTooLarge(field, f"{what}: the plan would hold at least "
                                      f"{self.planned_bytes:,} bytes, over the limit of "
                                      f"{limit:,} bytes per answer",
                               what=what, needed=self.planned_bytes)

    def enqueue_event(self, type_: str, reason: str, message: str) -> None:
        self.status_events.append(Event(type=type_, reason=reason, message=message))

    # Status counters, read with upstream's zero defaults.
    @property
    def restarts(self) -> int:
        return int(self.status.get("restarts") or 0)

    @property
    def restarts_count_towards_max(self) -> int:
        return int(self.status.get("restartsCountTowardsMax") or 0)
