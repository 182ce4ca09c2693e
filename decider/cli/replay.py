"""`decider replay FILE`: decide every decision-log line again and report the ones that differ.

An upgrade can be checked against yesterday's traffic: the same request must get the same plan
(the decision id aside, which names the version that decided). Lines whose request never reached
a worker (a deadline or a full queue) carry no request and are skipped.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import json_format

from decider.cli.common import UsageError, read_input
from decider.contract.limits import Limits
from decider.service import dispatch

# Fields that name the decision rather than say what was decided.
_IGNORED = frozenset({"decisionId"})
_MAX_PATHS = 10


class ReplayInputError(ValueError):
    """A line that is not a decision-log record."""


@dataclass
class Outcome:
    line: int
    method: str
    decision_id: str
    jobset: dict[str, str]
    differences: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"line": self.line, "decision_id": self.decision_id, "method": self.method,
                "jobset": self.jobset, "differences": self.differences}


def _paths(before: Any, after: Any, path: str, out: list[str]) -> None:
    if len(out) >= _MAX_PATHS:
        return
    if isinstance(before, dict) and isinstance(after, dict):
        for key in sorted(set(before) | set(after)):
            if key in _IGNORED and not path:
                continue
            _paths(before.get(key), after.get(key), f"{path}.{key}" if path else key, out)
    elif isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        for i, (b, a) in enumerate(zip(before, after, strict=True)):
            _paths(b, a, f"{path}[{i}]", out)
    elif before != after:
        out.append(f"{path or '(answer)'}: logged {_short(before)}, now {_short(after)}")


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 120 else text[:117] + "..."


def _record(text: str, number: int) -> dict[str, Any]:
    try:
        record = json.loads(text)
    except ValueError as exc:
        raise ReplayInputError(f"line {number}: not JSON: {exc}") from None
    except RecursionError:
        raise ReplayInputError(f"line {number}: not JSON the decider reads: nested too "
                               "deeply") from None
    if not isinstance(record, dict) or "method" not in record:
        raise ReplayInputError(f"line {number}: not a decision-log record (no method)")
    return record


def replay(lines: Iterable[str], limits: Limits) -> Iterator[tuple[Outcome, bool]]:
    """(outcome, replayed) per record; outcome.differences is empty when the answer is the
    logged one. Raises ReplayInputError naming the line for a line that is not a record."""
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        record = _record(text, number)
        try:
            yield _replay_one(record, number, limits)
        except RecursionError:
            # A line json.loads could just read, compared field by field a level deeper.
            raise ReplayInputError(f"line {number}: nested too deeply to compare") from None


def _replay_one(record: dict[str, Any], number: int, limits: Limits) -> tuple[Outcome, bool]:
    method = str(record["method"])
    outcome = Outcome(number, method, str(record.get("decision_id") or ""),
                      record.get("jobset") or {})
    spec = dispatch.METHODS.get(method)
    if spec is None:
        raise ReplayInputError(f"line {number}: unknown method {method!r}")
    if record.get("request") is None:
        return outcome, False
    if not isinstance(record["request"], dict):
        raise ReplayInputError(f"line {number}: request: must be an object (the request as "
                               f"JSON), not {type(record['request']).__name__}")
    try:
        request = json_format.ParseDict(record["request"], spec.request())
    except json_format.ParseError as exc:
        raise ReplayInputError(f"line {number}: request: {exc}") from None
    reply = dispatch.answer(method, request.SerializeToString(), limits)
    if "response" in record:
        if reply.code != dispatch.OK:
            outcome.differences.append(
                f"(answer): logged a plan, now {dispatch.STATUS_NAMES.get(reply.code)}: "
                f"{reply.message}")
        else:
            answer = spec.response()
            answer.ParseFromString(reply.body)
            _paths(record["response"], json_format.MessageToDict(answer), "",
                   outcome.differences)
    else:
        logged = record.get("status") or {}
        if not isinstance(logged, dict):
            raise ReplayInputError(f"line {number}: status: must be an object with code and "
                                   "message")
        now = {"code": dispatch.STATUS_NAMES.get(reply.code, str(reply.code)),
               "message": reply.message if reply.code != dispatch.OK else "(an answer)"}
        _paths({"code": logged.get("code"), "message": logged.get("message")}, now,
               "status", outcome.differences)
    return outcome, True



def cmd_replay(args: argparse.Namespace) -> int:
    from decider.contract.limits import DEFAULT

    text = read_input(args.file)
    replayed = skipped = differing = 0
    try:
        for outcome, ran in replay(text.splitlines(), DEFAULT):
            if not ran:
                skipped += 1
                continue
            replayed += 1
            if outcome.differences:
                differing += 1
                sys.stdout.write(json.dumps(outcome.to_dict(), ensure_ascii=False) + "\n")
    except ReplayInputError as exc:
        raise UsageError(f"{args.file}: {exc}") from None
    print(f"decider: replayed {replayed} decision(s), {differing} differ, {skipped} skipped "
          "(no request logged)", file=sys.stderr)
    return 1 if differing else 0


def add_arguments(replay_cmd: argparse.ArgumentParser) -> None:
    replay_cmd.add_argument("file", help="a file written by `decider serve --decision-log` "
                                         "('-' for stdin)")
    replay_cmd.set_defaults(func=cmd_replay)
