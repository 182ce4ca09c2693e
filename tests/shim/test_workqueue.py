"""The work queue's guarantees: coalescing, one in flight per key, delays, backoff."""

from __future__ import annotations

import threading
import time

import pytest

from shim.workqueue import WorkQueue
from support.waiting import HANG_GUARD, wait_for

pytestmark = pytest.mark.waits


def test_events_for_a_waiting_key_coalesce():
    q = WorkQueue()
    for _ in range(5):
        q.add("a")
    q.add("b")
    assert len(q) == 2
    assert q.get(0.1) == "a" and q.get(0.1) == "b" and q.get(0.05) is None


def test_a_key_is_never_processed_twice_at_once():
    q = WorkQueue()
    q.add("a")
    assert q.get(0.1) == "a"
    q.add("a")  # arrives while "a" is being processed
    assert q.get(0.05) is None  # not handed to a second worker
    q.done("a")
    assert q.get(0.1) == "a"  # but processed again afterwards
    q.done("a")
    assert q.idle()


def test_concurrent_workers_respect_one_in_flight():
    q = WorkQueue()
    active: dict[str, int] = {}
    overlap = []
    lock = threading.Lock()

    def worker():
        while (key := q.get()) is not None:
            with lock:
                active[key] = active.get(key, 0) + 1
                if active[key] > 1:
                    overlap.append(key)
            time.sleep(0.002)
            with lock:
                active[key] -= 1
            q.done(key)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for i in range(300):
        q.add(f"k{i % 3}")
    # Every add processed (the workers wait for keys until shut down, however long the
    # machine takes to hand them out).
    wait_for(q.idle, what="every key processed")
    q.shutdown()
    for t in threads:
        t.join(HANG_GUARD)
    assert overlap == []


def test_add_after_keeps_the_earliest_due_time():
    q = WorkQueue()
    q.add_after("a", 5.0)
    q.add_after("a", 0.05)
    q.add_after("a", 3.0)
    # The 0.05 s schedule is the one kept (what is left of it can only shrink).
    due_in = q.due_in("a")
    assert due_in is not None and due_in <= 0.05
    assert q.get(HANG_GUARD) == "a"


def test_cancel_after_drops_only_the_schedule_it_names():
    q = WorkQueue()
    due = q.add_after("a", 0.05)
    assert q.add_after("a", 5.0) == due  # the earlier one stays
    assert not q.cancel_after("a", due + 1)
    assert q.cancel_after("a", due)
    assert q.due_in("a") is None
    assert q.get(0.2) is None


def test_rate_limited_backoff_grows_and_forget_resets():
    q = WorkQueue(base_delay=0.01, max_delay=0.08)
    delays = [q.add_rate_limited("a") for _ in range(5)]
    assert delays == [0.01, 0.02, 0.04, 0.08, 0.08]
    q.forget("a")
    assert q.add_rate_limited("a") == 0.01


def test_shutdown_wakes_waiting_workers():
    q = WorkQueue()
    got = []
    t = threading.Thread(target=lambda: got.append(q.get()))
    t.start()
    # The worker is asleep on the queue (not yet to come to a queue already shut down).
    wait_for(lambda: q._cond._waiters, what="the worker waiting")  # type: ignore[attr-defined]
    q.shutdown()
    t.join(HANG_GUARD)
    assert got == [None]


def test_a_slow_backoff_counts_its_own_failures_and_is_visible_as_due_in():
    q = WorkQueue(base_delay=0.005, max_delay=300.0)
    assert q.due_in("a") is None
    # Quick retries first (a decider restarting): the first refusal still waits its base, not
    # 30 s x 2^4 (docs/shim.md: "30 s, doubling to 10 min").
    quick = WorkQueue(base_delay=0.005, max_delay=300.0)
    assert [quick.add_rate_limited("x") for _ in range(4)] == [0.005, 0.01, 0.02, 0.04]
    assert quick.add_rate_limited("x", 30.0, 600.0) == 30.0
    assert quick.add_rate_limited("x") == 0.08
    assert quick.failures("x") == 6
    assert q.add_rate_limited("a", 30.0, 600.0) == 30.0
    assert 29.0 < q.due_in("a") <= 30.0
    assert q.add_rate_limited("a", 30.0, 600.0) == 60.0
    for _ in range(10):
        q.add_rate_limited("a", 30.0, 600.0)
    assert q.add_rate_limited("a", 30.0, 600.0) == 600.0  # capped
    # The default schedule has its own count and base.
    assert q.add_rate_limited("a") == 0.005
    assert q.get(0.5) == "a"
    q.done("a")
    q.forget("a")
    assert q.failures("a") == 0
    assert q.add_rate_limited("a", 30.0, 600.0) == 30.0
    assert q.add_rate_limited("b") == 0.005
    assert q.get(0.5) == "b"


def test_many_failures_do_not_overflow_the_delay():
    q = WorkQueue()
    for _ in range(2000):
        delay = q.add_rate_limited("a")
    assert delay == 300.0


def test_a_requeue_below_the_floor_is_honoured_once_then_rate_limited():
    q = WorkQueue(min_requeue=1.0, max_requeue=8.0)
    # A TTL's last milliseconds: honoured as asked.
    assert q.requeue("a", 0.001) == 0.001
    # Asked again and again with nothing longer between: the floor, doubling up to the cap.
    assert [q.requeue("a", 0.001) for _ in range(6)] == [1.0, 2.0, 4.0, 8.0, 8.0, 8.0]
    # Another key has a count of its own.
    assert q.requeue("b", 0.001) == 0.001
    # A requeue of at least the floor is honoured as asked, and starts over; so does none.
    assert q.requeue("a", 2.5) == 2.5
    assert q.requeue("a", 0.001) == 0.001
    assert q.requeue("a", 0.001) == 1.0
    assert q.requeue("a", 0) is None
    assert q.requeue("a", 0.001) == 0.001
    # A floor of 0 honours every requeue as asked, as controller-runtime does.
    q0 = WorkQueue(min_requeue=0.0)
    assert [q0.requeue("a", 0.001) for _ in range(3)] == [0.001] * 3
