"""The chaos soak's actors: the shim replicas, the faults and the JobSets' lives
(bench/shim_chaos.py)."""

from __future__ import annotations

import collections
import contextlib
import random
import threading
from dataclasses import dataclass, field
from typing import Any

# First: it puts the repository's tree on sys.path for the imports below.
from chaos_checks import (
    FINISH_DEADLINE,
    GANG_POLICY,
    NAMESPACES,
    STALL_GRACE,
    TTL_GRACE,
    Watchdog,
    _attempt,
    _job_done,
    _owner,
    _terminal,
    now,
)

from fakekube import ApiError, FakeKube
from shim.controller import Shim
from tests.shim.helpers import Cluster, ShimFactory, jobset, rjob

# ---- the shims --------------------------------------------------------------------------------


class Fleet:
    """The shim's Deployment: replicas started, rolled, crashed, replaced."""

    def __init__(self, factory: ShimFactory, watchdog: Watchdog, rng: random.Random) -> None:
        self.factory = factory
        self.watchdog = watchdog
        self.rng = rng
        self.replicas: list[Shim] = []
        self.serial = 0
        self.events: collections.Counter[str] = collections.Counter()
        self.pair_until: float | None = None
        self.refused = 0

    def _start_one(self) -> Shim | None:
        self.serial += 1
        try:
            shim = self.factory.build(leader_elect=True, identity=f"shim-{self.serial}",
                                      watch_timeout=(20, 30))
        except Exception as exc:  # noqa: BLE001 - main() would exit 2 on it: a crash loop
            self.events["start-failed"] += 1
            self.watchdog.flag("start-exit", f"shim-{self.serial} could not be built: {exc}",
                               type(exc).__name__ + str(getattr(exc, "status", "")))
            return None
        try:
            shim.start()
        except Exception as exc:  # noqa: BLE001 - a replica that cannot sync is restarted
            self.events["start-failed"] += 1
            print(f"  .. replica shim-{self.serial} failed to start: {exc}", flush=True)
            self._reap(shim, release=False, crash=True)
            return None
        self.replicas.append(shim)
        return shim

    def _reap(self, shim: Shim, release: bool, crash: bool = False) -> None:
        if crash:
            shim.kill()
        shim.shutdown(release=release)
        shim.decider.close()
        self.refused += shim.stats.refused_plans
        if shim in self.replicas:
            self.replicas.remove(shim)

    def ensure(self) -> None:
        """A replica that lost its Lease exits (its process would): the Deployment makes
        another."""
        for shim in list(self.replicas):
            if shim.stopping:
                self.events["lost-lease"] += 1
                self._reap(shim, release=False)
        if self.pair_until is not None and now() > self.pair_until and len(self.replicas) > 1:
            victim = self.rng.choice(self.replicas)
            crash = self.rng.random() < 0.5
            self.events["pair-end-crash" if crash else "pair-end-stop"] += 1
            self._reap(victim, release=not crash, crash=crash)
            self.pair_until = None
        if not self.replicas:
            self._start_one()

    def disturb(self) -> None:
        what = self.rng.choice(["roll", "crash", "pair"])
        if what == "pair" and len(self.replicas) == 1:
            if self._start_one() is not None:
                self.events["pair"] += 1
                self.pair_until = now() + self.rng.uniform(10, 30)
        elif what == "roll" and self.replicas:
            old = self.replicas[0]
            if self._start_one() is not None:
                self.events["roll"] += 1
                self._reap(old, release=True)
        elif what == "crash" and self.replicas:
            self.events["crash"] += 1
            self._reap(self.replicas[0], release=False, crash=True)
            self._start_one()

    def stop_all(self) -> None:
        for shim in list(self.replicas):
            self._reap(shim, release=True)

    def sizes(self) -> dict[str, int]:
        """What a replica keeps per JobSet or key: bounded by what the cluster holds."""
        out: collections.Counter[str] = collections.Counter()
        for shim in self.replicas:
            q = shim.queue
            out["queue.waiting"] += len(q._waiting)
            out["queue.heap"] += len(q._heap)
            out["queue.failures"] += len(q._failures)
            out["expectations"] += len(shim.expectations._pending)
            out["recorder"] += len(shim.applier.recorder._told)
            out["put_off"] += len(shim.wakes._put_off)
            out["owned.owners"] += len(shim._owned._by_owner)
        return dict(out)


# ---- faults ---------------------------------------------------------------------------------

WRITE_PATHS = ("/jobs", "/jobsets/[^/]+/status$", "/jobsets", "/services", "/events",
               "/workloads", "/podgroups", "/leases")
READ_PATHS = ("/jobs$", "/jobsets$", "/services$", "/pods$", "/workloads$", "/podgroups$",
              "/leases", "/persistentvolumeclaims$")


