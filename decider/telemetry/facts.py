"""What a decision was about and what it decided, as span attributes and metric inputs.

Computed by the worker that decided (it holds the parsed request and the plan), sent to the
server beside the answer as a small JSON object, and turned there into span attributes and
metrics. Keys are the span attribute names (docs/observability.md).
"""

from __future__ import annotations

from typing import Any

from decider.contract.convert import Decision

# Attribute names: OpenTelemetry's Kubernetes conventions where one exists, else ours.
NAMESPACE = "k8s.namespace.name"
JOBSET_NAME = "jobset.name"
JOBSET_UID = "jobset.uid"
DECISION_ID = "decider.decision_id"
ACTION_COUNT = "decider.actions."  # + action type, e.g. decider.actions.CreateJob
ACTIONS_TOTAL = "decider.actions.total"
RESTARTS_BEFORE = "jobset.restarts.before"
RESTARTS_AFTER = "jobset.restarts.after"
RESTARTS_COUNTING_AFTER = "jobset.restarts_count_towards_max.after"
TERMINAL_BEFORE = "jobset.terminal_state.before"
TERMINAL_STATE = "jobset.terminal_state"
FAILURE_RULE = "decider.failure_policy.rule"
FAILURE_ACTION = "decider.failure_policy.action"
# The decision failed the JobSet for its activeDeadlineSeconds (KEP-1186).
DEADLINE_EXCEEDED = "jobset.active_deadline.exceeded"
# The JobSet's spec.activeDeadlineSeconds, while it is not finished: its deadline counter's
# series then exists (at 0) before the deadline passes.
ACTIVE_DEADLINE = "jobset.active_deadline_seconds"
# The JobSet's failure-policy rules, [[action, name], ...]: not a span attribute (a list), read
# by the restarts counter so that a rule's series exists before its first restart.
FAILURE_RULES = "jobset.failure_policy.rules"


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def decision_facts(decision: Decision, decision_id: str) -> dict[str, Any]:
    jobset = decision.observed.jobset
    meta = jobset.get("metadata") if isinstance(jobset.get("metadata"), dict) else {}
    before = jobset.get("status") if isinstance(jobset.get("status"), dict) else {}
    after = decision.plan.status
    facts: dict[str, Any] = {
        NAMESPACE: str(meta.get("namespace") or ""),
        JOBSET_NAME: str(meta.get("name") or ""),
        JOBSET_UID: str(meta.get("uid") or ""),
        DECISION_ID: decision_id,
        ACTIONS_TOTAL: len(decision.plan.actions),
        TERMINAL_BEFORE: str(before.get("terminalState") or ""),
        TERMINAL_STATE: str(after.get("terminalState") or ""),
    }
    # Restart counters only for a JobSet that has restarted: every attribute costs each span.
    restarts = (_int(before.get("restarts")), _int(after.get("restarts")),
                _int(after.get("restartsCountTowardsMax")))
    if any(restarts):
        facts[RESTARTS_BEFORE], facts[RESTARTS_AFTER], facts[RESTARTS_COUNTING_AFTER] = restarts
    for action in decision.plan.actions:
        key = ACTION_COUNT + action.type
        facts[key] = facts.get(key, 0) + 1
    failure = decision.plan.failure
    if failure is not None:
        facts[FAILURE_RULE] = failure.rule
        facts[FAILURE_ACTION] = failure.action
    if not facts[TERMINAL_BEFORE]:
        if _deadline_exceeded(after):
            facts[DEADLINE_EXCEEDED] = True
        deadline = _int((jobset.get("spec") or {}).get("activeDeadlineSeconds")
                        if isinstance(jobset.get("spec"), dict) else None)
        if deadline > 0:
            facts[ACTIVE_DEADLINE] = deadline
    rules = _failure_rules(jobset)
    if rules:
        facts[FAILURE_RULES] = rules
    return facts


def _deadline_exceeded(status: dict[str, Any]) -> bool:
    if status.get("terminalState") != "Failed":
        return False
    return any(c.get("type") == "Failed" and c.get("status") == "True"
               and c.get("reason") == "DeadlineExceeded"
               for c in status.get("conditions") or () if isinstance(c, dict))


def _failure_rules(jobset: dict[str, Any]) -> list[list[str]]:
    spec = jobset.get("spec") if isinstance(jobset.get("spec"), dict) else {}
    policy = spec.get("failurePolicy") if isinstance(spec.get("failurePolicy"), dict) else {}
    rules = policy.get("rules") if isinstance(policy.get("rules"), list) else []
    return [[str(r.get("action") or ""), str(r.get("name") or "")] for r in rules
            if isinstance(r, dict)]


def span_attributes(facts: dict[str, Any]) -> dict[str, Any]:
    """The facts a span carries: an empty string says nothing (no terminal state, no rule) and
    costs every span, so it is left out, as is anything not a string, integer or boolean."""
    return {k: v for k, v in facts.items() if v != "" and isinstance(v, str | int | bool)}
