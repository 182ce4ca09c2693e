"""`decider replay FILE`: decide every decision-log line again and report the ones that differ.

An upgrade can be checked against yesterday's traffic: the same request must get the same plan
(the decision id aside, which names the version that decided). Lines whose request never reached
a worker (a deadline or a full queue) carry no request and are skipped.

The log is read a line at a time, lines split at "\\n" only (decider/telemetry/log_format.py),
so a log of any size replays in the memory of its largest line. A torn line (the start of a
record a crash or a full disk cut short) is reported and skipped, and a whole record written
after it on the same line, by a server older than the rule that starts a fresh line after one,
is replayed.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from google.protobuf import json_format

from decider.cli.common import UsageError
from decider.contract.limits import Limits
from decider.service import dispatch
from decider.telemetry.log_format import request_from_json, split_torn

# Fields that name the decision rather than say what was decided.
_IGNORED = frozenset({"decisionId"})
_MAX_PATHS = 10
# Torn lines named one by one on standard error; past this, only counted.
_MAX_TORN_REPORTS = 10
_START = '{"time":"'


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


@dataclass(frozen=True)
class Torn:
    """A line cut short: reported, not replayed."""

    line: int


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


def _looks_torn(text: str) -> bool:
    """The start of a record: what the writer puts first, or a piece of it."""
    return text.startswith(_START) or _START.startswith(text)


def _records(text: str, number: int) -> Iterator[dict[str, Any] | Torn]:
    """The line's record, or Torn and the whole record written after it, if one was."""
    try:
        yield _record(text, number)
        return
    except ReplayInputError:
        if not _looks_torn(text):
            raise
    _, rest = split_torn(text)
    yield Torn(number)
    if rest is not None:
        yield from _records(rest, number)


def replay(lines: Iterable[str | bytes], limits: Limits
           ) -> Iterator[tuple[Outcome, bool] | Torn]:
    """(outcome, replayed) per record, Torn per torn line; outcome.differences is empty when
    the answer is the logged one. Raises ReplayInputError naming the line for a line that is
    neither a record nor a torn one."""
    for number, raw in enumerate(lines, start=1):
        if isinstance(raw, str):
            text = raw
        else:
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                # A torn line may end in part of a character.
                text = raw.decode("utf-8", "replace")
                if not _looks_torn(text):
                    raise ReplayInputError(f"line {number}: not UTF-8 text") from None
        if not text.strip():
            continue
        for record in _records(text, number):
            if isinstance(record, Torn):
                yield record
                continue
            try:
                yield _replay_one(record, number, limits)
            except RecursionError:
                # A line json.loads could just read, compared field by field a level deeper.
                raise ReplayInputError(f"line {number}: nested too deeply to compare") from None


def _as_written(data: Any, cls: Any, number: int, what: str) -> dict[str, Any]:
    """A message's JSON with every field, defaults included (0, "", the enum's zero), so a
    value that became the default compares as that value, not as a missing one."""
    try:
        message = json_format.ParseDict(data, cls(), ignore_unknown_fields=True)
    except json_format.ParseError as exc:
        raise ReplayInputError(f"line {number}: {what}: {exc}") from None
    return _with_defaults(message)


def _with_defaults(message: Any) -> dict[str, Any]:
    return json_format.MessageToDict(message, always_print_fields_with_no_presence=True)


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
        request = request_from_json(record["request"], spec.request)
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
            _paths(_as_written(record["response"], spec.response, number, "response"),
                   _with_defaults(answer), "", outcome.differences)
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


def _open(path: str) -> tuple[IO[bytes] | IO[str], bool]:
    """The log to read a line at a time, and whether to close it."""
    if path == "-":
        if sys.stdin is None:  # started with standard input closed (<&-)
            raise UsageError("-: there is no standard input to read (it is closed)")
        # Bytes, split at "\n" alone; a text stream (no buffer) splits at "\n" and "\r".
        return getattr(sys.stdin, "buffer", sys.stdin), False
    try:
        return open(path, "rb"), True  # noqa: SIM115 - closed by cmd_replay
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror or exc}") from None


def cmd_replay(args: argparse.Namespace) -> int:
    from decider.contract.limits import DEFAULT

    replayed = skipped = differing = torn = 0
    source, owned = _open(args.file)
    try:
        for item in replay(source, DEFAULT):
            if isinstance(item, Torn):
                torn += 1
                if torn <= _MAX_TORN_REPORTS:
                    print(f"decider: {args.file}: line {item.line}: a torn line (cut short by "
                          "a crash or a full disk), skipped", file=sys.stderr)
                continue
            outcome, ran = item
            if not ran:
                skipped += 1
                continue
            replayed += 1
            if outcome.differences:
                differing += 1
                sys.stdout.write(json.dumps(outcome.to_dict(), ensure_ascii=False) + "\n")
    except ReplayInputError as exc:
        raise UsageError(f"{args.file}: {exc}") from None
    except OSError as exc:
        raise UsageError(f"{args.file}: cannot read: {exc.strerror or exc}") from None
    finally:
        if owned:
            source.close()
    print(f"decider: replayed {replayed} decision(s), {differing} differ, {skipped} skipped "
          "(no request logged)" + (f", {torn} torn line(s) skipped" if torn else ""),
          file=sys.stderr)
    return 1 if differing else 0


def add_arguments(replay_cmd: argparse.ArgumentParser) -> None:
    replay_cmd.add_argument("file", help="a file written by `decider serve --decision-log` "
                                         "('-' for stdin)")
    replay_cmd.set_defaults(func=cmd_replay)