class Chaos:
    def __init__(self, kube: FakeKube, rng: random.Random, silent_watches: bool) -> None:
        self.kube = kube
        self.rng = rng
        self.silent_watches = silent_watches
        self._outage: Any = None
        self._outage_ends = 0.0
        self.injected: collections.Counter[str] = collections.Counter()
        self.last_lease_fault = -1e9

    def lease_trouble(self, within: float = 6.0) -> bool:
        """A fault that could reach the Lease lately (lease_duration + renew_deadline, and
        the longest slow answer, fit in `within`)."""
        return now() - self.last_lease_fault < within

    def inject(self) -> None:
        r, kube = self.rng, self.kube
        kind = r.choices(
            ["write", "read", "conflict", "slow", "watch", "drop", "compact"],
            weights=[5, 4, 3, 3, 4, 1, 1],
        )[0]
        count = r.randint(1, 6)
        path = r.choice(WRITE_PATHS if kind in ("write", "conflict") else READ_PATHS
                        if kind == "read" else WRITE_PATHS + READ_PATHS)
        if "leases" in path or kind in ("drop", "compact"):
            self.last_lease_fault = now()
        if kind == "write":
            code = r.choice([500, 503, 429, 504])
            after = r.choice([None, "0", "1"]) if code in (429, 503) else None
            kube.add_fault(r.choice(["POST", "PUT", "PATCH", "DELETE"]), path,
                           code=code, count=count, retry_after=after)
            kind = f"write-{code}"
        elif kind == "read":
            code = r.choice([500, 503, 429])
            kube.add_fault("GET", path, code=code, count=count,
                           retry_after="1" if code == 429 else None)
            kind = f"read-{code}"
        elif kind == "conflict":
            kube.add_fault(r.choice(["PUT", "PATCH", "POST", "DELETE"]), path, code=409,
                           count=r.randint(1, 3))
        elif kind == "slow":
            kube.add_fault(r.choice(["GET", "POST", "PUT", "PATCH", "DELETE", "*"]), path,
                           code=0, count=count, delay=r.uniform(0.2, 1.5))
        elif kind == "watch":
            mode = r.choice(["close", "reset", "cut", "error"]
                            + (["silent"] if self.silent_watches else []))
            code = r.choice([410, 500]) if mode == "error" else 500
            kube.add_watch_fault(path, mode, count=r.randint(1, 3), code=code)
            kube.store.drop_watches()
            kind = f"watch-{mode}{code if mode == 'error' else ''}"
        elif kind == "drop":
            kube.store.drop_watches()
        else:
            kube.store.compact()
            kube.store.drop_watches()
        self.injected[kind] += 1

    def outage(self) -> None:
        """Seconds of every request answered 503, as an API server restarting. Bounded in
        time, not in requests: a count lasts as long as the shim backs off."""
        if self._outage is not None:
            return
        self._outage = self.kube.add_fault("*", ".*", code=503)
        self._outage_ends = now() + self.rng.uniform(2, 8)
        # Its end on a timer of its own: the driver's loop may be inside a replica's start,
        # which waits out this very outage.
        timer = threading.Timer(self._outage_ends - now() + 0.01, self.end_outage)
        timer.daemon = True
        timer.start()
        self.kube.store.drop_watches()
        self.last_lease_fault = self._outage_ends
        self.injected["outage"] += 1

    def end_outage(self) -> None:
        outage = self._outage
        if outage is not None and now() >= self._outage_ends:
            with self.kube._audit_lock, contextlib.suppress(ValueError):
                self.kube.faults.remove(outage)
            self._outage = None

    def prune(self) -> None:
        """Spent faults and the audit log go: the fake server would otherwise grow for hours."""
        with self.kube._audit_lock:
            self.kube.faults[:] = [f for f in self.kube.faults if f.remaining != 0]
            self.kube.watch_faults[:] = [f for f in self.kube.watch_faults if f.remaining != 0]
            self.kube.audit.clear()
            self.kube.collection_reads.clear()

    def clear(self) -> None:
        self.kube.clear_faults()
        self._outage = None


# ---- the workload ---------------------------------------------------------------------------


@dataclass
class Life:
    ns: str
    name: str
    uid: str
    replicas: int
    max_restarts: int
    fate: str  # succeed | fail-out | fail-rule | delete
    ttl: int | None
    born: float
    ends_at: float
    finish_from: float | None = None  # the driver carried it to its end from here
    done_at: float | None = None  # a condition seen
    suspended_until: float | None = None
    short_since: float | None = None
    deleted: bool = False
    restarts_caused: int = 0
    notes: list[str] = field(default_factory=list)


