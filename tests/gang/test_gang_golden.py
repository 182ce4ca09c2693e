"""Golden manifests per API version and target.

Each ``golden/<case>/input.json`` holds ``{"object": ..., "existing": [...]}``; every
``golden/<case>/<target>.json`` next to it is the expected ``plan_gang(...).to_dict()``.
Regenerate with ``UPDATE_GOLDEN=1 pytest tests/gang/test_gang_golden.py`` and review the diff
by hand before committing: the files are the reviewed statement of what we emit.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from decider.core.gang import API_VERSIONS, plan_gang

GOLDEN = Path(__file__).parent / "golden"
# File stem -> (api_version, target)
TARGETS = {
    **{v.split("/")[1]: (v, "kubernetes") for v in API_VERSIONS},
    "scheduler-plugins": (API_VERSIONS[-1], "scheduler-plugins"),
    "volcano": (API_VERSIONS[-1], "volcano"),
}
CASES = sorted(p.name for p in GOLDEN.iterdir() if (p / "input.json").exists())


@pytest.mark.parametrize("stem", sorted(TARGETS))
@pytest.mark.parametrize("case", CASES)
def test_golden(case: str, stem: str) -> None:
    data = json.loads((GOLDEN / case / "input.json").read_text())
    api_version, target = TARGETS[stem]
    got = plan_gang(data["object"], data.get("existing", []), api_version, target).to_dict()
    path = GOLDEN / case / f"{stem}.json"
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(json.dumps(got, indent=2, sort_keys=True) + "\n")
    assert path.exists(), f"missing {path}; run with UPDATE_GOLDEN=1 and review"
    assert got == json.loads(path.read_text())


def test_every_case_has_all_targets() -> None:
    assert CASES
    for case in CASES:
        assert {p.stem for p in (GOLDEN / case).glob("*.json")} == {"input", *TARGETS}
