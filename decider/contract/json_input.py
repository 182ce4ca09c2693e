"""JSON text from a request, parsed into plain data that every later step can handle.

Three things a careless or hostile client can put in valid JSON would otherwise surface deep in
the decision or on the way out, as a crash or an unanswered RPC:
- nesting deeper than any Kubernetes object, which makes recursive copies and serializers fail;
- a lone surrogate escape (`"\\ud800"`): valid JSON, but not Unicode, so it cannot be encoded
  into the UTF-8 the answer is written in;
- numbers out of every range (`1e999` parses as infinity; an integer of 400 digits parses, but
  no float holds it: the API server's decoder refuses both).
Each is refused here, naming the field, before the core sees the object.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections import OrderedDict
from typing import Any

import orjson

from decider.core.errors import InvalidInput

# No Kubernetes object nests anywhere near this (a pod template's deepest field is ~20 levels
# down); Python's own parser gives up near 1,000.
DEFAULT_MAX_DEPTH = 100
_MAX_PATH_SHOWN = 160

# A \uD800-\uDFFF escape in the text: only then can the parsed object hold a lone surrogate
# (a well-formed pair decodes to one character). The pattern may also hit an escaped backslash
# followed by such text; the walk below then finds nothing.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_SLOW = object()
# The largest integer a float64 holds; a JSON integer past int64 is a float64 to the API
# server's decoder, which refuses one past this.
_FLOAT_MAX_INT = int(sys.float_info.max)


def child_path(path: str, key: Any) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
        return f"{path}.{key}" if path else key
    # Keys like label names hold dots and slashes; quote them so the path stays readable.
    return f"{path}[{json.dumps(key)}]"


def _has_lone_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _clean(obj: Any, max_depth: int, surrogates: bool) -> bool:
    """True when nothing in `obj` would be refused: the fast walk, with no paths kept (every
    request's objects go through it)."""
    stack: list[tuple[Any, int]] = [(obj, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > max_depth:
            return False
        if type(value) is dict:
            if surrogates and any(_has_lone_surrogate(k) for k in value):
                return False
            items: Any = value.values()
        else:
            items = value
        for item in items:
            kind = type(item)
            if kind is dict or kind is list:
                stack.append((item, depth + 1))
            elif kind is float:
                if not math.isfinite(item):
                    return False
            elif kind is int:
                if not -_FLOAT_MAX_INT <= item <= _FLOAT_MAX_INT and _overflows(item):
                    return False
            elif surrogates and kind is str and _has_lone_surrogate(item):
                return False
    return True


def _overflows(number: int) -> bool:
    """Whether a JSON integer rounds past float64's range (as Go's ParseFloat finds it)."""
    try:
        float(number)
    except OverflowError:
        return True
    return False


def _out_of_range(value: Any) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    return type(value) is int and not -_FLOAT_MAX_INT <= value <= _FLOAT_MAX_INT \
        and _overflows(value)


def check_tree(obj: Any, field: str, max_depth: int, *, surrogates: bool,
               bare_paths: bool = False) -> None:
    """Refuse nesting deeper than max_depth, non-finite numbers and (if asked) lone surrogates.

    Iterative, so it cannot itself run out of stack on the input it is there to refuse. The fast
    walk clears almost every object; only a refused one is walked again to name the place.
    bare_paths: name a place inside the object by its path alone (`spec.x`), as the core names
    the fields of the JobSet it decides on, rather than `field.spec.x`.
    """

    if type(obj) not in (dict, list) or _clean(obj, max_depth, surrogates):
        if _out_of_range(obj):
            raise InvalidInput.at(field, "is a number out of range")
        return

    def name(path: str) -> str:
        if len(path) > _MAX_PATH_SHOWN:
            # A deep path says little past its start; the message must stay one readable line.
            path = path[:_MAX_PATH_SHOWN] + "..."
        if not path:
            return field
        if bare_paths and not path.startswith("["):
            return path
        return field + path if path.startswith("[") else f"{field}.{path}"

    def deeper(item: Any) -> bool:
        return isinstance(item, dict | list | float | int) or (surrogates and isinstance(item, str))

    stack: list[tuple[Any, str, int]] = [(obj, "", 1)]
    while stack:
        value, path, depth = stack.pop()
        if isinstance(value, dict | list) and depth > max_depth:
            raise InvalidInput.at(name(path), f"is nested more than {max_depth} levels deep")
        if isinstance(value, dict):
            for key, item in value.items():
                if surrogates and _has_lone_surrogate(key):
                    raise InvalidInput.at(name(path), f"key {json.dumps(key)} is not valid "
                                                      "Unicode (a lone surrogate)")
                if deeper(item):
                    stack.append((item, child_path(path, key), depth + 1))
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if deeper(item):
                    stack.append((item, child_path(path, i), depth + 1))
        elif isinstance(value, float | int):
            if _out_of_range(value):
                raise InvalidInput.at(name(path), "is a number out of range")
        elif isinstance(value, str) and _has_lone_surrogate(value):
            raise InvalidInput.at(name(path), f"{json.dumps(value[:64])} is not valid Unicode "
                                              "(a lone surrogate)")


def _floatless_within(obj: Any, max_depth: int) -> bool:
    """No float anywhere in `obj`, and no nesting deeper than max_depth."""
    stack: list[tuple[Any, int]] = [(obj, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > max_depth:
            return False
        for item in value.values() if type(value) is dict else value:
            kind = type(item)
            if kind is dict or kind is list:
                stack.append((item, depth + 1))
            elif kind is float:
                return False
    return True


class _Verdicts:
    """Texts _fast_load found orjson reads exactly, so the walk is not repeated on the same
    text (a JobSet is sent again and again unchanged). A pure function of the text: keyed by
    it in full, bounded in bytes and entries, oldest out first; per process."""

    def __init__(self, max_entries: int = 1024, max_bytes: int = 8 * 1024 * 1024) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._texts: OrderedDict[tuple[int, str], None] = OrderedDict()
        self._bytes = 0

    def __contains__(self, key: tuple[int, str]) -> bool:
        if key in self._texts:
            self._texts.move_to_end(key)
            return True
        return False

    def add(self, key: tuple[int, str]) -> None:
        if len(key[1]) > self.max_bytes:
            return
        self._texts[key] = None
        self._bytes += len(key[1])
        while len(self._texts) > self.max_entries or self._bytes > self.max_bytes:
            old, _ = self._texts.popitem(last=False)
            self._bytes -= len(old[1])


_VERDICTS = _Verdicts()


def _fast_load(text: str, max_depth: int) -> Any:
    """`text` read by orjson when that is certainly what json and the checks below would
    make of it, else _SLOW.

    orjson refuses what would fail the checks (a lone surrogate, NaN and Infinity, a number
    that overflows to infinity) and every text json refuses, so a text it reads needs only the
    depth check. It reads an integer beyond 64 bits as a float, so a text whose reading holds
    any float goes to json (Kubernetes objects hold none: quantities are strings). Its error
    messages are not json's: a text it refuses goes to json too, which reads it or says why
    not, as it always did.
    """
    try:
        obj = orjson.loads(text)
    except orjson.JSONDecodeError:
        return _SLOW
    key = (max_depth, text)
    if key in _VERDICTS:
        return obj
    kind = type(obj)
    if kind is float or ((kind is dict or kind is list) and
                         not _floatless_within(obj, max_depth)):
        return _SLOW
    _VERDICTS.add(key)
    return obj


def load(text: str, field: str, max_depth: int = DEFAULT_MAX_DEPTH, *,
         in_field_paths: bool = False) -> Any:
    """Parse `text` (the request field `field`); InvalidInput naming the field when it is not
    JSON every later step can handle.

    in_field_paths: name problems inside the object by their path alone (`spec.x`), as the core
    names the fields of the JobSet it decides on, rather than `field.spec.x`.
    """
    if not text:
        raise InvalidInput.at(field, "Required value")
    obj = _fast_load(text, max_depth)
    if obj is not _SLOW:
        return obj
    try:
        obj = json.loads(text)
    except RecursionError:
        raise InvalidInput.at(field, f"is nested more than {max_depth} levels deep") from None
    except ValueError as exc:
        raise InvalidInput.at(field, f"is not valid JSON: {exc}") from None
    check_tree(obj, field, max_depth, surrogates=_SURROGATE_ESCAPE.search(text) is not None,
               bare_paths=in_field_paths)
    return obj
