"""What one reconcile pass of the shim reads of its caches, against a filled fake cluster.

The shim's informers decode what the API server sends through `shim.kube_json.loads`; here
every Kubernetes object decoded (a dict whose metadata has a server-set UID) becomes a
`Counted`, which notes each read of a field while a pass is being measured. A pass that scans a
cache reads every object in it; one that looks its objects up reads only those. Reads are
counted, not timed, so the figure does not depend on the machine (times are reported beside
it).

Used by tests/shim/test_pass_cost.py and by `bench/shim_reaction.py --pass-cost`.
"""

from __future__ import annotations

import json
import random
import statistics
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client

from decider_api.v1 import decider_pb2 as pb
from fakekube import FakeKube, Store
from shim import kube_json
from shim.config import Config
from shim.controller import Shim
from shim.main import build_kube

CONTROLLER = "jobset-decider.io/shim"
JOBSET_GV = "jobset.x-k8s.io/v1alpha2"
SCHED_GV = "scheduling.k8s.io/v1alpha2"
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
GANG_POLICY = "jobset-decider.io/gang-policy"
Obj = dict[str, Any]


class _Tally:
    """Reads of counted objects while `active`: one lock, since informer threads decode too."""

    def __init__(self) -> None:
        self.active = False
        self.reads = 0
        self.seen: dict[int, Counted] = {}
        self.lock = threading.Lock()

    def note(self, obj: Counted) -> None:
        if self.active:
            with self.lock:
                self.reads += 1
                self.seen.setdefault(id(obj), obj)

    @contextmanager
    def measuring(self) -> Iterator[_Tally]:
        with self.lock:
            self.reads, self.seen, self.active = 0, {}, True
        try:
            yield self
        finally:
            self.active = False

    def names(self) -> set[tuple[str, str, str]]:
        """(kind, namespace, name) of every object read (dict.get: no read is noted)."""
        out = set()
        for obj in self.seen.values():
            meta = dict.get(obj, "metadata") or {}
            out.add((str(dict.get(obj, "kind")), meta.get("namespace", ""), meta["name"]))
        return out


TALLY = _Tally()


class Counted(dict):  # type: ignore[type-arg]
    """A cached object that tells TALLY when a field of it is read."""

    __slots__ = ()

    def __getitem__(self, key: Any) -> Any:
        TALLY.note(self)
        return dict.__getitem__(self, key)

    def get(self, key: Any, default: Any = None) -> Any:
        TALLY.note(self)
        return dict.get(self, key, default)


def _hook(d: dict[str, Any]) -> dict[str, Any]:
    meta = d.get("metadata")
    # Server-set UID: a stored object, not a template inside one.
    return Counted(d) if isinstance(meta, dict) and "uid" in meta else d


def _loads(data: Any, **kw: Any) -> Any:
    return json.loads(data, object_hook=_hook, **kw)


@contextmanager
def counted_decoding() -> Iterator[None]:
    """Objects the shim decodes meanwhile are Counted (only shim.kube_json's decoder is
    replaced)."""
    saved = kube_json.loads
    kube_json.loads = _loads  # type: ignore[assignment]
    try:
        yield
    finally:
        kube_json.loads = saved


class RecordingDecider:
    """Admits every JobSet, answers every Decide with an empty plan, keeps the requests: a
    pass then costs the shim alone (no writes, no decider work)."""

    def __init__(self) -> None:
        self.requests: list[pb.DecideRequest] = []

    def decide(self, request: pb.DecideRequest, **_: Any) -> pb.DecideResponse:
        self.requests.append(request)
        return pb.DecideResponse()

    def validate(self, request: pb.ValidateRequest, **_: Any) -> pb.ValidateResponse:
        return pb.ValidateResponse(valid=True, object_json=request.object_json)

    def close(self) -> None:
        pass


# ---- filling the cluster ------------------------------------------------------------------

def jobset_body(name: str, ns: str, managed_by: str | None = CONTROLLER, gang: bool = False
                ) -> Obj:
    spec: Obj = {
        "replicatedJobs": [{
            "name": "w", "groupName": "default", "replicas": 2,
            "template": {"spec": {
                "parallelism": 1, "completions": 1, "completionMode": "Indexed",
                "backoffLimit": 0,
                "template": {"spec": {"restartPolicy": "OnFailure",
                                      "containers": [{"name": "main", "image": "busybox"}]}},
            }},
        }],
        "successPolicy": {"operator": "All"},
        "startupPolicy": {"startupPolicyOrder": "AnyOrder"},
        "network": {"enableDNSHostnames": True, "publishNotReadyAddresses": True},
        "failurePolicy": {"restartStrategy": "InPlaceRestart", "maxRestarts": 3},
    }
    if managed_by is not None:
        spec["managedBy"] = managed_by
    meta: Obj = {"name": name, "namespace": ns}
    if gang:
        meta["annotations"] = {GANG_POLICY: "JobSetAsGang"}
    return {"apiVersion": JOBSET_GV, "kind": "JobSet", "metadata": meta, "spec": spec}


