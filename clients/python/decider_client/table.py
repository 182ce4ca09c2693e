"""Plans and simulations for a person to read, as kubectl prints objects: a short table, then the
sentences that say why.

`decider decide` and `decider simulate` print these when no `-o` is given; `-o json|yaml` print
render.py's dicts, which are what scripts read. The functions take those dicts, so any client
prints what the CLI prints: `table.plan(render.plan_to_dict(response))`.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any

# kubectl's printers pad columns with three spaces (tabwriter's padding), and show an empty
# cell as <none>.
_GAP = "   "
_NONE = "<none>"


def plan(plan: Mapping[str, Any]) -> str:
    """One plan: TYPE, NAME, DETAIL for each action, in the order to apply them; then the
    explanation, and when to look again."""
    lines = _plan_lines(plan)
    return "\n".join(lines) + "\n"


def plans(by_jobset: Mapping[str, Mapping[str, Any]]) -> str:
    """Several JobSets' plans (decide's output for a file of several), one section each."""
    sections = []
    for key, one in by_jobset.items():
        sections.append("\n".join([f"JobSet {_cell(key)}", *_plan_lines(one)]))
    return "\n\n".join(sections) + "\n"


def simulation(sim: Mapping[str, Any]) -> str:
    """A simulation: one row per pass (its time, the events applied before it, the actions by
    type, its explanation), then where it ended."""
    rows = []
    for step in sim.get("steps", []):
        rows.append([str(step.get("pass", "")), f"{step.get('at', 0)}s",
                     ", ".join(_event(e) for e in step.get("events", [])) or _NONE,
                     _action_counts(step.get("plan", {}).get("actions", [])) or _NONE,
                     "; ".join(step.get("plan", {}).get("explanation", [])) or _NONE])
    lines = _table(["PASS", "AT", "EVENTS", "ACTIONS", "EXPLANATION"], rows) if rows \
        else ["No passes."]
    return "\n".join([*lines, "", *_outcome(sim.get("outcome", {}))]) + "\n"


def _plan_lines(plan: Mapping[str, Any]) -> list[str]:
    actions = plan.get("actions", [])
    lines = _table(["TYPE", "NAME", "DETAIL"],
                   [[a.get("type", ""), a.get("name", ""), _detail(a)] for a in actions]) \
        if actions else ["No actions."]
    lines.append("")
    lines.extend(_cell(sentence) for sentence in plan.get("explanation", []))
    # requeueAfter is exact ("4.012s"); requeueAfterSeconds its whole seconds, rounded up.
    after = plan.get("requeueAfter") or (f"{plan['requeueAfterSeconds']}s"
                                         if plan.get("requeueAfterSeconds") else "")
    if after:
        lines.append(f"Requeue after {after}: the next pass is due then, whatever changes.")
    return lines


def _detail(action: Mapping[str, Any]) -> str:
    """What an action's row says beyond its type and name: an event's type, reason and message,
    else the reason the decider gave for it."""
    event = action.get("event")
    if event:
        text = " ".join(p for p in (event.get("type", ""), event.get("reason", "")) if p)
        return f"{text}: {event['message']}" if event.get("message") else text
    return action.get("reason", "") or _NONE


def _event(event: Mapping[str, Any]) -> str:
    text = " ".join(p for p in (event.get("type", ""), event.get("job", "")) if p)
    if event.get("type") == "JobFailed":
        why = event.get("reason", "")
        if event.get("message"):
            why = f"{why}: {event['message']}"
        text += f" ({why})"
    return text


def _action_counts(actions: Sequence[Mapping[str, Any]]) -> str:
    """Actions by type, in the order each type first appears: `4 DeleteJob, UpdateStatus`."""
    counts: dict[str, int] = {}
    for action in actions:
        counts[action.get("type", "")] = counts.get(action.get("type", ""), 0) + 1
    return ", ".join(f"{n} {t}" if n > 1 else t for t, n in counts.items())


def _outcome(outcome: Mapping[str, Any]) -> list[str]:
    state = outcome.get("terminalState") or "still running"
    if outcome.get("reason"):
        state += f" ({outcome['reason']})"
    if outcome.get("jobSetDeleted"):
        state += ", the JobSet deleted"
    passes = outcome.get("passes", 0)
    end = f"at rest at {outcome.get('endTime', '')}" if outcome.get("settled") \
        else f"not at rest when the passes ran out (--max-passes), at {outcome.get('endTime', '')}"
    lines = [f"Outcome: {state} after {passes} pass{'' if passes == 1 else 'es'}, {end}",
             f"Restarts: {outcome.get('restarts', 0)} "
             f"({outcome.get('restartsCountTowardsMax', 0)} count towards maxRestarts, "
             f"{outcome.get('restartsLeft', 0)} left)"]
    if outcome.get("summary"):
        lines.append(_cell(outcome["summary"]))
    if outcome.get("eventsNotApplied"):
        lines.append("Events never applied (their Job never existed): "
                     + ", ".join(_cell(e) for e in outcome["eventsNotApplied"]))
    return lines


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    cells = [list(header), *[[_cell(c) for c in row] for row in rows]]
    widths = [max(_width(row[i]) for row in cells) for i in range(len(header))]
    out = []
    for row in cells:
        # The last column is not padded: no trailing spaces, and a long reason costs no width.
        padded = [c + " " * (widths[i] - _width(c)) for i, c in enumerate(row[:-1])]
        out.append(_GAP.join([*padded, row[-1]]))
    return out


def _cell(text: Any) -> str:
    """One line of printable text: a message from a Job or an event may hold newlines, tabs or
    a terminal's escape sequences, which would break the table or drive the terminal."""
    out = []
    for ch in str(text):
        if ch in "\n\r\t\v\f\u2028\u2029":
            out.append(" ")
        elif unicodedata.category(ch) == "Cc":
            out.append(f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "".join(out)


def _width(text: str) -> int:
    """Columns a terminal gives the text: wide East Asian characters take two, combining
    marks none."""
    width = 0
    for ch in text:
        if unicodedata.combining(ch):
            continue
        width += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return width
