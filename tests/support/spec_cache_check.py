"""Every decision of a test, made with the spec cache off, cold and warm: the same answer.

tests/conftest.py installs `checked` in place of `decider.core.decide.decide` before any test
module imports it, so every caller (the tables' `run`, the contract adapter, the simulator)
goes through it. It is active for the upstream tables and the property tests (their
conftest.py), where it compares the three plans (as Python objects and as the contract's bytes)
or the three errors, and fails the test on any difference. It also checks every Job manifest
the adapter writes without building it (job_manifests.py) against json's writing of the built
one.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from typing import Any

from decider.core import decide as decide_module
from decider.core.errors import InvalidInput, TooLarge
from decider.core.job_manifests import LazyJobAction
from decider.core.model import Observed, Plan
from decider.core.spec_cache import CACHES, JOBSETS, SPECS

ACTIVE = False
checks = 0


def _outcome(decide: Callable[[Observed], Plan], observed: Observed) -> tuple[Any, Any]:
    from decider.contract import convert

    try:
        plan = decide(observed)
    except (InvalidInput, TooLarge) as exc:
        return None, (type(exc).__name__, str(exc))
    wire = convert.plan_to_proto(plan).SerializeToString(deterministic=True)
    for action in plan.actions:
        if isinstance(action, LazyJobAction):
            # The JSON written without building the Job is json's writing of the built Job.
            fast = action.wire_json()
            assert fast is None or fast == convert._dumps(action.object).encode(), \
                f"{action.name}: the manifest written from pieces differs from the built one"
    return plan, wire


def verify() -> None:
    for cache in CACHES:
        cache.verify()


def install() -> None:
    real = decide_module.decide
    if getattr(real, "spec_cache_checked", False):
        return

    def checked(observed: Observed) -> Plan:
        global checks
        if not ACTIVE or not all(cache.enabled for cache in CACHES):
            return real(observed)
        # The JobSet is what the cache sees; the Jobs may be proto maps, which do not copy.
        before = copy.deepcopy(observed.jobset)
        for cache in CACHES:
            cache.enabled = False
        try:
            off = _outcome(real, dataclasses.replace(observed, jobset=copy.deepcopy(before)))
        finally:
            for cache in CACHES:
                cache.enabled = True
        # Cold: neither the JobSet nor its spec was seen before.
        if type(observed.jobset) is dict:
            JOBSETS.forget(JOBSETS.key(observed.jobset))
            spec = observed.jobset.get("spec")
            if type(spec) is dict:
                SPECS.forget(SPECS.key(spec))
        cold = _outcome(real, observed)
        assert observed.jobset == before, "decide changed its input"
        verify()
        warm = _outcome(real, observed)
        verify()
        assert off[1] == cold[1] == warm[1], "the spec cache changed the answer"
        assert off[0] == cold[0] == warm[0], "the spec cache changed the plan"
        checks += 1
        return real(observed)

    checked.spec_cache_checked = True  # type: ignore[attr-defined]
    decide_module.decide = checked
