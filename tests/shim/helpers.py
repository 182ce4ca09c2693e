"""Helpers and fixtures for the shim end-to-end tests: a fake cluster, a real decider, shims."""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from decider.service.server import BackgroundServer
from decider_api.v1 import decider_pb2 as pb
from decider_client import DeciderClient
from fakekube import FakeKube, JobSimulator
from shim.config import Config
from shim.controller import Shim
from shim.main import build_kube, connection_settings
from support.waiting import HANG_GUARD, wait_for

CONTROLLER = "jobset-decider.io/shim"
NS = "default"
JOBSET_GV = "jobset.x-k8s.io/v1alpha2"

logging.getLogger("shim").setLevel(logging.DEBUG)


def settle(shim: Shim) -> None:
    """Every pass queued so far has run and every event it recorded is written: a test that
    asserts something did not happen asserts it after this, not after a sleep (which, on a busy
    machine, may end before the pass that would have done it has even started). Delayed keys
    (a requeue, a backoff) are not waited for; an update's batched wake is (it is a pass an
    event asked for)."""
    wait_for(lambda: not shim.wakes.pending() and shim.queue.idle(),
             what="the shim's queue idle, no batched wake left")
    assert shim.applier.sink.flush(HANG_GUARD), "events still unwritten"


def rjob(
    name: str,
    replicas: int = 1,
    parallelism: int = 1,
    depends_on: list[tuple[str, str]] | None = None,
) -> dict[str, Any]:
    """A replicated Job as the upstream webhook leaves it (defaults filled in)."""
    out: dict[str, Any] = {
        "name": name,
        "groupName": "default",
        "replicas": replicas,
        "template": {
            "spec": {
                "parallelism": parallelism,
                "completions": parallelism,
                "completionMode": "Indexed",
                "backoffLimit": 0,
                "template": {
                    "spec": {
                        "restartPolicy": "OnFailure",
                        "containers": [{"name": "main", "image": "busybox"}],
                    }
                },
            }
        },
    }
    if depends_on:
        out["dependsOn"] = [{"name": n, "status": s} for n, s in depends_on]
    return out


