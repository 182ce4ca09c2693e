"""Upstream tables run through `run()` are also decided both ways (raw_parity.py), and every
decision with the spec cache off, cold and warm (support/spec_cache_check.py)."""

from __future__ import annotations

import pytest

from support import spec_cache_check
from upstream import raw_parity


@pytest.fixture(autouse=True)
def _spec_cache_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spec_cache_check, "ACTIVE", True)


@pytest.fixture(autouse=True)
def _decided_both_ways(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    run = getattr(request.module, "run", None)
    if run is not None and callable(run):
        monkeypatch.setattr(request.module, "run", raw_parity.checked(run))
