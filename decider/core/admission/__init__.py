"""JobSet admission as pure functions: defaulting and validation, as upstream's API server,
CRD schema, CEL rules and webhooks do it (spec/jobset.md §3), with no I/O.

    default_jobset(obj) -> defaulted deep copy
    validate_create(obj, feature_gates=None, existing_pvcs=None) -> list[FieldError]
    validate_update(new, old, feature_gates=None) -> list[FieldError]

All three are total over JSON-like input: anything malformed comes back as errors naming the
field, never as an exception. DELIBERATE_DIFFERENCES lists where we knowingly differ.
"""

from __future__ import annotations

from decider.core.admission.create import validate_create
from decider.core.admission.defaulting import default_jobset
from decider.core.admission.differences import DELIBERATE_DIFFERENCES
from decider.core.admission.update import validate_update
from decider.core.constants import GATE_DEFAULTS as KNOWN_GATES

__all__ = [
    "DELIBERATE_DIFFERENCES",
    "KNOWN_GATES",
    "default_jobset",
    "validate_create",
    "validate_update",
]
