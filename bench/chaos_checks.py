"""The chaos soak's invariants and what it reads of the store (bench/shim_chaos.py)."""

from __future__ import annotations

import collections
import logging
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "clients" / "python")]

from tests.shim.helpers import Cluster  # noqa: E402

NAMESPACES = ("chaos-a", "chaos-b")
ATTEMPT = "jobset.sigs.k8s.io/restart-attempt"
GANG_POLICY = "jobset-decider.io/gang-policy"
JOBS = "batch/v1/jobs"
JOBSETS = "jobset.x-k8s.io/v1alpha2/jobsets"

# How long the shim may take, under faults, before a lag is a violation. An informer behind
# by a few watch retries and a backoff of at most 1 s (the factory's backoff_max) is seconds;
# a replica taking over a crashed one's Lease is lease_duration (2 s) plus its start.
# A create based on a JobSet seen before it was deleted or finished: the JobSet watch may be
# behind by its reflector's backoff (capped at 30 s here and in client-go's reflector) and a
# relist; upstream creates from such a cache too and the garbage collector removes a Job whose
# owner is gone (a soak run met one 5 s after the deletion, the JobSet watch backing off
# through 503s and a 410). What must not happen is checked as orphan-kept.
CACHE_LAG = 35.0
ORPHAN_GC = 10.0  # a Job whose JobSet is gone, still not deleting
STALE_JOB_GRACE = 30.0  # an old attempt's Job still running after the restart
FINISH_DEADLINE = 60.0  # from the last Job's success or failure to the JobSet's condition
TTL_GRACE = 30.0  # past ttlSecondsAfterFinished
STALL_GRACE = 45.0  # a running JobSet without its full set of Jobs
IDLE_MAX_RPS = 3.0  # requests a second, Leases excepted, to a cluster where nothing happens

INVARIANTS = {
    "future-attempt": "a Job created with a restart attempt above its JobSet's status.restarts",
    "blocking-overlap": "BlockingRecreate: a Job of attempt N created while one of an older "
    "attempt still exists",
    "stale-job": f"a Job of an old attempt still live {STALE_JOB_GRACE:.0f}s after the restart",
    "orphan-create": f"a Job created for a JobSet deleted (or deleting) over {CACHE_LAG:.0f}s "
    "before",
    "orphan-kept": f"a Job whose JobSet is gone still not deleting {ORPHAN_GC:.0f}s on",
    "finished-create": f"a Job created for a JobSet finished over {CACHE_LAG:.0f}s before",
    "namespace": "an object created outside its owning JobSet's namespace (or for no JobSet)",
    "no-attempt": "a Job created without a restart-attempt label",
    "restarts-decrease": "status.restarts of one JobSet went down",
    "terminal-reverted": "a Completed/Failed condition removed, or both set",
    "not-finished": f"a JobSet that should finish has no condition {FINISH_DEADLINE:.0f}s on",
    "ttl": f"a finished JobSet still there {TTL_GRACE:.0f}s past its TTL",
    "stalled": f"a running JobSet without all its Jobs for {STALL_GRACE:.0f}s",
    "start-exit": "a replica that would exit at start on a transient API error",
    "refused-plan": "the plan guard refused a real plan",
    "error-log": "an ERROR log line or an uncaught exception in the shim's threads",
    "hot-loop": f"over {IDLE_MAX_RPS} requests/s (Leases excepted) to an idle cluster",
    "rss": "resident memory grew over 25% (and 30 MB) from a minute in to the end",
}


def now() -> float:
    return time.monotonic()


def _owner(obj: dict[str, Any]) -> dict[str, Any] | None:
    for ref in obj["metadata"].get("ownerReferences") or []:
        if ref.get("controller") and ref.get("kind") == "JobSet":
            return ref
    return None


def _attempt(job: dict[str, Any]) -> int | None:
    raw = (job["metadata"].get("labels") or {}).get(ATTEMPT)
    return int(raw) if raw is not None and str(raw).isdigit() else None