def owner_ref(js: Obj) -> Obj:
    return {"apiVersion": JOBSET_GV, "kind": "JobSet", "name": js["metadata"]["name"],
            "uid": js["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}


def gang_body(kind: str, name: str, ns: str, owner: Obj | None) -> Obj:
    meta: Obj = {"name": name, "namespace": ns}
    if owner is not None:
        meta["ownerReferences"] = [owner]
    return {"apiVersion": SCHED_GV, "kind": kind, "metadata": meta, "spec": {"minCount": 1}}


def pod_body(name: str, ns: str, jobset_name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns,
                         "labels": {JOBSET_NAME_LABEL: jobset_name}},
            "spec": {"containers": [{"name": "main", "image": "busybox"}]},
            "status": {"phase": "Running"}}


class Filler:
    """Creates objects straight in the fake store (no HTTP, no shim involved)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.rt = {
            "JobSet": store.resource_for("jobset.x-k8s.io", "v1alpha2", "jobsets"),
            "Workload": store.resource_for("scheduling.k8s.io", "v1alpha2", "workloads"),
            "PodGroup": store.resource_for("scheduling.k8s.io", "v1alpha2", "podgroups"),
            "Pod": store.resource_for("", "v1", "pods"),
            "Service": store.resource_for("", "v1", "services"),
            "PersistentVolumeClaim": store.resource_for("", "v1", "persistentvolumeclaims"),
        }

    def create(self, body: Obj) -> Obj:
        return self.store.create(self.rt[body["kind"]], body["metadata"]["namespace"], body)

    def jobset(self, name: str, ns: str, pods: int = 2, gang: bool = False,
               managed_by: str | None = CONTROLLER) -> Obj:
        """A JobSet with `pods` pods labelled its own and, with `gang`, a Workload and a
        PodGroup it controls."""
        js = self.create(jobset_body(name, ns, managed_by, gang))
        if gang:
            self.create(gang_body("Workload", name, ns, owner_ref(js)))
            self.create(gang_body("PodGroup", f"{name}-w-0", ns, owner_ref(js)))
        for i in range(pods):
            self.create(pod_body(f"{name}-w-{i}-0-x{i}", ns, name))
        return js


def fill(filler: Filler, count: int, namespaces: int = 10, gang_every: int = 5,
         pods: int = 2) -> list[tuple[str, str]]:
    """`count` managed JobSets over `namespaces` namespaces, one in `gang_every` gang-scheduled,
    each with `pods` pods; their keys."""
    keys = []
    for i in range(count):
        ns, name = f"ns-{i % namespaces}", f"js-{i:05d}"
        filler.jobset(name, ns, pods=pods, gang=gang_every > 0 and i % gang_every == 0)
        keys.append((ns, name))
    return keys


# ---- the shim and the measure --------------------------------------------------------------

def build_shim(kube: FakeKube, decider: RecordingDecider, **overrides: Any) -> Shim:
    """A shim on the fake cluster that watches pods (InPlaceRestart) and runs no workers: the
    caller runs its passes."""
    base: Obj = {
        "controller_name": CONTROLLER, "leader_elect": False, "workers": 1,
        "feature_gates": {"InPlaceRestart": True}, "cache_sync_timeout": 60.0,
        "watch_timeout": (60, 90), "kube_api_qps": 0.0, "decider_timeout": 5.0,
    }
    base.update(overrides)
    cfg = Config(**base)
    configuration = client.Configuration()
    configuration.host = kube.url
    return Shim(cfg, build_kube(cfg, client.ApiClient(configuration)), decider)


@dataclass
class PassCost:
    # Distinct cached objects read, and reads, per pass; seconds per pass.
    objects: list[int] = field(default_factory=list)
    reads: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)


def run_passes(shim: Shim, keys: list[tuple[str, str]], count: bool) -> PassCost:
    """One pass of each key, as a worker runs it (process); with `count`, what each read."""
    cost = PassCost()
    for key in keys:
        if count:
            with TALLY.measuring():
                ok = shim.process(key)
            cost.objects.append(len(TALLY.seen))
            cost.reads.append(TALLY.reads)
        else:
            started = time.perf_counter()
            ok = shim.process(key)
            cost.seconds.append(time.perf_counter() - started)
        assert ok, f"pass of {key} failed"
    return cost


def _passes(kube: FakeKube, keys: list[tuple[str, str]], count: bool) -> tuple[PassCost, int]:
    with counted_decoding() if count else nullcontext():
        shim = build_shim(kube, RecordingDecider())
        shim.start_informers(120.0)
    try:
        return run_passes(shim, keys, count), sum(len(i.items()) for i in shim.informers)
    finally:
        shim.shutdown()


def measure(count: int, pods: int = 2, gang_every: int = 5, sample: int = 200
            ) -> dict[str, Any]:
    """A fresh fake cluster with `count` JobSets: one pass of each timed (plain caches), then
    the reads of `sample` of them (drawn at random, the same ones each run) counted by a
    second shim (Counted caches, whose bookkeeping would weigh on the times)."""
    kube = FakeKube(bookmark_interval=5.0).start()
    try:
        keys = fill(Filler(kube.store), count, gang_every=gang_every, pods=pods)
        timed, cached = _passes(kube, keys, count=False)
        chosen = sorted(random.Random(count).sample(keys, min(sample, count)))
        counted, _ = _passes(kube, chosen, count=True)
        return {
            "jobsets": count, "cached": cached, "counted_passes": len(counted.objects),
            "objects_mean": statistics.mean(counted.objects),
            "objects_max": max(counted.objects),
            "reads_mean": statistics.mean(counted.reads),
            "pass_ms_mean": statistics.mean(timed.seconds) * 1000,
            "pass_ms_p50": statistics.median(timed.seconds) * 1000,
            "all_once_s": sum(timed.seconds),
        }
    finally:
        kube.stop()
