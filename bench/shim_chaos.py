"""A chaos soak of the shim: JobSets live and die while the API server misbehaves.

One process holds a fake API server (tests/fakekube) with its Job simulator, a real decider, and
one or two shims under leader election. For --seconds, a driver keeps a population of JobSets
going through their lives: created (some suspended, some gang-scheduled, some reusing the name
of a deleted one), their Jobs run and become ready, random Jobs fail (restarts per the failure
policy), Jobs are deleted by a user, JobSets are suspended and resumed, finish (Completed, or
Failed once their restarts run out or a FailJobSet rule matches), are deleted by their TTL or
by a user. Meanwhile faults are injected: 5xx and 429 (with Retry-After) on reads and writes,
409 on writes, slow answers, watches closed, reset, cut in half or answered 410 (and the
watch history compacted), every watch dropped at once, seconds of 503 to everything; with
--silent-watches also watches left half-dead (see its help: the shim is blind for minutes).
Every so often the shim is rolled (a new replica, then the old one stops gracefully), crashes
(killed, the Lease left to expire), or runs beside a second replica for a while; a replica
that loses its Lease exits and is replaced, as its Deployment would replace it.

Invariants are checked as the store changes (a listener sees every write, in order) and every
second; they are listed in INVARIANTS below. Every minute the driver and the faults pause and
the request rate of the quiet cluster is measured. At the end faults stop, every JobSet left is
carried to success, and the run waits for the shim to finish them all.

    python bench/shim_chaos.py [--seconds 300] [--seed N] [--jobsets 16] [--log chaos.log]
                               [--disturb-every 30] [--silent-watches]

Exit status 1 if an invariant was violated.
"""

from __future__ import annotations

import argparse
import collections
import logging
import random
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "clients" / "python")]

from chaos_actors import Chaos, Driver, Fleet  # noqa: E402
from chaos_checks import (  # noqa: E402
    FINISH_DEADLINE,
    IDLE_MAX_RPS,
    INVARIANTS,
    ROOT,
    ErrorLog,
    Watchdog,
    now,
    rss_mb,
)

from decider.service.server import BackgroundServer  # noqa: E402
from fakekube import FakeKube, JobSimulator  # noqa: E402
from tests.shim.helpers import Cluster, ShimFactory  # noqa: E402

# ---- the run --------------------------------------------------------------------------------


@dataclass
class Window:
    at: float
    seconds: float
    rps: float
    lease_rps: float
    rss: float
    per_resource: dict[str, float]


