"""What the decider counts from its decisions: one row per counter, read from a decision's facts
(facts.py).

The worker that decided turns its facts into increments (`increments`: a small JSON object that
repeats from decision to decision, so the server caches what it adds by its bytes), and the
server adds them to the SDK's counters (decider/service/rpc_telemetry.py). Both read this
table, so a counter of a fact is one row: for a fact that is true in the decisions to count,

    when(f.SOME_FACT, "jobset.some_events", "{jobset}", "What it counts"),

is `jobset_some_events_total` on a Prometheus scrape, at 0 from the start; a counter with
labels is a FactCounter whose function yields (amount, label values) from the facts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from decider.core import constants as c
from decider.telemetry import facts as f
from decider_api.names import ACTION_NAMES
from decider_telemetry.metrics import MetricSpec

# (amount, label values) a decision adds to one counter. An amount of 0 makes the series exist
# (at 0) before its first event, so that Prometheus' increase() sees that event.
Increment = tuple[int, tuple[str, ...]]


@dataclass(frozen=True)
class FactCounter:
    spec: MetricSpec
    labels: tuple[str, ...]
    count: Callable[[Mapping[str, Any]], Iterable[Increment]]
    # Label values known in advance: their series exist at 0 from the start.
    known: tuple[tuple[str, ...], ...] = ((),)


def when(fact: str, name: str, unit: str, description: str) -> FactCounter:
    """A counter without labels of the decisions whose `fact` is true (a positive number
    adds itself)."""
    def count(facts: Mapping[str, Any]) -> Iterable[Increment]:
        value = facts.get(fact)
        if value is True:
            return ((1, ()),)
        if isinstance(value, int) and value > 0:
            return ((value, ()),)
        return ()

    return FactCounter(MetricSpec(name, "counter", unit, description), (), count)


def _actions(facts: Mapping[str, Any]) -> Iterable[Increment]:
    for key, count in facts.items():
        if key.startswith(f.ACTION_COUNT) and key != f.ACTIONS_TOTAL and isinstance(count, int):
            yield count, (key[len(f.ACTION_COUNT):],)


def _restarts(facts: Mapping[str, Any]) -> Iterable[Increment]:
    added = _int(facts.get(f.RESTARTS_AFTER)) - _int(facts.get(f.RESTARTS_BEFORE))
    if added > 0:
        yield added, (str(facts.get(f.FAILURE_ACTION, "")), str(facts.get(f.FAILURE_RULE, "")))
    # Every rule that can restart the JobSet, at 0: its first restart then shows in increase().
    for action, rule in facts.get(f.FAILURE_RULES, ()):
        if action != c.FAIL_JOBSET:
            yield 0, (action, rule)


def _finished(facts: Mapping[str, Any]) -> Iterable[Increment]:
    state = facts.get(f.TERMINAL_STATE)
    if state and not facts.get(f.TERMINAL_BEFORE):
        yield 1, (str(state),)


def _deadline_exceeded(facts: Mapping[str, Any]) -> Iterable[Increment]:
    labels = (str(facts.get(f.JOBSET_NAME, "")), str(facts.get(f.NAMESPACE, "")))
    if facts.get(f.DEADLINE_EXCEEDED):
        yield 1, labels
    elif facts.get(f.ACTIVE_DEADLINE):
        # A JobSet with a deadline, not finished: its series, at 0, before the deadline passes.
        yield 0, labels


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


DECISION_COUNTERS: tuple[FactCounter, ...] = (
    FactCounter(MetricSpec("decider.actions", "counter", "{action}",
                           "Actions planned, by action.type"),
                ("action.type",), _actions, tuple((t,) for t in ACTION_NAMES.values())),
    FactCounter(MetricSpec("decider.restarts", "counter", "{restart}",
                           "JobSet restarts decided, by failure_policy.action and "
                           "failure_policy.rule"),
                ("failure_policy.action", "failure_policy.rule"), _restarts,
                # No rule matched (or none is written): the default action.
                ((c.RESTART_JOBSET, ""),)),
    FactCounter(MetricSpec("decider.jobsets.finished", "counter", "{jobset}",
                           "JobSets decided to have finished, by terminal_state"),
                ("terminal_state",), _finished, ((c.COMPLETED,), (c.FAILED,))),
    # Upstream's metric of KEP-1186 (#1320), by its name and labels: one series per JobSet.
    FactCounter(MetricSpec("jobset.active_deadline_exceeded", "counter", "{jobset}",
                           "JobSets decided to fail for their activeDeadlineSeconds, by "
                           "jobset_name and namespace"),
                ("jobset_name", "namespace"), _deadline_exceeded, ()),
)


def increments(facts: Mapping[str, Any]) -> dict[str, list[list[Any]]]:
    """What a decision adds to each counter: {metric name: [[amount, [label values]], ...]},
    counters it adds nothing to left out."""
    out: dict[str, list[list[Any]]] = {}
    for counter in DECISION_COUNTERS:
        added = [[amount, list(values)] for amount, values in counter.count(facts)]
        if added:
            out[counter.spec.name] = added
    return out
