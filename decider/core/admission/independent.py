"""Independent reconciliation mode (a feature of this project; seed 000, upstream KEP-1172).

A JobSet annotated `jobset.sigs.k8s.io/reconciliation-mode: Independent` (or, in the KEP
text's older spelling, `jobset.sigs.k8s.io/skip-suspend-reconciliation: "true"`) hands each
child Job's spec.suspend to another controller (Kueue suspends and resumes Jobs one by one).
The controller cannot tell "unset" from "false" in spec.suspend (nil already means "run"), so
the mode requires spec.suspend to stay unset; and switching the mode on a live JobSet would
change who owns Job suspension mid-flight, so both annotations are immutable after creation.
"""

from __future__ import annotations

from typing import Any

from decider.core import constants as c
from decider.core.admission._util import as_dict, quote
from decider.core.errors import FieldError

_VALUES: dict[str, tuple[str, ...]] = {
    c.RECONCILIATION_MODE: (c.RECONCILIATION_MODE_INDEPENDENT,),
    c.SKIP_SUSPEND_RECONCILIATION: ("true", "false"),
}


def _annotations(obj: Any) -> dict[str, Any]:
    return as_dict(as_dict(as_dict(obj).get("metadata")).get("annotations"))


def is_independent(obj: Any) -> bool:
    """Whether child Jobs' suspend is left to someone else (exact annotation values only)."""
    ann = _annotations(obj)
    return (
        ann.get(c.RECONCILIATION_MODE) == c.RECONCILIATION_MODE_INDEPENDENT
        or ann.get(c.SKIP_SUSPEND_RECONCILIATION) == "true"
    )


def _field(key: str) -> str:
    return f"metadata.annotations[{key}]"


def value_errors(obj: Any) -> list[FieldError]:
    """An unknown value would silently mean the default mode; refuse it instead."""
    errs: list[FieldError] = []
    ann = _annotations(obj)
    for key, allowed in _VALUES.items():
        value = ann.get(key)
        if isinstance(value, str) and value not in allowed:
            supported = ", ".join(quote(a) for a in allowed)
            errs.append(
                FieldError(
                    _field(key), f"unsupported value {quote(value)}: supported values: {supported}"
                )
            )
    return errs


def suspend_errors(obj: Any) -> list[FieldError]:
    if is_independent(obj) and as_dict(as_dict(obj).get("spec")).get("suspend") is not None:
        return [
            FieldError(
                "spec.suspend",
                "must not be set when the JobSet's reconciliation mode is Independent "
                f"(annotation {c.RECONCILIATION_MODE}: {c.RECONCILIATION_MODE_INDEPENDENT} or "
                f'{c.SKIP_SUSPEND_RECONCILIATION}: "true"): child Jobs are suspended and '
                "resumed individually by another controller",
            )
        ]
    return []


def create_errors(obj: Any) -> list[FieldError]:
    return value_errors(obj) + suspend_errors(obj)


def update_errors(new: Any, old: Any) -> list[FieldError]:
    """Both annotations are fixed at creation: adding, removing or changing either one would
    move Job suspension between controllers on a live JobSet."""
    errs: list[FieldError] = []
    new_ann, old_ann = _annotations(new), _annotations(old)
    for key in _VALUES:
        if new_ann.get(key) != old_ann.get(key):
            errs.append(
                FieldError(
                    _field(key),
                    "field is immutable: the reconciliation mode is fixed at creation, because "
                    "it decides which controller owns the child Jobs' suspend",
                )
            )
    errs.extend(suspend_errors(new))
    return errs
