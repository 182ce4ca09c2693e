"""The shim while the API server is away, and while another replica takes its Lease."""

from __future__ import annotations

import time
from typing import Any

import pytest
from kubernetes import client

from fakekube import FakeKube
from shim.kube import Kube
from shim.leader import LeaderElector, _micro_time
from tests.shim.helpers import NS, jobset, rjob, wait_for

pytestmark = pytest.mark.waits


def _owner_uid(job: dict[str, Any]) -> str:
    return job["metadata"]["ownerReferences"][0]["uid"]


def test_an_api_server_away_for_seconds_is_waited_out_and_what_changed_is_reconciled(
        cluster, shims, caplog):
    shim = shims.start()
    cluster.create_jobset(jobset("kept", rjob("workers", 2)))
    cluster.create_jobset(jobset("again", rjob("workers", 1)))
    wait_for(lambda: len(cluster.live_jobs("kept-")) == 2 and len(cluster.live_jobs("again-")) == 1,
             what="jobs before the outage")
    old_uid = cluster.jobset("again")["metadata"]["uid"]

    # Every request answered 503 and every watch cut, as an API server restarting; meanwhile
    # its store changes: a JobSet is deleted and made again under the same name (a new UID),
    # another is created.
    cluster.kube.add_fault("*", ".*", code=503)
    cluster.store.drop_watches()
    # A real API server restarted (tests/e2e/test_faults.py) answers a watch resumed from
    # before the restart 410: its watch cache starts afresh at etcd's revision. So re-list.
    cluster.store.compact()
    started = len(cluster.kube.reads())
    cluster.store.delete(cluster.jobsets_rt, NS, "again", {"propagationPolicy": "Background"})
    wait_for(lambda: not cluster.live_jobs("again-"), what="the old JobSet's jobs collected")
    cluster.create_jobset(jobset("again", rjob("workers", 1)))
    cluster.create_jobset(jobset("new", rjob("workers", 1)))
    time.sleep(4.0)
    # A backoff, not a loop: a few lists and watches a second at most across all informers.
    assert len(cluster.kube.reads()) - started < 8 * len(shim.informers)
    warnings = [r for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) < 8 * len(shim.informers) + 40
    cluster.kube.clear_faults()

    wait_for(lambda: len(cluster.live_jobs("new-")) == 1, what="the new JobSet's job")
    new_uid = cluster.jobset("again")["metadata"]["uid"]
    assert new_uid != old_uid
    wait_for(lambda: [_owner_uid(j) for j in cluster.live_jobs("again-")] == [new_uid],
             what="the recreated JobSet's job, owned by the new UID")
    assert len(cluster.live_jobs("kept-")) == 2


def _elector(fake: FakeKube, identity: str, **kw: Any) -> LeaderElector:
    configuration = client.Configuration()
    configuration.host = fake.url
    kube = Kube(client.ApiClient(configuration), request_timeout=5.0).for_leader_election()
    return LeaderElector(kube, NS, "shim", identity, **kw)


@pytest.mark.parametrize("holder", ["other-replica", ""])
def test_a_lease_seen_held_by_another_stops_the_leader_at_once(holder):
    with FakeKube() as fake:
        lost: list[bool] = []
        # Its renew deadline is far past the wait below: stopping within that wait is the
        # Lease seen held by another, not the deadline running out.
        a = _elector(fake, "a", lease_duration=60.0, renew_deadline=45.0, retry_period=0.1,
                     on_stopped_leading=lambda: lost.append(True))
        a.start()
        try:
            wait_for(a.is_leader, what="a leads")
            rt = fake.store.resource_for("coordination.k8s.io", "v1", "leases")

            def hand_over(lease: dict[str, Any]) -> None:
                # What another replica's acquire (or `kubectl edit`) writes.
                lease["spec"].update(holderIdentity=holder, renewTime=_micro_time(),
                                     leaseDurationSeconds=15)

            fake.store.mutate(rt, NS, "shim", hand_over, False)
            if holder:
                # Another holder may write now: this replica must not, long before its own
                # renew deadline (45 s) runs out.
                wait_for(lambda: not a.is_leader(), timeout=30.0, what="a stops leading")
                assert not lost
            else:
                # A Lease released to no one is free: the leader takes it back, never two.
                wait_for(lambda: fake.store.get(rt, NS, "shim")["spec"]["holderIdentity"] == "a"
                         and a.is_leader(), what="a holds the Lease again")
        finally:
            a.stop(release=False)


class _Leadership:
    """An elector whose answer the test sets: leadership that goes and comes back without
    being lost (a renewal that succeeded late, a Lease handed back)."""

    def __init__(self) -> None:
        self.leading = False

    def is_leader(self) -> bool:
        return self.leading

    def stop(self, release: bool = True) -> None:
        pass


def test_a_jobset_met_while_not_leading_is_reconciled_once_leading_again(cluster, shims):
    shim = shims.start(retry_period=0.2)
    wait_for(lambda: len(shim._workers) == 2, what="the workers")
    leadership = _Leadership()
    shim.elector = leadership  # type: ignore[assignment]
    cluster.create_jobset(jobset("waits", rjob("workers", 2)))
    # The JobSet's one event is met while not leading: its key is put off for a retry period
    # rather than decided.
    wait_for(lambda: shim.queue.due_in((NS, "waits")) is not None,
             what="the key put off while not leading")
    assert cluster.live_jobs("waits-") == []
    leadership.leading = True
    # No new event comes: the key was kept, not dropped.
    wait_for(lambda: len(cluster.live_jobs("waits-")) == 2, what="the jobs, once leading again")
