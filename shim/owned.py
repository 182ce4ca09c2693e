"""The objects each JobSet controls, as the shim's caches hold them.

A controller reference names no namespace: its owner is in the object's own namespace, which is
how the garbage collector reads it (a reference to a UID of another namespace is never that
object's owner). So an object is filed under (its namespace, its controller's UID), and a JobSet
finds only objects of its own namespace: a Job that a user of another namespace points at a
JobSet's UID is not that JobSet's, whatever its ownerReferences say.
"""

from __future__ import annotations

import threading
from typing import Any

Obj = dict[str, Any]
JOBSET_GROUP = "jobset.x-k8s.io"
# (namespace, controller JobSet UID)
OwnerKey = tuple[str, str]
# (kind, name): one namespace per bucket, and one object per kind and name in it.
ObjKey = tuple[str, str]
# Every Workload/PodGroup name the decider gives a JobSet's gang objects (docs/gang.md, "Names")
# is `<js>` (1.35 draft naming), `<js>-...`, or, past 63 characters, `<js[:52]>-<10-character
# hash>` (63 - 1 - 10). Objects with such a name are sent to Decide whoever controls them, so
# that a same-named foreign object is refused rather than adopted.
GANG_NAME_PREFIX = 52
# Kinds a JobSet looks up by name, whoever made or controls them, as upstream does: its headless
# Service (any Service holding the name is used) and the PVCs of its volumeClaimPolicies (a
# `whenDeleted: Retain` claim has no owner reference at all, by design; one left by a previous
# JobSet of the same name is reused). Unless Decide sees them it plans their creation on every
# pass, and each pass spends a POST answered AlreadyExists.
SERVICE = "Service"
PVC = "PersistentVolumeClaim"
BY_NAME_KINDS: tuple[str, ...] = (SERVICE, PVC)


def may_be_gang_name(jobset_name: str, name: str) -> bool:
    """True for every name the decider may give one of this JobSet's gang objects."""
    return (
        name == jobset_name
        or name.startswith(jobset_name + "-")
        or name.startswith(jobset_name[:GANG_NAME_PREFIX] + "-")
    )


def named_children(jobset: Obj) -> list[tuple[str, str]]:
    """(kind, name) of the Service and PVCs the decider would create for this JobSet.

    The names follow upstream (spec/jobset.md §1.8, §0): the headless Service is
    `spec.network.subdomain`, else the JobSet's name; each volumeClaimPolicies template gives
    `<template>-<jobset>`. Computed here, not asked of the decider's core (which the shim never
    imports); a malformed spec yields fewer names, never an error (admission judges the spec).
    """
    name = str((jobset.get("metadata") or {}).get("name") or "")
    spec = jobset.get("spec")
    spec = spec if isinstance(spec, dict) else {}
    network = spec.get("network")
    subdomain = network.get("subdomain") if isinstance(network, dict) else None
    out: list[tuple[str, str]] = []
    service = subdomain if isinstance(subdomain, str) and subdomain else name
    if service:
        out.append((SERVICE, service))
    policies = spec.get("volumeClaimPolicies")
    for policy in policies if isinstance(policies, list) else ():
        templates = policy.get("templates") if isinstance(policy, dict) else None
        for template in templates if isinstance(templates, list) else ():
            meta = template.get("metadata") if isinstance(template, dict) else None
            tname = meta.get("name") if isinstance(meta, dict) else None
            if isinstance(tname, str) and tname and name:
                out.append((PVC, f"{tname}-{name}"))
    # Once each, even if two templates share a name: the same object is sent once.
    return list(dict.fromkeys(out))


def controller_ref(obj: Obj | None) -> Obj | None:
    refs = ((obj or {}).get("metadata") or {}).get("ownerReferences")
    for ref in refs if isinstance(refs, list) else ():
        if isinstance(ref, dict) and ref.get("controller") is True:
            return ref
    return None


def is_jobset_ref(ref: Obj | None) -> bool:
    """A reference to a JobSet of any version of the jobset.x-k8s.io group."""
    return (
        isinstance(ref, dict)
        and ref.get("kind") == "JobSet"
        and str(ref.get("apiVersion", "")).split("/")[0] == JOBSET_GROUP
    )


def jobset_owner(obj: Obj | None) -> OwnerKey | None:
    """(namespace, UID) of the JobSet controlling `obj`, if a JobSet controls it."""
    ref = controller_ref(obj)
    if obj is None or not is_jobset_ref(ref) or not (ref or {}).get("uid"):
        return None
    return ((obj.get("metadata") or {}).get("namespace", ""), str((ref or {})["uid"]))


class OwnedIndex:
    def __init__(self) -> None:
        self._by_owner: dict[OwnerKey, dict[ObjKey, Obj]] = {}
        self._lock = threading.Lock()

    def update(self, obj: Obj, old: Obj | None, deleted: bool) -> None:
        """File an informer event: drop the previous version, keep the new one unless deleted."""
        key = (obj.get("kind", ""), obj["metadata"]["name"])
        with self._lock:
            before = jobset_owner(old)
            if before is not None:
                bucket = self._by_owner.get(before)
                if bucket is not None:
                    bucket.pop(key, None)
                    if not bucket:
                        del self._by_owner[before]
            after = jobset_owner(obj)
            if after is not None and not deleted:
                self._by_owner.setdefault(after, {})[key] = obj

    def get(self, namespace: str, uid: str, kind: str, name: str) -> Obj | None:
        """The object of this kind and name that the JobSet (namespace, UID) controls."""
        with self._lock:
            return self._by_owner.get((namespace, uid), {}).get((kind, name))

    def controlled(self, namespace: str, uid: str) -> list[Obj]:
        with self._lock:
            return list(self._by_owner.get((namespace, uid), {}).values())
