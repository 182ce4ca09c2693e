"""The JobSet of a request, found by its JSON text when the same text was decided before.

A JobSet is sent again and again unchanged (a pass for every event on one of its Jobs). Its
text is then the same, and so is everything made of it: the parsed object, the checks on it
(size, nesting, replica limits) and the typed view the core keeps (decider/core/spec_cache.py).
This maps a text, decided twice, to the core's own copy of its object, which the core then finds
by identity: the JSON is not read again, nor encoded again to be looked up. For a JobSet of
4,000 replicated Jobs that is ~15 ms a pass; for 10 Jobs ~10 µs.

The copy handed out is the cache's: the core never writes to what it decides on (the property
tests check it), and nothing else on the worker path gets it. Keyed by the whole text and the
limits that judged it; bounded in text bytes and entries, oldest out first; per process.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from decider.contract.limits import Limits
from decider.core.spec_cache import JOBSETS

MAX_ENTRIES = 256
MAX_TEXT_BYTES = 4 * 1024 * 1024
_SEEN = object()

Key = tuple[str, int, int, int, int, int]


def _key(text: str, lim: Limits) -> Key:
    return (text, lim.max_object_bytes, lim.max_json_depth, lim.max_replicated_jobs,
            lim.max_replicas, lim.max_jobs)


class JobSetTexts:
    def __init__(self, max_entries: int = MAX_ENTRIES,
                 max_bytes: int = MAX_TEXT_BYTES) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._entries: OrderedDict[Key, Any] = OrderedDict()
        self._bytes = 0

    def get(self, text: str, lim: Limits) -> dict[str, Any] | None:
        """The core's copy of the JobSet of `text`, read and checked under `lim` before."""
        if not JOBSETS.enabled:
            return None
        key = _key(text, lim)
        found = self._entries.get(key)
        if found is None or found is _SEEN:
            return None
        self._entries.move_to_end(key)
        return found

    def decided(self, text: str, lim: Limits, jobset: Any) -> None:
        """`jobset`, read from `text` under `lim`, was decided on. The second time, the core's
        copy is looked up (one more encoding of it) and kept for the next ones."""
        if not JOBSETS.enabled or len(text) > self.max_bytes:
            return
        key = _key(text, lim)
        found = self._entries.get(key)
        if found is None:
            self._add(key, _SEEN)
        elif found is _SEEN:
            source = JOBSETS.source_of(JOBSETS.key(jobset)) if type(jobset) is dict else None
            if source is not None:
                self._entries[key] = source

    def _add(self, key: Key, value: Any) -> None:
        self._entries[key] = value
        self._bytes += len(key[0])
        while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
            old, _ = self._entries.popitem(last=False)
            self._bytes -= len(old[0])

    def clear(self) -> None:
        self._entries.clear()
        self._bytes = 0


TEXTS = JobSetTexts()
