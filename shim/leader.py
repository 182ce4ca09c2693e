"""Leader election on a coordination.k8s.io/v1 Lease, with client-go's rules.

A candidate takes the Lease when it is free or when its record has not changed for
`lease_duration` seconds as measured on the candidate's own monotonic clock (never by comparing
wall clocks across machines). The leader renews every `retry_period`; it considers itself leader
only while its last successful renewal is younger than `renew_deadline` (< lease_duration), so a
leader that cannot renew stops acting before anyone else may start.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime

from kubernetes.client.exceptions import ApiException

from shim.kube import Kube, Obj

log = logging.getLogger(__name__)


def _micro_time() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    def __init__(
        self,
        kube: Kube,
        namespace: str,
        name: str,
        identity: str,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        on_started_leading: Callable[[], None] | None = None,
        on_stopped_leading: Callable[[], None] | None = None,
    ) -> None:
        if not retry_period < renew_deadline < lease_duration:
            raise ValueError("need retry_period < renew_deadline < lease_duration")
        self.kube = kube
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.on_started_leading = on_started_leading
        self.on_stopped_leading = on_stopped_leading
        self.res = kube.resource("coordination.k8s.io/v1", "Lease")
        self._observed: tuple[str, str, str] | None = None
        self._observed_at = 0.0
        self._last_renew = -1e18
        self._leading = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def is_leader(self) -> bool:
        """Leading, renewed within renew_deadline, and the last Lease read names no one else.

        The last check is client-go's IsLeader: a Lease seen held by another replica (it took
        the Lease, or an operator handed it over) means that replica may act now, so this one
        stops writing at once, not renew_deadline later when its own renewals run out.
        """
        observed = self._observed
        if observed is not None and observed[0] != self.identity:
            return False
        return self._leading and time.monotonic() - self._last_renew < self.renew_deadline

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="leader-election", daemon=True)
        self._thread.start()

    def stop(self, release: bool = True) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.retry_period + 5)
        if release and self._leading:
            self.release()
        self._leading = False

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                ok = self.try_acquire_or_renew()
            except Exception as exc:  # noqa: BLE001 - an API hiccup is a failed attempt
                log.warning("leader election: %s", exc)
                ok = False
            if ok:
                self._last_renew = started
                if not self._leading:
                    self._leading = True
                    log.info("leader election: %s is now the leader", self.identity)
                    if self.on_started_leading:
                        self.on_started_leading()
            elif self._leading and time.monotonic() - self._last_renew >= self.renew_deadline:
                self._leading = False
                log.error("leader election: %s lost the lease", self.identity)
                if self.on_stopped_leading:
                    self.on_stopped_leading()
                return
            self._stop.wait(self.retry_period)

    def _spec(self, acquire_time: str, transitions: int) -> Obj:
        return {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": max(1, round(self.lease_duration)),
            "acquireTime": acquire_time,
            "renewTime": _micro_time(),
            "leaseTransitions": transitions,
        }

    def try_acquire_or_renew(self) -> bool:
        try:
            lease = self.kube.get(self.res, self.namespace, self.name)
        except ApiException as exc:
            if exc.status != 404:
                raise
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": self._spec(_micro_time(), 0),
            }
            try:
                self.kube.create(self.res, self.namespace, body)
            except ApiException as cexc:
                if cexc.status == 409:
                    return False
                raise
            return True
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        record = (holder, str(spec.get("renewTime")), str(spec.get("leaseDurationSeconds")))
        now = time.monotonic()
        if record != self._observed:
            self._observed = record
            self._observed_at = now
        duration = float(spec.get("leaseDurationSeconds") or self.lease_duration)
        if holder and holder != self.identity and now - self._observed_at < duration:
            return False
        transitions = int(spec.get("leaseTransitions") or 0)
        if holder == self.identity:
            acquire = spec.get("acquireTime") or _micro_time()
        else:
            acquire = _micro_time()
            transitions += 1
        lease["spec"] = self._spec(acquire, transitions)
        try:
            updated = self.kube.replace(self.res, self.namespace, self.name, lease)
        except ApiException as exc:
            if exc.status == 409:
                return False
            raise
        s = updated.get("spec") or {}
        self._observed = (
            self.identity,
            str(s.get("renewTime")),
            str(s.get("leaseDurationSeconds")),
        )
        self._observed_at = time.monotonic()
        return True

    def release(self) -> None:
        """Give the Lease up so a standby takes over at once instead of after lease_duration."""
        try:
            lease = self.kube.get(self.res, self.namespace, self.name)
            if (lease.get("spec") or {}).get("holderIdentity") != self.identity:
                return
            lease["spec"]["holderIdentity"] = ""
            lease["spec"]["leaseDurationSeconds"] = 1
            lease["spec"]["renewTime"] = _micro_time()
            self.kube.replace(self.res, self.namespace, self.name, lease)
            log.info("leader election: %s released the lease", self.identity)
        except Exception as exc:  # noqa: BLE001 - best effort on the way out
            log.warning("leader election: release failed: %s", exc)
