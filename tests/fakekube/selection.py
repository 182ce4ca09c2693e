"""Label and field selectors as the fake API server supports them: equality, inequality and
existence of labels; metadata.name and metadata.namespace for fields. A set-based term or another
field is refused with 400, as a real server refuses what it does not support.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from .errors import ApiError


def parse_label_selector(selector: str) -> Callable[[dict[str, str]], bool]:
    if not selector:
        return lambda labels: True
    terms: list[Callable[[dict[str, str]], bool]] = []
    for raw in selector.split(","):
        term = raw.strip()
        if not term:
            continue
        if "!=" in term:
            k, v = (s.strip() for s in term.split("!=", 1))
            terms.append(lambda lb, k=k, v=v: lb.get(k) != v)
        elif "==" in term or "=" in term:
            k, v = (s.strip() for s in re.split("==|=", term, maxsplit=1))
            terms.append(lambda lb, k=k, v=v: lb.get(k) == v)
        elif term.startswith("!"):
            absent = term[1:].strip()
            terms.append(lambda lb, k=absent: k not in lb)
        elif " in " in term or " notin " in term or "(" in term:
            raise ApiError(400, "BadRequest", f"unsupported label selector term {term!r}")
        else:
            terms.append(lambda lb, k=term: k in lb)
    return lambda labels: all(t(labels) for t in terms)


def parse_field_selector(selector: str) -> Callable[[dict[str, Any]], bool]:
    if not selector:
        return lambda obj: True
    terms: list[Callable[[dict[str, Any]], bool]] = []
    for raw in selector.split(","):
        negate = "!=" in raw
        field, value = (s.strip() for s in re.split("!=|==|=", raw, maxsplit=1))
        if field not in ("metadata.name", "metadata.namespace"):
            raise ApiError(
                400, "BadRequest", f'field label not supported: "{field}" (fake API server)'
            )
        key = field.split(".", 1)[1]
        terms.append(
            lambda o, key=key, value=value, negate=negate: (
                (o["metadata"].get(key, "") == value) != negate
            )
        )
    return lambda obj: all(t(obj) for t in terms)
