"""Every decision of the property tests is also made with the spec cache off, cold and warm
(support/spec_cache_check.py)."""

from __future__ import annotations

import pytest

from support import spec_cache_check


@pytest.fixture(autouse=True)
def _spec_cache_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spec_cache_check, "ACTIVE", True)