def jobset(
    name: str,
    *rjobs: dict[str, Any],
    managed_by: str | None = CONTROLLER,
    failure_policy: dict[str, Any] | None = None,
    suspend: bool | None = None,
    ttl: int | None = None,
    namespace: str = NS,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "replicatedJobs": list(rjobs) or [rjob("workers", 2)],
        "successPolicy": {"operator": "All"},
        "startupPolicy": {"startupPolicyOrder": "AnyOrder"},
        "network": {"enableDNSHostnames": True, "publishNotReadyAddresses": True},
    }
    if managed_by is not None:
        spec["managedBy"] = managed_by
    if failure_policy is not None:
        spec["failurePolicy"] = failure_policy
    if suspend is not None:
        spec["suspend"] = suspend
    if ttl is not None:
        spec["ttlSecondsAfterFinished"] = ttl
    return {
        "apiVersion": JOBSET_GV,
        "kind": "JobSet",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


class Cluster:
    """The fake cluster plus helpers a test reads it with (the store, not the shim's cache)."""

    def __init__(self, kube: FakeKube, sim: JobSimulator, kubeconfig: Path) -> None:
        self.kube = kube
        self.sim = sim
        self.kubeconfig = kubeconfig
        self.store = kube.store
        self.jobsets_rt = self.store.resource_for("jobset.x-k8s.io", "v1alpha2", "jobsets")
        self.jobs_rt = self.store.resource_for("batch", "v1", "jobs")
        self.services_rt = self.store.resource_for("", "v1", "services")
        self.events_rt = self.store.resource_for("", "v1", "events")

    def create_jobset(self, body: dict[str, Any]) -> dict[str, Any]:
        return self.store.create(self.jobsets_rt, body["metadata"].get("namespace", NS), body)

    def jobset(self, name: str, ns: str = NS) -> dict[str, Any] | None:
        return self.store.try_get(self.jobsets_rt, ns, name)

    def jobs(self, ns: str = NS, prefix: str = "") -> list[dict[str, Any]]:
        items, _ = self.store.list(self.jobs_rt, ns)
        return [j for j in items if j["metadata"]["name"].startswith(prefix)]

    def live_jobs(self, prefix: str = "", ns: str = NS) -> list[dict[str, Any]]:
        return [j for j in self.jobs(ns, prefix) if not j["metadata"].get("deletionTimestamp")]

    def job_names(self, prefix: str = "") -> list[str]:
        return sorted(j["metadata"]["name"] for j in self.live_jobs(prefix))

    def condition(self, name: str, ctype: str) -> dict[str, Any] | None:
        js = self.jobset(name) or {}
        for cond in (js.get("status") or {}).get("conditions") or []:
            if cond.get("type") == ctype and cond.get("status") == "True":
                return cond
        return None

    def events(self, name: str) -> list[tuple[str, str]]:
        return [(e["type"], e["reason"]) for e in self.event_objects(name)]

    def event_objects(self, name: str, ns: str = NS) -> list[dict[str, Any]]:
        items, _ = self.store.list(self.events_rt, ns)
        return [e for e in items if e["involvedObject"]["name"] == name]

    def creates(self, kind_path: str = "/jobs$") -> list[Any]:
        """Successful POSTs to a collection, from the audit log."""
        return [r for r in self.kube.writes(kind_path, "POST") if r.code == 201]


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    kube = FakeKube(bookmark_interval=0.5).start()
    sim = JobSimulator(kube.store, pods=True, pod_termination_seconds=0.1).start()
    try:
        yield Cluster(kube, sim, kube.write_kubeconfig(tmp_path / "kubeconfig"))
    finally:
        sim.stop()
        kube.stop()


@pytest.fixture(scope="session")
def decider_server() -> Iterator[BackgroundServer]:
    with BackgroundServer("127.0.0.1:0") as server:
        yield server


def make_config(**overrides: Any) -> Config:
    base: dict[str, Any] = {
        "controller_name": CONTROLLER,
        "leader_elect": False,
        "lease_duration": 2.0,
        "renew_deadline": 1.5,
        "retry_period": 0.2,
        "backoff_base": 0.05,
        "backoff_max": 1.0,
        "watch_timeout": (20, 30),
        "cache_sync_timeout": 10.0,
        "decider_timeout": 2.0,
        "workers": 2,
        # The limiter is on in every test, high enough not to slow them; tests of the limit
        # set their own.
        "kube_api_qps": 500.0,
        "kube_api_burst": 100,
    }
    base.update(overrides)
    return Config(**base)


class ShimFactory:
    def __init__(self, cluster: Cluster, decider_target: str) -> None:
        self.cluster = cluster
        self.decider_target = decider_target
        self.running: list[Shim] = []
        # Every test runs the plan guard on real plans: unless a test feeds hostile ones, a
        # refusal is a guard that would stop a real JobSet, and fails the test.
        self.refusals_expected = False

    def build(
        self,
        decider_target: str | None = None,
        decider: Any = None,
        telemetry: Any = None,
        **overrides: Any,
    ) -> Shim:
        """A shim on the fake cluster; `decider` replaces the gRPC client (a scripted one)."""
        if decider is None:
            # As decider_channel.client(cfg) dials it (the client span names it).
            overrides.setdefault("decider_address", decider_target or self.decider_target)
        cfg = make_config(**overrides)
        configuration = client.Configuration()
        # The same loading path as production: a kubeconfig file through the official client.
        config.load_kube_config(
            config_file=str(self.cluster.kubeconfig), client_configuration=configuration
        )
        connection_settings(configuration, cfg)
        api = client.ApiClient(configuration)
        api.user_agent = f"decider-shim/{cfg.identity}"
        if decider is None:
            decider = DeciderClient(
                cfg.decider_address,
                timeout=cfg.decider_timeout,
                options=[("grpc.so_reuseport", 0)],
            )
        return Shim(cfg, build_kube(cfg, api), decider, telemetry=telemetry)

    def start(
        self,
        decider_target: str | None = None,
        decider: Any = None,
        telemetry: Any = None,
        **overrides: Any,
    ) -> Shim:
        shim = self.build(decider_target, decider, telemetry, **overrides)
        shim.start()
        self.running.append(shim)
        return shim

    def stop_all(self) -> None:
        refused = 0
        for shim in self.running:
            shim.shutdown()
            shim.decider.close()
            refused += shim.stats.refused_plans
        self.running.clear()
        assert self.refusals_expected or refused == 0, f"{refused} real plan(s) refused"


@pytest.fixture
def shims(cluster: Cluster, decider_server: BackgroundServer) -> Iterator[ShimFactory]:
    factory = ShimFactory(cluster, decider_server.target)
    try:
        yield factory
    finally:
        factory.stop_all()


class ScriptedDecider:
    """A decider whose plans a test writes: a hostile or broken one answering on its address.

    `answer(request, real_plan)` returns the plan to send; `real_plan` is the real decider's
    answer to the same request (None without `real`), so a test can tamper with a true plan.
    """

    def __init__(
        self,
        answer: Callable[[pb.DecideRequest, pb.DecideResponse | None], pb.DecideResponse],
        real: DeciderClient | None = None,
    ) -> None:
        self.answer = answer
        self.real = real
        self.calls = 0

    def decide(
        self, request: pb.DecideRequest, *, timeout: float | None = None, metadata: Any = None
    ) -> pb.DecideResponse:
        self.calls += 1
        plan = self.real.decide(request, timeout=timeout) if self.real is not None else None
        return self.answer(request, plan)

    def validate(
        self, request: pb.ValidateRequest, *, timeout: float | None = None, metadata: Any = None
    ) -> pb.ValidateResponse:
        # Admission is the real decider's (a scripted one only forges plans).
        if self.real is not None:
            return self.real.validate(request, timeout=timeout, metadata=metadata)
        return pb.ValidateResponse(valid=True, object_json=request.object_json)

    def close(self) -> None:
        if self.real is not None:
            self.real.close()


def deep(obj: Any) -> Any:
    return copy.deepcopy(obj)