def _terminal(js: dict[str, Any]) -> set[str]:
    return {
        c["type"]
        for c in (js.get("status") or {}).get("conditions") or []
        if c.get("type") in ("Completed", "Failed") and c.get("status") == "True"
    }


def _job_done(job: dict[str, Any]) -> bool:
    return any(
        c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
        for c in (job.get("status") or {}).get("conditions") or []
    )


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


# ---- invariants -----------------------------------------------------------------------------


@dataclass
class Violation:
    at: float
    kind: str
    detail: str


class Watchdog:
    """Checks what the store sees, in the order it sees it (a listener runs under its lock)."""

    def __init__(self, cluster: Cluster, t0: float) -> None:
        self.cluster = cluster
        self.t0 = t0
        self.violations: list[Violation] = []
        self._seen: set[tuple[str, str]] = set()
        self._lock = threading.Lock()
        self.js_ns: dict[str, str] = {}
        self.js_restarts: dict[str, int] = {}
        self.js_strategy: dict[str, str] = {}
        self.js_gone: dict[str, float] = {}
        self.js_terminal: dict[str, tuple[set[str], float]] = {}
        # uid of JobSet -> Job name -> (attempt, job uid)
        self.jobs_of: dict[str, dict[str, tuple[int, str]]] = collections.defaultdict(dict)
        self.stale_since: dict[str, float] = {}
        self.stale_creates = 0
        self.creates: collections.Counter[str] = collections.Counter()
        self.max_restarts_seen = 0
        cluster.store.add_listener(self._on_event)

    def flag(self, kind: str, detail: str, key: str = "") -> None:
        with self._lock:
            if (kind, key or detail) in self._seen:
                return
            self._seen.add((kind, key or detail))
            self.violations.append(Violation(now() - self.t0, kind, detail))
        print(f"  !! {now() - self.t0:7.1f}s {kind}: {detail}", flush=True)

    def _on_event(self, resource: str, etype: str, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        if resource == JOBSETS:
            self._on_jobset(etype, obj)
            return
        ref = _owner(obj)
        if etype == "ADDED" and ref is not None:
            self.creates[resource.rsplit("/", 1)[-1]] += 1
            owner_ns = self.js_ns.get(ref["uid"])
            if owner_ns != meta.get("namespace"):
                self.flag("namespace", f"{resource} {meta.get('namespace')}/{meta['name']} owned "
                          f"by JobSet {ref['name']} in {owner_ns!r}")
        if resource == JOBS and ref is not None:
            self._on_job(etype, obj, ref)

    def _on_jobset(self, etype: str, js: dict[str, Any]) -> None:
        meta, uid = js["metadata"], js["metadata"]["uid"]
        name = f"{meta['namespace']}/{meta['name']}"
        if etype == "DELETED":
            self.js_gone.setdefault(uid, now())
            return
        if etype == "ADDED":
            self.js_ns[uid] = meta["namespace"]
            policy = (js.get("spec") or {}).get("failurePolicy") or {}
            self.js_strategy[uid] = policy.get("restartStrategy", "Recreate")
        if meta.get("deletionTimestamp"):
            self.js_gone.setdefault(uid, now())
        restarts = int((js.get("status") or {}).get("restarts") or 0)
        before = self.js_restarts.get(uid, 0)
        if restarts < before:
            self.flag("restarts-decrease", f"{name}: {before} -> {restarts}", uid)
        self.js_restarts[uid] = max(before, restarts)
        self.max_restarts_seen = max(self.max_restarts_seen, restarts)
        terminal = _terminal(js)
        was = self.js_terminal.get(uid)
        if len(terminal) > 1 or (was is not None and not was[0] <= terminal):
            self.flag("terminal-reverted", f"{name}: {sorted(was[0]) if was else []} -> "
                      f"{sorted(terminal)}", uid)
        if terminal and was is None:
            self.js_terminal[uid] = (terminal, now())

    def _on_job(self, etype: str, job: dict[str, Any], ref: dict[str, Any]) -> None:
        meta, uid = job["metadata"], ref["uid"]
        name = f"{meta['namespace']}/{meta['name']}"
        attempt = _attempt(job)
        if etype == "DELETED":
            self.jobs_of[uid].pop(meta["name"], None)
            if not self.jobs_of[uid]:
                self.jobs_of.pop(uid, None)
            self.stale_since.pop(meta["uid"], None)
            return
        if etype != "ADDED":
            return
        if attempt is None:
            self.flag("no-attempt", name)
            return
        restarts = self.js_restarts.get(uid, 0)
        t = now()
        if attempt > restarts:
            self.flag("future-attempt", f"{name}: attempt {attempt}, JobSet restarts {restarts}")
        elif attempt < restarts:
            self.stale_creates += 1
        gone = self.js_gone.get(uid)
        if gone is not None and t - gone > CACHE_LAG:
            self.flag("orphan-create", f"{name}: its JobSet deleted {t - gone:.1f}s before")
        finished = self.js_terminal.get(uid)
        if finished is not None and t - finished[1] > CACHE_LAG:
            self.flag("finished-create", f"{name}: its JobSet {sorted(finished[0])} "
                      f"{t - finished[1]:.1f}s before")
        if self.js_strategy.get(uid) == "BlockingRecreate":
            older = [n for n, (a, _) in self.jobs_of.get(uid, {}).items() if a < attempt]
            if older:
                self.flag("blocking-overlap", f"{name} (attempt {attempt}) while {older} of an "
                          "older attempt exist")
        self.jobs_of[uid][meta["name"]] = (attempt, meta["uid"])

    def scan(self) -> None:
        """What only time shows: an old attempt's Jobs left running."""
        t = now()
        jobs, _ = self.cluster.store.list(self.cluster.jobs_rt, None)
        live = set()
        for job in jobs:
            ref = _owner(job)
            attempt = _attempt(job)
            if ref is None or attempt is None or job["metadata"].get("deletionTimestamp"):
                continue
            gone = self.js_gone.get(ref["uid"])
            if gone is not None and t - gone > ORPHAN_GC:
                self.flag("orphan-kept", f"{job['metadata']['namespace']}/"
                          f"{job['metadata']['name']}: its JobSet gone {t - gone:.0f}s ago",
                          job["metadata"]["uid"])
            if attempt < self.js_restarts.get(ref["uid"], 0) and ref["uid"] not in self.js_gone:
                juid = job["metadata"]["uid"]
                live.add(juid)
                since = self.stale_since.setdefault(juid, t)
                if t - since > STALE_JOB_GRACE:
                    self.flag("stale-job", f"{job['metadata']['namespace']}/"
                              f"{job['metadata']['name']} attempt {attempt}, JobSet restarts "
                              f"{self.js_restarts[ref['uid']]}", juid)
        for juid in [u for u in self.stale_since if u not in live]:
            del self.stale_since[juid]


class ErrorLog(logging.Handler):
    """ERROR lines of the shim. One is expected: a leader that could not renew its Lease for
    renew_deadline says so as it exits (client-go's elector and controller-runtime's manager
    do too), when the run had made the Lease unreachable; without such a fault it is a
    finding (a renewal starved, a slow path holding the elector back)."""

    def __init__(self, watchdog: Watchdog, lease_trouble: Callable[[], bool]) -> None:
        super().__init__(logging.ERROR)
        self.watchdog = watchdog
        self.lease_trouble = lease_trouble
        self.count = 0
        self.expected = 0

    def emit(self, record: logging.LogRecord) -> None:
        if record.name.split(".")[0] not in ("shim", "decider", "decider_client"):
            return
        text = record.getMessage()
        if record.name == "shim.leader" and "lost the lease" in text and self.lease_trouble():
            self.expected += 1
            return
        self.count += 1
        if record.exc_info:
            text += f" [{record.exc_info[0].__name__ if record.exc_info[0] else ''}]"
        self.watchdog.flag("error-log", f"{record.name}: {text[:300]}", text[:80])

