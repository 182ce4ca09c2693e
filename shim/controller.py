"""The shim: watch -> observe -> ask the decider -> check the plan -> apply.

The shim decides nothing itself. It keeps a cache of the JobSets it manages and of the objects
they control, turns one JobSet and its objects into a DecideRequest (decider_client.observe),
and applies the plan once the guard (shim/guard.py) found every action inside the JobSet.
Everything else (which Jobs, which status, when to restart) is the decider's answer.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

import grpc

from decider_api.v1 import decider_pb2 as pb
from decider_client import DeciderClient
from decider_client.observe import build_decide_request
from decider_telemetry import Telemetry
from shim import watches
from shim.admission import SpecCheck
from shim.apply import Applier, NotLeader, StaleObservation
from shim.config import Config
from shim.expectations import Expectations
from shim.guard import PlanGuard
from shim.kube import Kube, Obj
from shim.leader import LeaderElector
from shim.observation import Observation
from shim.owned import BY_NAME_KINDS, OwnedIndex
from shim.refusals import DecisionRefused, PlanRefused, as_refusal, report
from shim.telemetry import ShimTelemetry
from shim.wakes import Wakes
from shim.workqueue import WorkQueue

log = logging.getLogger(__name__)

Key = tuple[str, str]


@dataclass
class Stats:
    reconciles: int = 0
    errors: int = 0
    conflicts: int = 0
    # Passes put off until the caches showed the JobSet's own last writes.
    deferred: int = 0
    # Plans the guard refused; decisions the decider refused (a REFUSAL_CODES status).
    refused_plans: int = 0
    refused_decisions: int = 0
    decide_seconds: list[float] = field(default_factory=list)


class Shim:
    def __init__(
        self,
        config: Config,
        kube: Kube,
        decider: DeciderClient,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        telemetry: Telemetry | None = None,
    ) -> None:
        self.config = config
        self.kube = kube
        self.decider = decider
        self.clock = clock
        self.stats = Stats()
        self.queue = WorkQueue(config.backoff_base, config.backoff_max,
                               config.min_requeue_after, config.max_requeue_after)
        self.telemetry = ShimTelemetry(telemetry, queue_depth=lambda: len(self.queue))
        kube.observer = self.telemetry
        self._stop = threading.Event()
        self._workers: list[threading.Thread] = []
        self._leading = threading.Event()
        self._lost = threading.Event()
        self.elector: LeaderElector | None = None
        if config.leader_elect:
            self.elector = LeaderElector(
                kube.for_leader_election(),
                config.leader_elect_namespace,
                config.leader_elect_name,
                config.identity,
                config.lease_duration,
                config.renew_deadline,
                config.retry_period,
                on_started_leading=self._leading.set,
                on_stopped_leading=self._on_lost,
            )
        self.guard = PlanGuard({kind: api_version for api_version, kind in config.gang_kinds})
        self._owned = OwnedIndex()
        # Late bound: the expectations and the observation are built on the watches.
        self.wakes = Wakes(
            self.queue, self._owned, self.ours, config.owned_update_batch_period,
            awaiting=lambda key: self.expectations.awaiting(key),
            forget=lambda key: self.expectations.forget(key),
            jobsets_naming=lambda ns, name: self.observation.jobsets_naming(ns, name))
        w = watches.build(kube, config, self.wakes.on_jobset, self.wakes.on_owned,
                          self.wakes.on_gang, self.wakes.on_pod)
        self.jobsets, self.informers = w.jobsets, w.informers
        self.gang_informers, self.pods = w.gang_informers, w.pods
        self.observation = Observation(w, self._owned, self.ours)
        # A Retain PVC has no owner: its create is awaited by name (Observation.cached).
        self.expectations = Expectations(
            self.observation.cached, {kind for _, kind in config.owned_kinds},
            by_name=BY_NAME_KINDS)
        self.applier = Applier(
            kube,
            config.controller_name,
            config.identity,
            self.is_leader,
            config.max_parallel_writes,
            gang_kinds={kind: api_version for api_version, kind in config.gang_kinds},
            background_events=True,
            expectations=self.expectations,
        )
        self.spec_check = SpecCheck(
            decider, self.applier.recorder, config.feature_gates, config.decider_timeout,
            self.observation.foreign_pvcs,
            traced=lambda method: self.telemetry.decider_call(method, config.decider_address))

    # ---- leadership -----------------------------------------------------------------------

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def is_leader(self) -> bool:
        if self._stop.is_set():
            return False
        return self.elector is None or self.elector.is_leader()

    def _on_lost(self) -> None:
        self._lost.set()
        self._stop.set()
        self.queue.shutdown()

    def _not_leading(self, key: Key) -> None:
        """A key met while not leading is kept for later, not dropped: leadership may come
        back without being lost (a renewal that succeeded late, a Lease handed back), and a
        dropped key waited for its JobSet's next event, which may never come. Lost for good,
        the process exits and a new leader lists everything anyway."""
        if not self._stop.is_set():
            self.queue.add_after(key, self.config.retry_period)

    # ---- event handlers (shim/wakes.py) -----------------------------------------------------

    def ours(self, jobset: Obj) -> bool:
        return (jobset.get("spec") or {}).get("managedBy") == self.config.controller_name

    def owned(self, jobset: Obj) -> list[Obj]:
        """What a pass sends the decider beside the JobSet (Observation.owned)."""
        return self.observation.owned(jobset)

    # ---- one pass ------------------------------------------------------------------------

    def reconcile(self, key: Key) -> float:
        """One observe -> decide -> apply pass; returns the requeue delay the plan asked for."""
        with self.telemetry.reconcile(*key) as result:
            try:
                return self._reconcile(key)
            except (PlanRefused, DecisionRefused, StaleObservation, NotLeader) as exc:
                result[0] = type(exc).__name__
                raise
            except grpc.RpcError as exc:
                code = exc.code().name if hasattr(exc, "code") else "UNKNOWN"
                result[0] = "DeciderError"
                self.telemetry.decider_error(code)
                raise

    def _reconcile(self, key: Key) -> float:
        namespace, name = key
        jobset = self.jobsets.get(namespace, name)
        if jobset is None or not self.ours(jobset):
            return 0.0
        if jobset["metadata"].get("deletionTimestamp"):
            return 0.0
        # What admission would refuse is not acted on: this generation waits for the next.
        if not self.spec_check.admissible(jobset):
            return 0.0
        # The guard checks the plan against this snapshot, the one it was decided on: what the
        # JobSet controlled then may be deleted or patched (UID preconditions catch later change).
        observed = self.owned(jobset)
        request = build_decide_request(
            jobset,
            observed,
            self.clock(),
            self.config.controller_name,
            self.config.feature_gates,
            gang_api_version=self.config.scheduling_api_version,
            gang_target=self.config.gang_target,
        )
        started = time.perf_counter()
        try:
            with self.telemetry.decider_call("Decide", self.config.decider_address) as metadata:
                plan: pb.DecideResponse = self.decider.decide(
                    request,
                    timeout=self.config.decider_timeout,
                    metadata=metadata,
                )
        except grpc.RpcError as exc:
            refused = as_refusal(jobset, exc)
            if refused is not None:
                self.telemetry.decider_error(exc.code().name)
                raise refused from exc
            raise
        self.stats.decide_seconds.append(time.perf_counter() - started)
        refusal = self.guard.check(jobset, observed, plan)
        if refusal is not None:
            raise PlanRefused(jobset, refusal)
        if plan.actions:
            log.info(
                "%s/%s: %s",
                namespace,
                name,
                "; ".join(plan.explanation) or f"{len(plan.actions)} actions",
            )
        self.applier.apply(jobset, plan)
        # The exact delay (a TTL's remainder) when the decider sends one; whole seconds from a
        # decider that predates it.
        if plan.HasField("requeue_after"):
            return plan.requeue_after.ToTimedelta().total_seconds()
        return float(plan.requeue_after_seconds)

    def process(self, key: Key) -> bool:
        """Reconcile one key with the queue's bookkeeping; False if the pass failed."""
        wait = self.expectations.unseen(key, self.jobsets.get(*key))
        if wait is not None:
            # Deciding now would plan again what the last pass did: the event that brings its
            # writes queues the JobSet again; the delayed add only covers one that never comes.
            self.stats.deferred += 1
            self.wakes.put_off(key, wait)
            return True
        self.wakes.claim(key)
        self.stats.reconciles += 1
        try:
            requeue = self.reconcile(key)
        except NotLeader:
            self._not_leading(key)
            return False
        except (PlanRefused, DecisionRefused) as exc:
            self.stats.errors += 1
            delay = self.queue.add_rate_limited(
                key, self.config.refusal_backoff_base, self.config.refusal_backoff_max
            )
            self._report_refusal(exc)
            log.warning("%s/%s: %s; retrying in %.0fs", key[0], key[1], exc, delay)
            return False
        except StaleObservation as exc:
            # The newer JobSet is on its way through the watch and will queue this key again
            # at once; the delayed retry only covers a watch that is behind, and backs off as
            # upstream's conflicts do (rate limited): a watch silent for a minute otherwise
            # got a pass, its creates and its status write, every 0.05 s.
            self.stats.conflicts += 1
            delay = self.queue.add_rate_limited(key, max(self.config.backoff_base, 0.05))
            log.info("%s/%s: %s; observing again (at the latest in %.2fs)", key[0], key[1],
                     exc, delay)
            return False
        except Exception as exc:  # noqa: BLE001 - any failure is retried with backoff
            self.stats.errors += 1
            delay = self.queue.add_rate_limited(key)
            what = (
                f"decider call failed ({exc.code()})"
                if isinstance(exc, grpc.RpcError) and hasattr(exc, "code")
                else f"reconcile failed: {exc}"
            )
            log.warning("%s/%s: %s; retrying in %.2fs", key[0], key[1], what, delay)
            return False
        self.queue.forget(key)
        jobset = self.jobsets.get(*key)
        if jobset is not None:
            self.applier.recorder.forget(jobset["metadata"].get("uid", ""))
        delay = self.queue.requeue(key, requeue)
        if delay is not None and delay > requeue:
            log.debug("%s/%s: requeue after %.3fs asked again; waiting %.3fs", key[0], key[1],
                      requeue, delay)
        return True

    def _report_refusal(self, exc: PlanRefused | DecisionRefused) -> None:
        if isinstance(exc, PlanRefused):
            self.stats.refused_plans += 1
        else:
            self.stats.refused_decisions += 1
        report(self.applier.recorder, exc)

    def _worker(self) -> None:
        while not self._stop.is_set():
            key = self.queue.get()
            if key is None:
                return
            try:
                if self.is_leader():
                    self.process(key)  # type: ignore[arg-type]
                else:
                    self._not_leading(key)  # type: ignore[arg-type]
            finally:
                self.queue.done(key)

    # ---- lifecycle ------------------------------------------------------------------------

    def start_informers(self, timeout: float = 60.0) -> None:
        for inf in self.informers:
            inf.start()
        for inf in self.informers:
            if not inf.wait_synced(timeout):
                raise TimeoutError(f"cache of {inf.resource.plural} did not sync in {timeout}s")

    def managed_keys(self) -> list[Key]:
        return sorted(
            (j["metadata"]["namespace"], j["metadata"]["name"])
            for j in self.jobsets.items()
            if self.ours(j)
        )

    def start(self) -> None:
        """Start watching and, once leader, reconciling. Returns at once."""
        self.start_informers(self.config.cache_sync_timeout)
        if self.elector is not None:
            self.elector.start()
        threading.Thread(target=self._start_workers, name="shim-start", daemon=True).start()

    def _start_workers(self) -> None:
        if self.elector is not None:
            while not self._leading.wait(0.1):
                if self._stop.is_set():
                    return
        if self._stop.is_set():
            return
        # Everything the cache holds gets a pass as soon as this replica may act.
        for key in self.managed_keys():
            self.queue.add(key)
        for i in range(self.config.workers):
            t = threading.Thread(target=self._worker, name=f"shim-worker-{i}", daemon=True)
            t.start()
            self._workers.append(t)

    def run(self) -> int:
        """Run until stop() or lost leadership; the exit status for main()."""
        self.start()
        self._stop.wait()
        self.shutdown()
        return 1 if self._lost.is_set() else 0

    def stop(self) -> None:
        self._stop.set()
        self.queue.shutdown()

    def shutdown(self, release: bool = True) -> None:
        """Graceful: stop taking work, let in-flight passes finish, release the lease."""
        self.stop()
        for t in self._workers:
            t.join(timeout=self.config.decider_timeout + 10)
        for inf in self.informers:
            inf.stop()
        for inf in self.informers:
            inf.join(2.0)
        self.applier.close()
        if self.elector is not None:
            self.elector.stop(release=release)

    def kill(self) -> None:
        """Stop abruptly, as a crashed process would: no lease release, no waiting."""
        self._stop.set()
        self.queue.shutdown()
        for inf in self.informers:
            inf.stop()
        if self.elector is not None:
            self.elector.stop(release=False)

    def run_once(self) -> int:
        """One pass over every managed JobSet, then exit: 0 if every pass succeeded."""
        self.start_informers(self.config.cache_sync_timeout)
        try:
            if self.elector is not None:
                if not self.elector.try_acquire_or_renew():
                    log.error("another replica holds lease %s", self.config.leader_elect_name)
                    return 3
                self.elector._leading = True
                self.elector._last_renew = time.monotonic()
            failed = 0
            for key in self.managed_keys():
                try:
                    self.reconcile(key)
                except Exception as exc:  # noqa: BLE001 - report and go on with the others
                    failed += 1
                    if isinstance(exc, PlanRefused | DecisionRefused):
                        self._report_refusal(exc)
                    log.error("%s/%s: %s", key[0], key[1], exc)
            return 1 if failed else 0
        finally:
            for inf in self.informers:
                inf.stop()
            self.applier.close()
            if self.elector is not None and self.elector._leading:
                self.elector.release()
