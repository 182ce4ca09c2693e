"""The front process (gRPC and the event loop) only passes requests on to the decision workers:
it must not keep their memory (issue 20, item 4), and what it holds at once is bounded by
--max-inflight-bytes. Figures for 16 concurrent 60 MiB requests: bench/front_memory.py."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import grpc
import pytest
from test_server_hardening import _request, _slow_request

from decider.contract.limits import Limits
from decider.service.pool import BYTES_PUSHBACK_MS
from decider.service.server import BackgroundServer
from decider_api.v1 import decider_pb2 as pb
from decider_api.v1 import decider_pb2_grpc as pb_grpc

pytestmark = pytest.mark.waits

ROOT = Path(__file__).resolve().parent.parent
MiB = 1 << 20
BIG = 256 * MiB
OPTIONS = [("grpc.max_receive_message_length", BIG), ("grpc.max_send_message_length", BIG)]


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for {pid}")


@contextmanager
def serving(*flags: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """`decider serve` on a free loopback port, its log discarded (nobody reads a pipe)."""
    proc = subprocess.Popen([sys.executable, "-m", "decider.cli", "serve", "--host", "127.0.0.1",
                             "--port", "0", "--log-level", "WARNING", *flags],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "serving decider.v1.Decider on 127.0.0.1:" in line
        yield proc, line.strip().rsplit(" ", 1)[-1]
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        assert proc.stdout is not None
        proc.stdout.close()


def large_podsets(size: int) -> bytes:
    """A PodSets request of `size` bytes of object JSON: under --max-message-bytes, refused by
    the worker as over --max-object-bytes, so every byte passes through the front process."""
    return pb.PodSetsRequest(object_json="a" * size).SerializeToString()


def send_concurrently(target: str, payload: bytes, n: int) -> list[grpc.StatusCode]:
    with grpc.insecure_channel(target, OPTIONS) as channel:
        call = channel.unary_unary("/decider.v1.Decider/PodSets")
        futures = [call.future(payload, timeout=300) for _ in range(n)]
        codes = []
        for future in futures:
            try:
                future.result()
                codes.append(grpc.StatusCode.OK)
            except grpc.RpcError as exc:
                codes.append(exc.code())
        return codes


def test_the_front_process_gives_back_the_memory_of_large_requests() -> None:
    """Sixteen refused 60 MiB requests had left it 1.4 GB above its idle size for good: the
    refused calls' frames (and the request in them) lived on in a cycle through gRPC's abort
    exception, and what gRPC's buffers had used stayed in glibc's arenas."""
    with serving("--workers", "1") as (proc, target):
        with grpc.insecure_channel(target) as channel:
            stub = pb_grpc.DeciderStub(channel)
            for _ in range(20):  # warm: gRPC's and the loop's first allocations are made
                stub.Decide(_request(), timeout=60)
        idle = rss_mib(proc.pid)
        codes = send_concurrently(target, large_podsets(40 * MiB), 8)
        assert set(codes) == {grpc.StatusCode.RESOURCE_EXHAUSTED}
        # Waited for, not timed: a trim follows a second after the last large request.
        deadline = time.monotonic() + 120
        while (now := rss_mib(proc.pid)) > idle + 100 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert now <= idle + 100, f"idle {idle:.0f} MiB, still {now:.0f} MiB after 120 s"


@pytest.fixture(scope="module")
def small_budget() -> Iterator[BackgroundServer]:
    request = len(_slow_request(40_001).SerializeToString())
    # Room for one such request, not two.
    with BackgroundServer(workers=1, max_decision_seconds=60, max_inflight_bytes=request * 3 // 2,
                          limits=Limits(max_message_bytes=BIG)) as srv:
        yield srv


def test_a_request_past_the_bytes_budget_is_refused_with_pushback(
        small_budget: BackgroundServer) -> None:
    srv = small_budget
    # Seconds of work (each test its own count: a worker keeps the Jobs it built for a spec).
    slow = _slow_request(40_001)
    with grpc.insecure_channel(srv.target, OPTIONS) as channel:
        stub = pb_grpc.DeciderStub(channel)
        first: list[object] = []
        thread = threading.Thread(target=lambda: first.append(stub.Decide(slow, timeout=120)))
        thread.start()
        deadline = time.monotonic() + 60
        while not srv.pool.held_bytes and time.monotonic() < deadline:
            time.sleep(0.01)
        assert srv.pool.held_bytes == len(slow.SerializeToString())
        with pytest.raises(grpc.RpcError) as refused:
            stub.Decide(slow, timeout=120)
        assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "--max-inflight-bytes" in refused.value.details()
        # Load shed: worth sending again, later than a full queue says.
        assert ("grpc-retry-pushback-ms", str(BYTES_PUSHBACK_MS)) in \
            refused.value.trailing_metadata()
        thread.join(120)
        assert first and first[0].actions  # type: ignore[attr-defined]
        # Once answered, nothing is held, and a request fits again.
        assert srv.pool.held_bytes == 0
        assert stub.Decide(_request(), timeout=60).actions


def test_a_request_given_up_on_while_waiting_lets_go_of_its_bytes(
        small_budget: BackgroundServer) -> None:
    srv = small_budget
    slow = _slow_request(40_002)
    small = pb.DecideRequest()
    small.now.FromSeconds(1)  # a few bytes: fits beside the slow one
    with grpc.insecure_channel(srv.target, OPTIONS) as channel:
        stub = pb_grpc.DeciderStub(channel)
        running = stub.Decide.future(slow, timeout=120)
        deadline = time.monotonic() + 60
        while not srv.pool.busy and time.monotonic() < deadline:
            time.sleep(0.01)
        # Waits behind the slow one until its deadline passes.
        with pytest.raises(grpc.RpcError) as late:
            stub.Decide(small, timeout=0.2)
        assert late.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        deadline = time.monotonic() + 60
        while srv.pool.held_bytes != len(slow.SerializeToString()) and \
                time.monotonic() < deadline:
            time.sleep(0.01)
        assert srv.pool.held_bytes == len(slow.SerializeToString())
        assert running.result().actions
        assert srv.pool.held_bytes == 0