class Driver:
    def __init__(self, cluster: Cluster, watchdog: Watchdog, rng: random.Random,
                 population: int) -> None:
        self.c = cluster
        self.w = watchdog
        self.rng = rng
        self.population = population
        self.lives: dict[str, Life] = {}
        self.counts: collections.Counter[str] = collections.Counter()
        self.serial = 0

    # -- store reads

    def _jobset(self, life: Life) -> dict[str, Any] | None:
        js = self.c.store.try_get(self.c.jobsets_rt, life.ns, life.name)
        if js is None or js["metadata"]["uid"] != life.uid:
            return None
        return js

    def _jobs(self, life: Life) -> list[dict[str, Any]]:
        items, _ = self.c.store.list(self.c.jobs_rt, life.ns)
        return [j for j in items if (_owner(j) or {}).get("uid") == life.uid]

    # -- births

    def _free_name(self, ns: str) -> str:
        # A small pool: a name is often reused after its JobSet went, under a new UID.
        for _ in range(20):
            name = f"js{self.rng.randint(0, self.population * 2)}"
            if self.c.store.try_get(self.c.jobsets_rt, ns, name) is None:
                return name
        self.serial += 1
        return f"jsx{self.serial}"

    def create(self) -> None:
        r = self.rng
        ns = r.choice(NAMESPACES)
        name = self._free_name(ns)
        gang = r.random() < 0.15
        fate = r.choices(["succeed", "fail-out", "fail-rule", "delete"], [60, 15, 8, 17])[0]
        max_restarts = r.randint(0, 3)
        policy: dict[str, Any] = {
            "maxRestarts": max_restarts,
            "restartStrategy": r.choice(["Recreate", "BlockingRecreate"]),
        }
        if fate == "fail-rule" or r.random() < 0.2:
            policy["rules"] = [{"name": "fatal", "action": "FailJobSet",
                                "onJobFailureReasons": ["PodFailurePolicy"]}]
        if gang:
            rjobs = (rjob("leader", 1), rjob("workers", 2, parallelism=2))
        else:
            rjobs = (rjob("workers", r.randint(1, 3)),) + (
                (rjob("driver", 1),) if r.random() < 0.3 else ())
        ttl = r.choice([None, None, 1, 2, 4])
        body = jobset(name, *rjobs, failure_policy=policy, ttl=ttl, namespace=ns,
                      suspend=True if r.random() < 0.1 else None)
        if gang:
            body["metadata"]["annotations"] = {GANG_POLICY: "JobSetGangPerReplicatedJob"}
        try:
            made = self.c.store.create(self.c.jobsets_rt, ns, body)
        except ApiError:
            return
        t = now()
        life = Life(ns, name, made["metadata"]["uid"], sum(j["replicas"] for j in rjobs),
                    max_restarts, fate, ttl, t, t + r.uniform(4, 25))
        if body["spec"].get("suspend"):
            life.suspended_until = t + r.uniform(1, 5)
        self.lives[life.uid] = life
        self.counts["created"] += 1
        self.counts["gang"] += gang

    # -- one step of every life

    def step(self) -> None:
        live = [lf for lf in self.lives.values() if not lf.deleted]
        if len(live) < self.population:
            self.create()
        for life in live:
            with contextlib.suppress(ApiError, KeyError, ValueError):
                self._step(life)

    def _set_suspend(self, life: Life, value: bool) -> None:
        def fn(js: dict[str, Any]) -> None:
            js["spec"]["suspend"] = value

        if self._jobset(life) is not None:
            self.c.store.mutate(self.c.jobsets_rt, life.ns, life.name, fn, False)

    def _delete_jobset(self, life: Life) -> None:
        policy = self.rng.choice(["Foreground", "Background"])
        self.c.store.delete(self.c.jobsets_rt, life.ns, life.name,
                            {"propagationPolicy": policy, "preconditions": {"uid": life.uid}})
        life.deleted = True
        self.counts["user-deleted-jobsets"] += 1

    def _step(self, life: Life) -> None:
        r, t = self.rng, now()
        js = self._jobset(life)
        if js is None:
            if not life.deleted:
                life.deleted = True
                self.counts["ttl-deleted" if life.done_at else "vanished"] += 1
            return
        if js["metadata"].get("deletionTimestamp"):
            return
        terminal = _terminal(js)
        if terminal:
            if life.done_at is None:
                life.done_at = t
                self.counts["completed" if "Completed" in terminal else "failed"] += 1
            if life.ttl is None and t - life.done_at > r.uniform(1, 4):
                self._delete_jobset(life)
            return
        suspended = bool(js["spec"].get("suspend"))
        if suspended:
            if life.suspended_until is not None and t >= life.suspended_until:
                self._set_suspend(life, False)
                life.suspended_until = None
                self.counts["resumed"] += 1
            return
        restarts = int((js.get("status") or {}).get("restarts") or 0)
        jobs = self._jobs(life)
        current = [j for j in jobs if _attempt(j) == restarts
                   and not j["metadata"].get("deletionTimestamp")]
        running = [j for j in current if not _job_done(j)
                   and (j.get("status") or {}).get("active")]
        self._check_stall(life, js, current, t)
        if life.finish_from is None and t >= life.ends_at:
            if life.fate == "delete":
                self._delete_jobset(life)
                return
            life.finish_from = t
        if life.finish_from is not None:
            self._finish(life, running, restarts)
            return
        # Mid-life mischief, a few times in a JobSet's life.
        roll = r.random()
        if roll < 0.03 and running and restarts < life.max_restarts:
            job = r.choice(running)
            self.c.sim.fail(life.ns, job["metadata"]["name"])
            life.restarts_caused += 1
            self.counts["job-failures"] += 1
        elif roll < 0.04 and current:
            job = r.choice(current)
            self.c.store.delete(self.c.jobs_rt, life.ns, job["metadata"]["name"],
                                {"propagationPolicy": r.choice(["Foreground", "Background"]),
                                 "preconditions": {"uid": job["metadata"]["uid"]}})
            self.counts["user-deleted-jobs"] += 1
        elif roll < 0.05:
            self._set_suspend(life, True)
            life.suspended_until = t + r.uniform(1, 5)
            life.ends_at += 5
            self.counts["suspended"] += 1

    def _finish(self, life: Life, running: list[dict[str, Any]], restarts: int) -> None:
        # The deadline runs from the driver's last move: until then a restart may be under way
        # and new Jobs are still to run.
        if not running:
            return
        if life.fate == "succeed":
            for job in running:
                self.c.sim.succeed(life.ns, job["metadata"]["name"])
            self.counts["job-successes"] += len(running)
        elif life.fate == "fail-rule":
            self.c.sim.fail(life.ns, running[0]["metadata"]["name"], reason="PodFailurePolicy",
                            message="chaos: a fatal pod failure")
            self.counts["job-failures"] += 1
        else:
            self.c.sim.fail(life.ns, running[0]["metadata"]["name"])
            self.counts["job-failures"] += 1
        life.finish_from = now()

    def _check_stall(self, life: Life, js: dict[str, Any], current: list[dict[str, Any]],
                     t: float) -> None:
        if len(current) >= life.replicas:
            life.short_since = None
            return
        if life.short_since is None:
            life.short_since = t
        elif t - life.short_since > STALL_GRACE:
            self.w.flag("stalled", f"{life.ns}/{life.name}: {len(current)} of {life.replicas} "
                        f"Jobs of attempt {(js.get('status') or {}).get('restarts') or 0} for "
                        f"{t - life.short_since:.0f}s", life.uid)

    def check(self, final: bool = False) -> None:
        t = now()
        for life in self.lives.values():
            if life.deleted and life.done_at is None:
                continue
            js = self._jobset(life)
            if js is None:
                continue
            if life.done_at is None and life.finish_from is not None and not js["spec"].get(
                    "suspend") and t - life.finish_from > FINISH_DEADLINE:
                self.w.flag("not-finished", f"{life.ns}/{life.name} ({life.fate}, restarts "
                            f"{(js.get('status') or {}).get('restarts')}/{life.max_restarts}) "
                            f"{t - life.finish_from:.0f}s after its end", life.uid)
            if life.done_at is not None and life.ttl is not None and not js["metadata"].get(
                    "deletionTimestamp") and t - life.done_at > life.ttl + TTL_GRACE:
                self.w.flag("ttl", f"{life.ns}/{life.name}: ttl {life.ttl}s, finished "
                            f"{t - life.done_at:.0f}s ago", life.uid)

    def wind_down(self) -> None:
        """Nothing new; every JobSet left, resumed and carried to success."""
        for life in self.lives.values():
            if life.deleted or life.done_at is not None:
                continue
            if life.fate == "delete":
                life.fate = "succeed"
            life.ends_at = min(life.ends_at, now())
            if life.suspended_until is not None:
                life.suspended_until = now()

    def unfinished(self) -> list[Life]:
        out = []
        for life in self.lives.values():
            js = self._jobset(life)
            if js is not None and not _terminal(js) and not js["metadata"].get(
                    "deletionTimestamp"):
                out.append(life)
        return out

    def step_existing(self) -> None:
        for life in [lf for lf in self.lives.values() if not lf.deleted]:
            with contextlib.suppress(ApiError, KeyError, ValueError):
                self._step(life)

    def prune_events(self) -> None:
        """Events expire on a real cluster (an hour); here they would pile up."""
        items, _ = self.c.store.list(self.c.events_rt, None)
        for ev in items:
            with contextlib.suppress(ApiError):
                self.c.store.delete(self.c.events_rt, ev["metadata"]["namespace"],
                                    ev["metadata"]["name"], None)

