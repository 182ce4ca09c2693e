"""Suite-wide: the spec cache is checked (tests/support/spec_cache_check.py).

Installed here, before any test module imports `decide`, so every caller sees the checked one.
DECIDER_SPEC_CACHE=off runs the whole suite with the cache off.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from support import spec_cache_check

# Every test that waits on a process, a thread, a server or the clock is marked `waits`.
pytest_plugins = ["support.waits_check"]

spec_cache_check.install()

from decider.contract.jobset_texts import TEXTS  # noqa: E402
from decider.core.spec_cache import CACHES  # noqa: E402

if os.environ.get("DECIDER_SPEC_CACHE") == "off":
    for cache in CACHES:
        cache.enabled = False


@pytest.fixture(autouse=True)
def _cached_specs_stay_unchanged() -> Iterator[None]:
    # Each test starts with empty caches: what it leaves is checked, and checking stays as
    # cheap as the test's own JobSets (a scaling test's would make every later check slow).
    for cache in CACHES:
        cache.clear()
    TEXTS.clear()
    yield
    spec_cache_check.verify()
