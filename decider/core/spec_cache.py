"""Parsed JobSets and JobSet specs, kept by content so that an unchanged one is read once.

A JobSet is sent again and again unchanged (every event on one of its Jobs is a pass), and its
spec stays the same while its status changes; reading and validating them was a third of a
small pass. JOBSETS maps a whole JobSet object's content to its typed view (jobset.py), SPECS a
spec's content to what `jobset_spec` made of it, for a JobSet whose status or metadata changed.
The decider stays stateless in meaning: the answer is a function of the request alone, with
the caches on or off (tests/support/spec_cache_check.py decides every upstream table and
property test both ways).

- The key is the object serialized by `marshal` (format 0): a C-speed encoding that, unlike JSON,
  tells a tuple from a list, True from 1 and 1.0 from 1, and refuses subclasses and foreign
  types, so two objects share an entry only if they are equal value for value and type for
  type. Keys are compared in full, not by a digest. What marshal refuses is parsed every time.
- What is cached is parsed from a private copy (`marshal.loads` of the key), never from the
  caller's dicts: a caller may change its JobSet after a decision without changing the entry.
  Nothing a pass reads from an entry is written to: its typed parts are frozen, its JSON (Job
  and PVC templates, the status) is only ever copied into plans (`verify` checks it in tests).
- What raises while read is not cached: the error is found again, in the same order.
- Bounded in entries and in key bytes, least recently used out first: 256 entries and 4 MiB
  of keys each. A parsed JobSet takes about ten times its key in memory (measured: 1.3 MB of
  JSON, 4,000 replicated Jobs, kept ~25 MB with its spec), so a worker keeps at most ~80 MB
  for the largest JobSets and ~1 MB for 256 typical ones (a few KB each). A spec parsed for a
  JobSet entry shares that entry's copy. Each process has its own: a decision worker keeps
  what it saw.
"""

from __future__ import annotations

import marshal
from collections import OrderedDict
from typing import Any, NamedTuple

MAX_ENTRIES = 256
MAX_KEY_BYTES = 4 * 1024 * 1024


class Entry(NamedTuple):
    value: Any
    # The private copy the value was parsed from.
    source: Any


class ContentCache:
    def __init__(self, max_entries: int = MAX_ENTRIES, max_bytes: int = MAX_KEY_BYTES) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.enabled = True
        self._entries: OrderedDict[bytes, Entry] = OrderedDict()
        # id(source) -> key: an entry's own copy, handed back by the adapter, is found without
        # encoding it again. The entry holds the copy, so no other live object has its id.
        self._by_source: dict[int, bytes] = {}
        self._bytes = 0
        self.hits = 0
        self.misses = 0

    def key(self, obj: dict[str, Any]) -> bytes | None:
        if not self.enabled:
            return None
        try:
            key = marshal.dumps(obj, 0)
        except ValueError:  # a type marshal refuses, or nesting beyond its limit
            return None
        return key if len(key) <= self.max_bytes else None

    def get(self, key: bytes | None) -> Any:
        if key is None:
            return None
        found = self._entries.get(key)
        if found is None:
            self.misses += 1
            return None
        self.hits += 1
        self._entries.move_to_end(key)
        return found.value

    def get_by_source(self, obj: Any) -> Any:
        """The value cached for `obj` when `obj` is an entry's own copy; else None."""
        if not self.enabled:
            return None
        key = self._by_source.get(id(obj))
        if key is None:
            return None
        self.hits += 1
        self._entries.move_to_end(key)
        return self._entries[key].value

    def source_of(self, key: bytes | None) -> Any:
        """The entry's own copy of what `key` encodes, if it is cached."""
        entry = self._entries.get(key) if key is not None else None
        return entry.source if entry is not None else None

    @staticmethod
    def private_copy(key: bytes) -> dict[str, Any]:
        return marshal.loads(key)

    def put(self, key: bytes, value: Any, source: Any) -> None:
        if key in self._entries:
            return
        self._entries[key] = Entry(value, source)
        self._by_source[id(source)] = key
        self._bytes += len(key)
        while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
            old, entry = self._entries.popitem(last=False)
            self._drop(old, entry)

    def _drop(self, key: bytes, entry: Entry) -> None:
        self._bytes -= len(key)
        if self._by_source.get(id(entry.source)) == key:
            del self._by_source[id(entry.source)]

    def forget(self, key: bytes | None) -> None:
        entry = self._entries.pop(key, None) if key is not None else None
        if entry is not None:
            self._drop(key, entry)  # type: ignore[arg-type]

    def verify(self) -> None:
        """AssertionError if an entry's JSON was written to since it was cached."""
        for key, entry in self._entries.items():
            assert marshal.dumps(entry.source, 0) == key, "a cached JobSet was modified"

    def clear(self) -> None:
        self._entries.clear()
        self._by_source.clear()
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._entries)


JOBSETS = ContentCache()
SPECS = ContentCache()
CACHES = (JOBSETS, SPECS)
