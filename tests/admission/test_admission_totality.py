"""Totality: random JSON-like junk anywhere in a JobSet never makes admission raise."""

from __future__ import annotations

import contextlib
import copy
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from decider.core.admission import default_jobset, validate_create, validate_update
from decider.core.errors import FieldError

from .jobsets import jobset

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**64), max_value=2**64),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.sampled_from(
        [
            "InOrder",
            "Indexed",
            "All",
            "RestartJob",
            "InPlaceRestart",
            "leader",
            "worker",
            "Independent",
            "true",
            "(?=x)",
            "a.b",
            "",
        ]
    ),
)
junk = st.recursive(
    _scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(
            st.sampled_from(
                [
                    "name",
                    "replicas",
                    "template",
                    "spec",
                    "dependsOn",
                    "status",
                    "metadata",
                    "suspend",
                    "rules",
                    "templates",
                    "x",
                ]
            ),
            children,
            max_size=4,
        ),
    ),
    max_leaves=12,
)
# Places in a JobSet where junk is spliced in.
_PATHS: list[tuple[Any, ...]] = [
    (),
    ("metadata",),
    ("metadata", "annotations"),
    ("spec",),
    ("spec", "replicatedJobs"),
    ("spec", "replicatedJobs", 0),
    ("spec", "replicatedJobs", 1, "replicas"),
    ("spec", "replicatedJobs", 1, "dependsOn"),
    ("spec", "replicatedJobs", 0, "template"),
    ("spec", "replicatedJobs", 0, "template", "spec"),
    ("spec", "replicatedJobs", 0, "template", "spec", "template", "spec"),
    ("spec", "replicatedJobs", 0, "template", "spec", "template", "spec", "containers"),
    ("spec", "network"),
    ("spec", "successPolicy"),
    ("spec", "failurePolicy"),
    ("spec", "failurePolicy", "rules"),
    ("spec", "startupPolicy"),
    ("spec", "coordinator"),
    ("spec", "managedBy"),
    ("spec", "suspend"),
    ("spec", "volumeClaimPolicies"),
    ("status",),
]


def _splice(base: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    out = copy.deepcopy(base)
    cur = out
    for step in path[:-1]:
        cur = cur[step]
    cur[path[-1]] = value
    return out


@st.composite
def junk_jobsets(draw: st.DrawFn) -> Any:
    base = default_jobset(jobset())
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        path = draw(st.sampled_from(_PATHS))
        # An earlier splice may have replaced a parent of this path; then keep what we have.
        with contextlib.suppress(KeyError, IndexError, TypeError):
            base = _splice(base, path, draw(junk))
    return base


_gates = st.one_of(
    st.none(),
    st.dictionaries(
        st.sampled_from(["InPlaceRestart", "RestartJob", "ElasticJobSet", "Nope"]),
        st.one_of(st.booleans(), junk),
        max_size=4,
    ),
)
_pvcs = st.one_of(st.none(), st.dictionaries(st.sampled_from(["data-js", "x"]), junk, max_size=2))


def _all_field_errors(errors: Any) -> bool:
    return isinstance(errors, list) and all(isinstance(e, FieldError) for e in errors)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(obj=junk_jobsets(), other=junk_jobsets(), gates=_gates, pvcs=_pvcs)
def test_junk_never_raises(obj, other, gates, pvcs):
    defaulted = default_jobset(obj)
    errors = validate_create(obj, gates, pvcs)
    assert _all_field_errors(errors)
    # Defaulting is idempotent, so validating a defaulted object gives the same answer.
    assert default_jobset(defaulted) == defaulted
    assert validate_create(defaulted, gates, pvcs) == errors
    assert _all_field_errors(validate_update(obj, other, gates))
    assert _all_field_errors(validate_update(other, obj, gates))


@settings(max_examples=80, deadline=None)
@given(obj=junk, other=junk)
def test_pure_junk_never_raises(obj, other):
    default_jobset(obj)
    errors = validate_create(obj)
    assert _all_field_errors(errors) and errors, "junk is never a valid JobSet"
    assert _all_field_errors(validate_update(obj, other))
