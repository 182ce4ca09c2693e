"""Indexes over an informer's cache, as client-go's cache.Indexer keeps them.

A pass reads a handful of objects out of caches that may hold every pod and gang object of the
cluster; a scan per pass made each pass cost the size of the caches (with 10,000 JobSets, 10^8
predicate calls to pass each once). Each informer that is read by something other than
namespace and name keeps an `Indexer`: named index functions map an object to the values it is
filed under, and the informer refiles it on every add, update and delete of its store, under
the store's lock (so an index never disagrees with its store). A change costs the index
functions' values of the old and the new object, however much the cache holds.

Lookups return objects in the store's own order (the order of first insertion of each key, as a
scan of the store met them): the objects a pass sends, and so the bytes of its DecideRequest, do
not depend on whether they were found by scan or by index.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any

from shim.owned import GANG_NAME_PREFIX

Obj = dict[str, Any]
# An informer's store key: (namespace, name).
StoreKey = tuple[str, str]
IndexFunc = Callable[[Obj], Iterable[Hashable]]

# Gang objects (Workloads, PodGroups) by every JobSet name that may_be_gang_name accepts for
# them, short of the 52-character rule (see gang_values).
GANG_NAMES = "gang-names"
# JobSets by name and, past 52 characters, by their first 52 (see jobset_values_for_gang).
JOBSET_NAMES = "jobset-names"
# Pods by (namespace, jobset-name label).
POD_JOBSET = "pod-jobset"

JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
_NAME, _LONG = "name", "long"


class Indexer:
    """The indexes of one store: its owner calls `stored` and `deleted` as it changes the store,
    and `keys` to read; it does no locking of its own (the store's lock covers it)."""

    def __init__(self, funcs: Mapping[str, IndexFunc]) -> None:
        self._funcs = dict(funcs)
        # index name -> value -> the keys filed under it (a dict: an ordered set).
        self._indices: dict[str, dict[Hashable, dict[StoreKey, None]]] = {n: {} for n in funcs}
        # key -> its rank in the store's order; a key keeps it until deleted, as a dict key does.
        self._rank: dict[StoreKey, int] = {}
        self._next = 0

    def stored(self, key: StoreKey, obj: Obj, old: Obj | None) -> None:
        """`obj` is now in the store under `key`; `old` is what was there (None: a new key)."""
        if old is None:
            self._rank[key] = self._next
            self._next += 1
        for name, func in self._funcs.items():
            before = set(func(old)) if old is not None else set()
            after = set(func(obj))
            index = self._indices[name]
            for value in before - after:
                self._unfile(index, value, key)
            for value in after - before:
                index.setdefault(value, {})[key] = None

    def deleted(self, key: StoreKey, old: Obj) -> None:
        """`old`, the object the store held under `key`, is gone from it."""
        for name, func in self._funcs.items():
            index = self._indices[name]
            for value in set(func(old)):
                self._unfile(index, value, key)
        self._rank.pop(key, None)

    @staticmethod
    def _unfile(index: dict[Hashable, dict[StoreKey, None]], value: Hashable,
                key: StoreKey) -> None:
        bucket = index.get(value)
        if bucket is not None:
            bucket.pop(key, None)
            if not bucket:
                del index[value]

    def keys(self, name: str, values: Iterable[Hashable]) -> list[StoreKey]:
        """The keys filed under any of `values`, once each, in the store's order."""
        index = self._indices[name]
        found: dict[StoreKey, None] = {}
        for value in values:
            found.update(index.get(value, {}))
        # Mostly in order already (a bucket fills as the store does): the sort is then linear.
        return sorted(found, key=self._rank.__getitem__)


# ---- index functions (they see whatever the API server sent: no field is trusted) ------------

def _meta(obj: Obj) -> Obj:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _names(obj: Obj) -> tuple[str, str]:
    meta = _meta(obj)
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def name_prefixes(name: str) -> list[str]:
    """`name` and each part of it that ends before a '-': the names J for which `name` is J or
    starts with J + '-'."""
    return [name, *(name[:i] for i, c in enumerate(name) if c == "-")]


def gang_values(obj: Obj) -> list[tuple[str, str]]:
    """A gang object is filed under (namespace, J) for each J of name_prefixes(its name)."""
    ns, name = _names(obj)
    return [(ns, p) for p in name_prefixes(name)] if name else []


def gang_lookup(namespace: str, jobset_name: str) -> list[tuple[str, str]]:
    """Values to read for the gang objects a JobSet may name (may_be_gang_name): its own name,
    and past 52 characters its first 52 (filed there when a '-' follows them). The latter also
    holds an object named exactly that prefix, which the caller's may_be_gang_name drops."""
    out = [(namespace, jobset_name)]
    if len(jobset_name) > GANG_NAME_PREFIX:
        out.append((namespace, jobset_name[:GANG_NAME_PREFIX]))
    return out


def jobset_values(obj: Obj) -> list[tuple[str, str, str]]:
    """A JobSet is filed under its name and, past 52 characters, under its first 52: the two
    ways a gang object's name can start with what the decider derives from a JobSet's."""
    ns, name = _names(obj)
    out = [(_NAME, ns, name)]
    if len(name) > GANG_NAME_PREFIX:
        out.append((_LONG, ns, name[:GANG_NAME_PREFIX]))
    return out


def jobsets_for_gang(namespace: str, gang_name: str) -> list[tuple[str, str, str]]:
    """Values to read for the JobSets whose gang objects may carry `gang_name`."""
    out = [(_NAME, namespace, p) for p in name_prefixes(gang_name)]
    if len(gang_name) > GANG_NAME_PREFIX and gang_name[GANG_NAME_PREFIX] == "-":
        out.append((_LONG, namespace, gang_name[:GANG_NAME_PREFIX]))
    return out


def pod_values(obj: Obj) -> list[tuple[str, str]]:
    """A pod is filed under (namespace, the JobSet its jobset-name label names)."""
    labels = _meta(obj).get("labels")
    name = labels.get(JOBSET_NAME_LABEL) if isinstance(labels, dict) else None
    return [(_names(obj)[0], name)] if isinstance(name, str) and name else []