def measure(kube: FakeKube, seconds: float) -> tuple[float, float, dict[str, float]]:
    with kube._audit_lock:
        before = collections.Counter(kube.request_counts)
    time.sleep(seconds)
    with kube._audit_lock:
        after = collections.Counter(kube.request_counts)
    diff = after - before
    lease = diff.pop("leases", 0)
    return (sum(diff.values()) / seconds, lease / seconds,
            {k: v / seconds for k, v in diff.most_common(4)})


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=300)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--jobsets", type=int, default=16, help="JobSets alive at once")
    ap.add_argument("--fault-every", type=float, default=1.0, help="mean seconds between faults")
    ap.add_argument("--disturb-every", type=float, default=30.0,
                    help="mean seconds between shim rolls, crashes and pairs")
    ap.add_argument("--quiet-every", type=float, default=60.0)
    ap.add_argument("--log", default="shim_chaos.log")
    ap.add_argument("--silent-watches", action="store_true",
                    help="also half-dead watches (accepted, then nothing, the peer still "
                    "answering TCP keepalive as a live process on loopback does): the shim "
                    "notices one only when its read deadline passes the watch's timeoutSeconds "
                    "(5-10 min) by shim.informer.WATCH_READ_MARGIN (30 s), so its JobSets stall "
                    "that long and the liveness invariants fire; off by default")
    args = ap.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    print(f"seed {seed}, {args.seconds:.0f}s, {args.jobsets} JobSets at once", flush=True)

    logging.basicConfig(filename=args.log, filemode="w", level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(threadName)s %(name)s: %(message)s")
    logging.getLogger("shim").setLevel(logging.INFO)
    t0 = now()
    kube = FakeKube(bookmark_interval=0.5, history_limit=20_000).start()
    sim = JobSimulator(kube.store, pods=True, pod_termination_seconds=0.1).start()
    tmp = Path(args.log).resolve().parent / "shim_chaos.kubeconfig"
    cluster = Cluster(kube, sim, kube.write_kubeconfig(tmp))
    watchdog = Watchdog(cluster, t0)
    chaos = Chaos(kube, rng, args.silent_watches)
    errors = ErrorLog(watchdog, chaos.lease_trouble)
    logging.getLogger().addHandler(errors)
    uncaught: list[str] = []
    previous_hook = threading.excepthook

    def hook(exc: threading.ExceptHookArgs) -> None:
        uncaught.append(f"{exc.thread.name if exc.thread else '?'}: {exc.exc_type.__name__}")
        watchdog.flag("error-log", f"uncaught in {uncaught[-1]}: {exc.exc_value}")
        previous_hook(exc)

    threading.excepthook = hook
    server = BackgroundServer("127.0.0.1:0").__enter__()
    factory = ShimFactory(cluster, server.target)
    fleet = Fleet(factory, watchdog, rng)
    driver = Driver(cluster, watchdog, rng, args.jobsets)
    windows: list[Window] = []
    busy_requests, busy_seconds = 0, 0.0
    rss_samples: list[float] = []

    def quiet(label: str) -> None:
        chaos.clear()
        driver.prune_events()
        # Settle: what the last faults put off (backoffs up to 1 s, a watch retried, a
        # replica catching up after an outage) is done; a loop never settles.
        settle_until = now() + 15.0
        time.sleep(2.0)
        while now() < settle_until and measure(kube, 1.0)[0] > IDLE_MAX_RPS:
            fleet.ensure()
        fleet.ensure()
        rps, lease_rps, per = measure(kube, 5.0)
        windows.append(Window(now() - t0, 5.0, rps, lease_rps, rss_mb(), per))
        print(f"  -- {label} at {now() - t0:6.1f}s: {rps:.2f} req/s ({lease_rps:.1f} Lease), "
              f"RSS {windows[-1].rss:.0f} MB, replicas {len(fleet.replicas)}, "
              f"JobSets {sum(1 for lf in driver.lives.values() if not lf.deleted)}, "
              f"top {({k: round(v, 2) for k, v in per.items()})}", flush=True)
        if rps > IDLE_MAX_RPS:
            watchdog.flag("hot-loop", f"{label}: {rps:.1f} req/s idle: {per}", f"{label}")

    def tick(until: float, faults: bool, step: Callable[[], None]) -> None:
        nonlocal busy_requests, busy_seconds
        next_fault = now() + rng.expovariate(1 / args.fault_every)
        next_disturb = now() + rng.expovariate(1 / args.disturb_every)
        next_quiet = now() + args.quiet_every
        next_scan = now()
        next_prune = now() + 10
        while now() < until:
            started = now()
            with kube._audit_lock:
                count_before = sum(kube.request_counts.values())
            chaos.end_outage()
            fleet.ensure()
            step()
            if faults and now() >= next_fault:
                if rng.random() < 0.01:
                    chaos.outage()
                else:
                    chaos.inject()
                next_fault = now() + rng.expovariate(1 / args.fault_every)
            if faults and now() >= next_disturb:
                fleet.disturb()
                next_disturb = now() + rng.expovariate(1 / args.disturb_every)
            if now() >= next_scan:
                watchdog.scan()
                driver.check()
                next_scan = now() + 1.0
            if now() >= next_prune:
                chaos.prune()
                driver.prune_events()
                rss_samples.append(rss_mb())
                next_prune = now() + 10
            time.sleep(0.2)
            with kube._audit_lock:
                busy_requests += sum(kube.request_counts.values()) - count_before
            busy_seconds += now() - started
            if faults and now() >= next_quiet and until - now() > 15:
                quiet("idle window")
                next_quiet = now() + args.quiet_every

    try:
        fleet.ensure()
        quiet("start")
        tick(t0 + args.seconds, True, driver.step)
        # The end: faults off, nothing new, everything left carried to success.
        chaos.clear()
        fleet.ensure()
        driver.wind_down()
        drain_until = now() + FINISH_DEADLINE + 10
        while driver.unfinished() and now() < drain_until:
            tick(min(drain_until, now() + 2), False, driver.step_existing)
        for life in driver.unfinished():
            js = driver._jobset(life)
            watchdog.flag("not-finished", f"{life.ns}/{life.name} ({life.fate}) at the end: "
                          f"restarts {(js or {}).get('status', {}).get('restarts')}, "
                          f"{len(driver._jobs(life))} Jobs", life.uid)
        # TTLs run out, a user deletes the rest: then the cluster is idle.
        tick(now() + 8, False, driver.step_existing)
        watchdog.scan()
        driver.check(final=True)
        quiet("final idle")
        sizes = fleet.sizes()
    finally:
        threading.excepthook = previous_hook
        fleet.stop_all()
        sim.stop()
        kube.stop()
        server.__exit__(None, None, None)

    if fleet.refused:
        watchdog.flag("refused-plan", f"{fleet.refused} plan(s) refused by the guard")
    first_rss, last_rss = windows[0].rss, windows[-1].rss
    # The first minute is warm-up (imports, the decider's and the caches' first fill): growth
    # is measured from a minute in, and a run too short to have that is not judged.
    steady = rss_samples[5] if len(rss_samples) > 8 else None
    if steady is not None and last_rss > steady * 1.25 and last_rss - steady > 30:
        watchdog.flag("rss", f"{steady:.0f} MB -> {last_rss:.0f} MB")
    idle = [w.rps for w in windows]
    busy_rps = busy_requests / busy_seconds if busy_seconds else 0.0
    live_js = len(kube.store.list(cluster.jobsets_rt, None)[0])

    print()
    print(f"shim chaos soak: seed {seed}, {now() - t0:.0f}s in all ({args.seconds:.0f}s of chaos)")
    rows = [
        ("JobSets created", driver.counts["created"]),
        ("  gang-scheduled", driver.counts["gang"]),
        ("  Completed / Failed", f"{driver.counts['completed']} / {driver.counts['failed']}"),
        ("  deleted: by user / by TTL",
         f"{driver.counts['user-deleted-jobsets']} / {driver.counts['ttl-deleted']}"),
        ("  suspended / resumed", f"{driver.counts['suspended']} / {driver.counts['resumed']}"),
        ("  left at the end", live_js),
        ("Jobs created (children: Jobs, Services, gang)", dict(watchdog.creates)),
        ("  of an old attempt (stale cache, then deleted)", watchdog.stale_creates),
        ("Job failures injected / successes", f"{driver.counts['job-failures']} / "
         f"{driver.counts['job-successes']}"),
        ("Jobs deleted by a user", driver.counts["user-deleted-jobs"]),
        ("restarts (most of one JobSet)", watchdog.max_restarts_seen),
        ("faults injected", sum(chaos.injected.values())),
        ("  by kind", dict(sorted(chaos.injected.items()))),
        ("shim replicas started", fleet.serial),
        ("  rolls / crashes / pairs / lost Lease / failed starts",
         f"{fleet.events['roll']} / {fleet.events['crash']} / {fleet.events['pair']} / "
         f"{fleet.events['lost-lease']} / {fleet.events['start-failed']}"),
        ("requests/s idle (each window, Leases excepted)", [round(x, 2) for x in idle]),
        ("requests/s busy (all)", round(busy_rps, 1)),
        ("RSS MB first / a minute in / last",
         f"{first_rss:.0f} / {f'{steady:.0f}' if steady else '(short run)'} / {last_rss:.0f}"),
        ("RSS MB every 10 s (min / max)",
         f"{min(rss_samples, default=0):.0f} / {max(rss_samples, default=0):.0f}"),
        ("shim tables at the end", sizes),
        ("ERROR lines / uncaught / Lease lost to a fault",
         f"{errors.count} / {len(uncaught)} / {errors.expected}"),
        ("invariant violations", len(watchdog.violations)),
    ]
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"  {k:<{width}}  {v}")
    by_kind = collections.Counter(v.kind for v in watchdog.violations)
    for kind in INVARIANTS:
        print(f"    {kind:<18} {by_kind.get(kind, 0):>4}  {INVARIANTS[kind]}")
    for v in watchdog.violations[:40]:
        print(f"  {v.at:7.1f}s {v.kind}: {v.detail}")
    return 1 if watchdog.violations else 0


if __name__ == "__main__":
    sys.exit(main())
