"""What a pass observes of one JobSet, read out of the shim's caches by index.

Every read here costs what the JobSet has (its objects, its pods, the names it uses), never
what the caches hold: a cluster of 10,000 JobSets and 100,000 pods costs each pass what a
cluster of one would (shim/indexes.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from shim import indexes
from shim.kube import Obj
from shim.owned import (
    BY_NAME_KINDS,
    PVC,
    OwnedIndex,
    jobset_owner,
    may_be_gang_name,
    named_children,
)
from shim.watches import Watches


class Observation:
    def __init__(self, watches: Watches, owned: OwnedIndex, ours: Callable[[Obj], bool]) -> None:
        self.watches = watches
        self.controlled = owned
        self.ours = ours

    def cached(self, namespace: str, uid: str, kind: str, name: str) -> Obj | None:
        """The cached object the JobSet's expectations look for: a Service or PVC by name,
        whoever controls it (a retained PVC has no owner); anything else only if controlled."""
        informer = self.watches.by_name.get(kind)
        if informer is not None:
            return informer.get(namespace, name)
        return self.controlled.get(namespace, uid, kind, name)

    def named_not_controlled(self, jobset: Obj, kinds: Iterable[str]) -> list[Obj]:
        """The cached objects of `kinds` named as the JobSet would name its children
        (named_children) that the JobSet does not control: one cache read per name, in its
        namespace."""
        uid = jobset["metadata"].get("uid", "")
        ns = jobset["metadata"]["namespace"]
        out = []
        for kind, child in named_children(jobset):
            informer = self.watches.by_name.get(kind) if kind in kinds else None
            obj = informer.get(ns, child) if informer is not None else None
            if obj is not None and jobset_owner(obj) != (ns, uid):
                out.append(obj)
        return out

    def foreign_pvcs(self, jobset: Obj) -> list[Obj]:
        """The PVCs named like the JobSet's volumeClaimPolicies would make them that it does not
        control: upstream's webhook judges a create against them (Retain and the same spec, or
        refused), which the decider can do only if it is sent them."""
        return self.named_not_controlled(jobset, (PVC,))

    def owned(self, jobset: Obj) -> list[Obj]:
        """What the JobSet controls, plus the objects it looks up by name whoever holds them:
        gang objects named like its own, its headless Service and its volumeClaimPolicies'
        PVCs; with in-place restart, its pods."""
        uid = jobset["metadata"].get("uid", "")
        ns, name = jobset["metadata"]["namespace"], jobset["metadata"]["name"]
        out = self.controlled.controlled(ns, uid)
        # Upstream looks the Service and the PVCs up by name and uses whatever holds the name;
        # the decider does the same with what it is sent (it matches by kind and name, adopts
        # nothing, and the guard lets a plan delete or patch only what the JobSet controls).
        # Unsent, a Retain PVC (no owner) or a Service of someone else's would be planned
        # again on every pass, a POST answered AlreadyExists each time.
        # Controlled ones are in the list already.
        out.extend(self.named_not_controlled(jobset, BY_NAME_KINDS))
        wanted = indexes.gang_lookup(ns, name)
        for informer in self.watches.gang_informers:
            out.extend(
                o for o in informer.by_index(indexes.GANG_NAMES, wanted)
                # The index's 52-character bucket also holds an object named just that prefix.
                if may_be_gang_name(name, o["metadata"]["name"])
                # Controlled ones are in the list already.
                and jobset_owner(o) != (ns, uid)
            )
        if self.watches.pods is not None:
            out.extend(self.watches.pods.by_index(indexes.POD_JOBSET, [(ns, name)]))
        return out

    def jobsets_naming(self, namespace: str, gang_name: str) -> list[Obj]:
        """Our JobSets whose gang objects may carry `gang_name` (may_be_gang_name)."""
        return [
            j for j in self.watches.jobsets.by_index(
                indexes.JOBSET_NAMES, indexes.jobsets_for_gang(namespace, gang_name))
            if may_be_gang_name(j["metadata"]["name"], gang_name) and self.ours(j)
        ]
