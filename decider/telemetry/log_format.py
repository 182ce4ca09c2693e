"""What a decision-log line is, for the server that writes it and `decider replay` that reads it.

- **One record per line, lines end in "\\n" and nothing else.** JSON allows U+2028, U+2029 and
  U+0085 raw inside strings, and an annotation in a pod template may hold them; a reader that
  splits lines the way Python's str.splitlines or a text editor does breaks the record there.
  They are written escaped (`\\u2028`), which every JSON reader reads back as the same string.
- **The request, as protobuf's JSON mapping.** A Timestamp outside the mapping's range (years
  0001-9999, or nanos out of range) has no JSON form: the decider refuses such a `now` as
  INVALID_ARGUMENT, and its record still holds the request, the out-of-range value written as
  its two numbers, `{"seconds": "253402300800", "nanos": 0}`, which request_from_json reads
  back into the same message.
- **A torn line** is what a crash (kill -9 mid-write) or a full disk leaves: the start of a
  record and no end. The writer starts a fresh line after one; a line written before that rule
  may hold a torn start and a whole record after it (`split_torn`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

# Characters JSON leaves raw that line readers split on, with their JSON escapes.
_LINE_BREAKS = {"\u2028": "\\u2028", "\u2029": "\\u2029", "\u0085": "\\u0085"}
_LINE_BREAKS_UTF8 = tuple((c.encode(), e.encode()) for c, e in _LINE_BREAKS.items())
# Every record the server writes starts so (decision_log.record_line: "time", then
# "decision_id"); no object inside a record has these two keys in a row.
RECORD_START = re.compile(r'\{"time":"[0-9TZ:.+-]*","decision_id":"')
_TIME_TYPES = frozenset({"google.protobuf.Timestamp", "google.protobuf.Duration"})


def line_safe(text: str) -> str:
    """JSON text with U+2028, U+2029 and U+0085 escaped (they only occur inside strings)."""
    for char, escape in _LINE_BREAKS.items():
        if char in text:
            text = text.replace(char, escape)
    return text


def line_safe_utf8(data: bytes) -> bytes:
    """line_safe for UTF-8 JSON: each is a whole multi-byte sequence, never part of another."""
    for char, escape in _LINE_BREAKS_UTF8:
        if char in data:
            data = data.replace(char, escape)
    return data


# ---- the request ---------------------------------------------------------------------------

_Path = tuple[tuple[FieldDescriptor, int | None], ...]


def _is_time(field: FieldDescriptor) -> bool:
    return field.message_type is not None and field.message_type.full_name in _TIME_TYPES


def _is_map(field: FieldDescriptor) -> bool:
    return field.message_type is not None and field.message_type.GetOptions().map_entry


def _repeated(field: FieldDescriptor) -> bool:
    return bool(field.is_repeated)


def _unmappable_times(message: Message, path: _Path = ()) -> Iterator[tuple[_Path, Message]]:
    """Timestamps and Durations set in `message` that protobuf's JSON mapping refuses."""
    for field, value in message.ListFields():
        if field.message_type is None or _is_map(field):
            continue
        if _is_time(field):
            if not _repeated(field):
                try:
                    value.ToJsonString()
                except ValueError:
                    yield ((*path, (field, None)), value)
        elif _repeated(field):
            for i, item in enumerate(value):
                yield from _unmappable_times(item, (*path, (field, i)))
        else:
            yield from _unmappable_times(value, (*path, (field, None)))


def _at(message: Message, path: _Path) -> Message:
    for field, index in path:
        message = getattr(message, field.name)
        if index is not None:
            message = message[index]  # type: ignore[index]
    return message


def request_json(message: Message) -> dict[str, Any]:
    """The request as protobuf's JSON mapping, an out-of-range Timestamp or Duration as its
    two numbers (see the module's docstring)."""
    try:
        return json_format.MessageToDict(message)
    except json_format.SerializeToJsonError:
        pass
    raw = list(_unmappable_times(message))
    mappable = type(message)()
    mappable.CopyFrom(message)
    for path, _ in raw:
        *parents, (field, _index) = path
        _at(mappable, tuple(parents)).ClearField(field.name)
    out = json_format.MessageToDict(mappable)
    for path, value in raw:
        node: Any = out
        for field, index in path[:-1]:
            node = node.setdefault(field.json_name, {} if index is None else [])
            if index is not None:
                node = node[index]
        node[path[-1][0].json_name] = {"seconds": str(value.seconds),  # type: ignore[attr-defined]
                                       "nanos": value.nanos}  # type: ignore[attr-defined]
    return out


def _take_raw_times(data: Any, descriptor: Descriptor, path: _Path,
                    out: list[tuple[_Path, dict[str, Any]]]) -> None:
    if not isinstance(data, dict):
        return
    for key in list(data):
        field = descriptor.fields_by_camelcase_name.get(key) or descriptor.fields_by_name.get(key)
        if field is None or field.message_type is None or _is_map(field):
            continue
        value = data[key]
        if _is_time(field):
            if not _repeated(field) and isinstance(value, dict):
                out.append(((*path, (field, None)), data.pop(key)))
        elif _repeated(field):
            if isinstance(value, list):
                for i, item in enumerate(value):
                    _take_raw_times(item, field.message_type, (*path, (field, i)), out)
        else:
            _take_raw_times(value, field.message_type, (*path, (field, None)), out)


def request_from_json(data: dict[str, Any], cls: type[Message]) -> Message:
    """The request request_json wrote; json_format.ParseError naming what is wrong."""
    raw: list[tuple[_Path, dict[str, Any]]] = []
    _take_raw_times(data, cls.DESCRIPTOR, (), raw)
    message = json_format.ParseDict(data, cls())
    for path, numbers in raw:
        *parents, (field, _index) = path
        where = ".".join(f.json_name for f, _ in path)
        try:
            seconds, nanos = int(numbers.get("seconds", 0)), int(numbers.get("nanos", 0))
            target = getattr(_at(message, tuple(parents)), field.name)
            target.seconds, target.nanos = seconds, nanos
        except (TypeError, ValueError) as exc:
            raise json_format.ParseError(f"{where}: seconds and nanos must be integers of "
                                         f"64 and 32 bits: {exc}") from None
    return message


# ---- reading -------------------------------------------------------------------------------

def split_torn(text: str) -> tuple[str, str | None]:
    """A line that is not a whole record: (the torn start, a whole record written after it
    on the same line, if one is). A record's start cannot occur inside a JSON string (its
    quotes would be escaped), so the last one on the line begins the record, if any."""
    at = 0
    for found in RECORD_START.finditer(text, 1):
        at = found.start()
    if at <= 0:
        return text, None
    return text[:at], text[at:]
