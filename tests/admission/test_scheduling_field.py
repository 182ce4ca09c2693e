"""spec.scheduling (upstream's gang scheduling, newer than the CRD the schema is generated from)
is a field strict decoding knows, judged by the gang rules Decide applies."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from decider.core.admission import validate_create

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "leader-workers.yaml"


def _jobset(scheduling: Any) -> dict[str, Any]:
    js = copy.deepcopy(yaml.safe_load(EXAMPLE.read_text()))
    js["spec"]["scheduling"] = scheduling
    return js


@pytest.mark.parametrize("scheduling", [
    pytest.param({}, id="whole-jobset-gang"),
    pytest.param({"schedulingPolicy": {"basic": {}}}, id="basic"),
])
def test_a_valid_scheduling_is_admitted(scheduling: Any) -> None:
    """It was 'strict decoding error: unknown field "spec.scheduling"': a JobSet using the
    documented field never ran under the shim, and our webhook refused it."""
    assert validate_create(_jobset(scheduling)) == []


@pytest.mark.parametrize(("scheduling", "field", "said"), [
    pytest.param({"schedulingPolicy": {"gang": {"minCount": 999}}},
                 "spec.scheduling.schedulingPolicy.gang.minCount",
                 'strict decoding error: unknown field '
                 '"spec.scheduling.schedulingPolicy.gang.minCount"',
                 id="superseded-top-level-min-count"),
])
def test_an_invalid_scheduling_is_refused_as_decide_refuses_it(scheduling: Any, field: str,
                                                               said: str) -> None:
    errors = validate_create(_jobset(scheduling))
    assert [(e.field, e.message) for e in errors] == [(field, said)]
