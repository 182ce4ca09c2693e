"""Upstream tables run through `run()` are also decided both ways (raw_parity.py)."""

from __future__ import annotations

import pytest

from upstream import raw_parity


@pytest.fixture(autouse=True)
def _decided_both_ways(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    run = getattr(request.module, "run", None)
    if run is not None and callable(run):
        monkeypatch.setattr(request.module, "run", raw_parity.checked(run))
