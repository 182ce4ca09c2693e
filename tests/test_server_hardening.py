"""The server as a careless or hostile client finds it (issue 8): every bad input is answered
INVALID_ARGUMENT or RESOURCE_EXHAUSTED naming the field, nothing runs unbounded, and no request
holds up another or the health service."""

from __future__ import annotations

import json
import logging
import os
import signal
import threading
import time
from collections.abc import Iterator

import grpc
import pytest
import yaml
from google.protobuf.message import Message
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from properties.strategies import to_request
from test_server import EXAMPLE

from decider.contract.limits import Limits
from decider.core.model import Observed
from decider.service import dispatch
from decider.service.server import BackgroundServer
from decider_api.v1 import decider_pb2 as pb
from decider_api.v1 import decider_pb2_grpc as pb_grpc
from decider_client import observe
from support.builders import NOW, job, jobset, rjob
from support.opcount import lines_executed
from support.waiting import HANG_GUARD, wait_for

pytestmark = pytest.mark.waits

BIG = 256 * 1024 * 1024
OPTIONS = [("grpc.max_receive_message_length", BIG), ("grpc.max_send_message_length", BIG)]


def _jobset() -> dict:
    return yaml.safe_load(EXAMPLE.read_text())


def _request(js: dict | None = None) -> pb.DecideRequest:
    return observe.build_decide_request(js or _jobset(), [], NOW)


def _slow_request(jobs: int = 40_000) -> pb.DecideRequest:
    """A valid request that takes seconds: every Job of a large JobSet is built."""
    js = _jobset()
    js["spec"]["replicatedJobs"][1]["replicas"] = jobs
    return _request(js)


@pytest.fixture(scope="module")
def server() -> Iterator[BackgroundServer]:
    with BackgroundServer(workers=2, max_decision_seconds=30,
                          limits=Limits(max_message_bytes=BIG)) as srv:
        yield srv


@pytest.fixture(scope="module")
def channel(server: BackgroundServer) -> Iterator[grpc.Channel]:
    with grpc.insecure_channel(server.target, OPTIONS) as ch:
        yield ch


@pytest.fixture(scope="module")
def stub(channel: grpc.Channel) -> pb_grpc.DeciderStub:
    return pb_grpc.DeciderStub(channel)


def _code(fn) -> tuple[grpc.StatusCode, str]:
    try:
        fn()
    except grpc.RpcError as exc:
        return exc.code(), exc.details()
    return grpc.StatusCode.OK, ""


def _huge_replicas() -> dict:
    js = _jobset()
    js["spec"]["replicatedJobs"][1]["replicas"] = 2**31 - 1
    return js


_BY_METHOD = {
    "Decide": lambda js: _request(js),
    "PlanGang": lambda js: pb.PlanGangRequest(object_json=json.dumps(js)),
    "PodSets": lambda js: pb.PodSetsRequest(object_json=json.dumps(js)),
}


def _lines(method: str, request: Message, limits: Limits) -> int:
    """Lines of the decider a worker executes answering the request (support/opcount.py)."""
    payload = request.SerializeToString()
    dispatch.answer(method, payload, limits)  # caches warm, as a worker's are
    return lines_executed(lambda: dispatch.answer(method, payload, limits))


@pytest.mark.parametrize("method", _BY_METHOD)
def test_replicas_max_int32_is_refused_at_once(stub, method: str) -> None:
    request = _BY_METHOD[method](_huge_replicas())
    code, details = _code(lambda: getattr(stub, method)(request, timeout=HANG_GUARD))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert details.startswith("spec.replicatedJobs[1].replicas: must be less than or equal to "
                              "100,000")
    # At once: refusing 2^31 - 1 replicas costs no more work than answering for two.
    limits = Limits(max_message_bytes=BIG)
    two = _jobset()
    two["spec"]["replicatedJobs"][1]["replicas"] = 2
    assert _lines(method, request, limits) <= _lines(method, _BY_METHOD[method](two), limits)


def test_validate_refuses_replicas_over_the_limit_as_a_field_error(stub) -> None:
    resp = stub.Validate(pb.ValidateRequest(object_json=json.dumps(_huge_replicas())), timeout=10)
    assert not resp.valid
    assert ("spec.replicatedJobs[1].replicas", "must be less than or equal to 100,000 (the "
            "decider's limit), is 2,147,483,647") in [(e.field, e.message) for e in resp.errors]


@pytest.mark.parametrize("method", ["Decide", "Validate", "PlanGang", "PodSets"])
def test_undecodable_bytes_are_invalid_argument(channel, method: str) -> None:
    raw = channel.unary_unary(f"/decider.v1.Decider/{method}")
    code, details = _code(lambda: raw(b"\xff\xff\xff\x0f not protobuf", timeout=5))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert f"not a valid decider.v1.{method}Request" in details


def test_invalid_utf8_in_a_string_field_is_invalid_argument(channel) -> None:
    # Field 1 (jobset_json), wire type 2, length 2, bytes that are not UTF-8.
    raw = channel.unary_unary("/decider.v1.Decider/Decide")
    code, details = _code(lambda: raw(b"\x0a\x02\xc3\x28", timeout=5))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert "not UTF-8" in details


@pytest.mark.parametrize("seconds,nanos,field", [
    (10**15, 0, "now.seconds"), (-10**15, 0, "now.seconds"), (0, -5, "now.nanos"),
    (0, 10**9, "now.nanos"),
], ids=["far-future", "far-past", "negative-nanos", "nanos-overflow"])
def test_now_out_of_range_is_invalid_argument(stub, seconds: int, nanos: int,
                                              field: str) -> None:
    req = _request()
    req.now.seconds, req.now.nanos = seconds, nanos
    code, details = _code(lambda: stub.Decide(req, timeout=5))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert details.startswith(f"{field}: ")


def _with_surrogate_in_value() -> str:
    return json.dumps(_jobset()).replace('"trainer"', '"tr\\ud800ainer"', 1)


def _with_surrogate_in_key() -> str:
    return json.dumps(_jobset()).replace('"replicatedJobs"', '"replicated\\udc00Jobs"', 1)


@pytest.mark.parametrize("call,field", [
    (lambda s: s.Decide(pb.DecideRequest(jobset_json=_with_surrogate_in_value(), now=NOW_PB),
                        timeout=5), "metadata.name"),
    (lambda s: s.Decide(pb.DecideRequest(jobset_json=_with_surrogate_in_key(), now=NOW_PB),
                        timeout=5), "spec: key"),
    (lambda s: s.Validate(pb.ValidateRequest(object_json=_with_surrogate_in_value()), timeout=5),
     "metadata.name"),
    (lambda s: s.Validate(pb.ValidateRequest(object_json=_with_surrogate_in_key()), timeout=5),
     "spec: key"),
    (lambda s: s.PlanGang(pb.PlanGangRequest(object_json=_with_surrogate_in_value()), timeout=5),
     "metadata.name"),
    (lambda s: s.Decide(pb.DecideRequest(
        jobset_json=json.dumps(_jobset()), now=NOW_PB,
        objects=[pb.ObservedObject(kind="Service", name="trainer",
                                   object_json='{"metadata": {"x\\ud800": 1}}')]), timeout=5),
     "objects[0].object_json.metadata"),
], ids=["decide-value", "decide-key", "validate-value", "validate-key", "plan-gang-value",
        "decide-object-key"])
def test_lone_surrogates_are_invalid_argument(stub, call, field: str) -> None:
    code, details = _code(lambda: call(stub))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert "not valid Unicode (a lone surrogate)" in details
    assert details.startswith(field)


NOW_PB = _request().now


@pytest.mark.parametrize("call", [
    lambda s: s.Decide(pb.DecideRequest(jobset_json=_deep_jobset(), now=NOW_PB), timeout=5),
    lambda s: s.Validate(pb.ValidateRequest(object_json=_deep_jobset()), timeout=5),
    lambda s: s.PlanGang(pb.PlanGangRequest(object_json=_deep_jobset()), timeout=5),
], ids=["Decide", "Validate", "PlanGang"])
def test_deep_nesting_names_the_field(stub, call) -> None:
    code, details = _code(lambda: call(stub))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert details.startswith("spec.replicatedJobs[0].template.spec.template.spec.a.a.a")
    assert details.endswith("is nested more than 100 levels deep")


def _deep_jobset(levels: int = 500) -> str:
    js = _jobset()
    node = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    for _ in range(levels):
        node["a"] = {}
        node = node["a"]
    return json.dumps(js)


def test_a_plan_over_the_message_limit_is_refused_up_front() -> None:
    limits = Limits(max_message_bytes=4 * 1024 * 1024)
    with BackgroundServer(workers=1, limits=limits) as srv, \
            grpc.insecure_channel(srv.target) as ch:
        req = _slow_request(60_000)
        code, details = _code(lambda: pb_grpc.DeciderStub(ch).Decide(req,
                                                                     timeout=HANG_GUARD))
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert details.startswith("spec.replicatedJobs[1]: creating 60,000 Job(s)")
    assert "over the limit of 4,194,304 bytes per answer" in details
    # Refused before the manifests were built: refusing 60,000 Jobs costs less than a
    # twentieth of the work of building 1,000 of them (building is seconds of it).
    refused = _lines("Decide", req, limits)
    built = _lines("Decide", _slow_request(1_000), Limits(max_message_bytes=BIG))
    assert refused * 20 < built * 60, (refused, built)


def _stopped_mid_decision(srv: BackgroundServer) -> int:
    """The pid of the worker deciding, once it is, stopped (SIGSTOP): however fast the
    machine, that decision then outlasts any limit, and however slow, it has begun."""
    (pid,) = wait_for(lambda: srv.pool.busy_pids, what="a worker deciding")
    os.kill(pid, signal.SIGSTOP)
    return pid


def test_a_request_over_max_decision_seconds_is_stopped_and_named() -> None:
    # A second of work per request: the slow request needs several, a small one milliseconds
    # even on a loaded machine.
    with BackgroundServer(workers=1, max_decision_seconds=1.0,
                          limits=Limits(max_message_bytes=BIG)) as srv, \
            grpc.insecure_channel(srv.target, OPTIONS) as ch:
        stub = pb_grpc.DeciderStub(ch)
        (worker,) = srv.pool.worker_pids
        started = time.monotonic()
        call = stub.Decide.future(_slow_request(80_000), timeout=HANG_GUARD)
        assert _stopped_mid_decision(srv) == worker
        code, details = _code(call.result)
        assert code == grpc.StatusCode.DEADLINE_EXCEEDED
        assert "--max-decision-seconds=1" in details and "it was stopped" in details
        # Stopped by the limit, not before it (the client's own deadline is a minute away).
        assert time.monotonic() - started >= 1.0
        # The worker that overran is gone; the spare took its place and answers at once.
        assert _gone(worker)
        assert stub.Decide(_request(), timeout=HANG_GUARD).actions
        assert srv.pool.replaced == 1


def _gone(pid: int, timeout: float = HANG_GUARD) -> bool:
    """The process has exited (and been reaped, or is a zombie waiting to be)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.02)
    return False


def test_a_passed_client_deadline_stops_the_work_after_the_kill_grace() -> None:
    with BackgroundServer(workers=1, max_decision_seconds=30, kill_grace=0.5,
                          limits=Limits(max_message_bytes=BIG)) as srv, \
            grpc.insecure_channel(srv.target, OPTIONS) as ch:
        stub = pb_grpc.DeciderStub(ch)
        (before,) = srv.pool.worker_pids
        sent = time.monotonic()
        call = stub.Decide.future(_slow_request(80_000), timeout=1.5)
        # It reached the worker (a deadline that passes while waiting for one kills nothing),
        # and outlasts the deadline and the grace, however fast the machine.
        assert _stopped_mid_decision(srv) == before
        with pytest.raises(grpc.RpcError) as exc:
            call.result()
        assert exc.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        # The worker is killed once the grace is over, not before, and not left computing
        # for nobody. The server's deadline runs from when the call reached it, after `sent`:
        # the kill comes at the earliest 1.5 s + 0.5 s after it.
        assert _gone(before)
        assert time.monotonic() - sent >= 1.5 + 0.5 - 0.1
        assert srv.pool.replaced == 1
        assert stub.Decide(_request(), timeout=HANG_GUARD).actions


def _medium_request() -> pb.DecideRequest:
    """Tens of milliseconds of work: mid-decision when a 5 ms deadline passes."""
    return _slow_request(2_000)


@pytest.mark.parametrize("end", ["deadline", "cancel"])
def test_a_call_ended_mid_decision_does_not_cost_a_worker(end: str, caplog) -> None:
    """Killing the worker for every call that ends while it decides made each one cost a new
    process (~0.4 s of CPU): a client with tight deadlines took the machine. The worker now
    finishes within the grace, its answer dropped, and takes the next request."""
    with BackgroundServer(workers=1, max_decision_seconds=30, kill_grace=30,
                          limits=Limits(max_message_bytes=BIG)) as srv, \
            grpc.insecure_channel(srv.target, OPTIONS) as ch:
        stub = pb_grpc.DeciderStub(ch)
        before = srv.pool.worker_pids
        for _ in range(10):
            if end == "deadline":
                code, _details = _code(lambda: stub.Decide(_medium_request(), timeout=0.005))
                assert code == grpc.StatusCode.DEADLINE_EXCEEDED
            else:
                call = stub.Decide.future(_medium_request(), timeout=30)
                deadline = time.monotonic() + 5
                while not srv.pool.busy_pids and time.monotonic() < deadline:
                    time.sleep(0.001)
                call.cancel()
            # The next request is answered by the same worker, once it has finished.
            assert stub.Decide(_request(), timeout=30).actions
        assert srv.pool.replaced == 0
        assert srv.pool.worker_pids == before
    # A status gRPC could not send to a call that had ended is not a server error.
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_health_and_small_requests_answer_while_a_worst_case_request_runs(server, channel,
                                                                          stub) -> None:
    """The concurrency test: 100 small Decides and health are answered meanwhile.

    Meanwhile for certain: the worst-case request's worker is stopped (SIGSTOP) until they
    are, so none of them can have waited for it to finish, on however busy a machine. How
    long they take beside it is bench/ work (bench/rpc_bench.py, bench/soak.py)."""
    big = _slow_request()
    big_done = threading.Event()
    big_result: list[object] = []

    def run_big() -> None:
        big_result.append(_code(lambda: stub.Decide(big, timeout=HANG_GUARD * 2)))
        big_done.set()

    thread = threading.Thread(target=run_big)
    thread.start()
    stopped = _stopped_mid_decision(server)
    try:
        health = health_pb2_grpc.HealthStub(channel)
        small = _request()
        for i in range(100):
            assert stub.Decide(small, timeout=HANG_GUARD).actions
            if i % 10 == 0:
                resp = health.Check(health_pb2.HealthCheckRequest(), timeout=HANG_GUARD)
                assert resp.status == health_pb2.HealthCheckResponse.SERVING
        assert not big_done.is_set(), "the worst-case request should still be running"
    finally:
        os.kill(stopped, signal.SIGCONT)
    thread.join(HANG_GUARD * 2)
    assert big_result[0][0] == grpc.StatusCode.OK


def test_a_worker_that_dies_mid_decision_is_answered_and_replaced(server, stub) -> None:
    before = server.pool.worker_pids
    result: list[tuple[grpc.StatusCode, str]] = []
    thread = threading.Thread(target=lambda: result.append(
        _code(lambda: stub.Decide(_slow_request(), timeout=HANG_GUARD))))
    thread.start()
    (victim,) = wait_for(lambda: server.pool.busy_pids, what="a worker deciding")
    os.kill(victim, signal.SIGKILL)
    thread.join(HANG_GUARD)
    code, details = result[0]
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "was killed by SIGKILL" in details
    wait_for(lambda: len(server.pool.worker_pids) == 2, what="the worker replaced")
    assert len(server.pool.worker_pids) == 2 and victim not in server.pool.worker_pids
    assert server.pool.worker_pids != before
    assert stub.Decide(_request(), timeout=HANG_GUARD).actions


def test_too_many_waiting_requests_are_resource_exhausted() -> None:
    with BackgroundServer(workers=1, max_pending=1, max_decision_seconds=30,
                          limits=Limits(max_message_bytes=BIG)) as srv, \
            grpc.insecure_channel(srv.target, OPTIONS) as ch:
        stub = pb_grpc.DeciderStub(ch)
        # One with the worker (stopped there, so it cannot finish and let another in), one
        # waiting, then one too many.
        futures = [stub.Decide.future(_slow_request(20_000), timeout=HANG_GUARD * 2)]
        stopped = _stopped_mid_decision(srv)
        futures.append(stub.Decide.future(_slow_request(20_000), timeout=HANG_GUARD * 2))
        wait_for(lambda: srv.pool.waiting == 1, what="one request waiting")
        futures.append(stub.Decide.future(_slow_request(20_000), timeout=HANG_GUARD * 2))
        wait_for(futures[2].done, what="the third answered")
        os.kill(stopped, signal.SIGCONT)
        codes = []
        for f in futures:
            try:
                f.result()
                codes.append(grpc.StatusCode.OK)
            except grpc.RpcError as exc:
                codes.append(exc.code())
                assert "already waiting for a decision worker" in exc.details()
                # Load shed, not an input too large: worth sending again, a little later.
                assert ("grpc-retry-pushback-ms", "100") in exc.trailing_metadata()
        assert codes == [grpc.StatusCode.OK, grpc.StatusCode.OK,
                         grpc.StatusCode.RESOURCE_EXHAUSTED]


def test_reflection_can_be_turned_off() -> None:
    with BackgroundServer(reflection=False) as srv, grpc.insecure_channel(srv.target) as ch:
        stub = reflection_pb2_grpc.ServerReflectionStub(ch)
        code, _ = _code(lambda: list(stub.ServerReflectionInfo(
            iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=5)))
        assert code == grpc.StatusCode.UNIMPLEMENTED
        # Everything else is still served.
        assert pb_grpc.DeciderStub(ch).Decide(_request(), timeout=10).actions


@pytest.mark.parametrize("pattern,message", [
    ("(a+)+$", "a" * 40 + "!"),
    ("(.*)*X", "Job has reached the specified backoff limit"),
    ("(x+x+)+y", "x" * 40),
    ("((a|aa)+)+b", "a" * 40),
], ids=["nested-plus", "nested-star", "overlapping-plus", "alternation"])
def test_pathological_patterns_are_matched_in_linear_time(stub, pattern: str,
                                                          message: str) -> None:
    """A backtracking engine takes minutes to days on these; RE2, as Go's regexp, is linear."""
    js = jobset(rjob("workers", 2), failurePolicy={"maxRestarts": 3, "rules": [
        {"name": "slow", "action": "FailJobSet", "onJobFailureMessagePatterns": [pattern]}]})
    jobs = [job("workers", 0, state="failed", reason="PodFailurePolicy", message=message),
            job("workers", 1)]
    req = to_request(Observed(jobset=js, now=NOW, jobs=jobs))
    # The deadline is a hang guard: a backtracking engine takes days on these, RE2
    # microseconds (the linear cost itself is tests/core/test_go_regex.py's).
    resp = stub.Decide(req, timeout=HANG_GUARD)
    # None of them matches its message: the JobSet restarts rather than failing.
    assert resp.status.terminal_state == ""
    assert resp.status.restarts == 1


@pytest.mark.parametrize("size", [9_000, 20_000, 200_000], ids=["9k", "20k", "200k"])
def test_a_message_quoting_a_huge_value_is_cut_and_still_invalid_argument(
        channel: grpc.Channel, size: int) -> None:
    """Status messages travel in a trailer that clients cap (gRPC's C core refuses some past
    8 KiB, all past 16 KiB): a message quoting the input whole arrived as RESOURCE_EXHAUSTED
    'Stream removed', naming nothing."""
    request = pb.DecideRequest(jobset_json=json.dumps({"kind": "x" * size}))
    request.now.GetCurrentTime()
    for _ in range(10):  # the soft limit refuses at random
        with pytest.raises(grpc.RpcError) as caught:
            pb_grpc.DeciderStub(channel).Decide(request, timeout=30)
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT, caught.value.details()
        details = caught.value.details()
        assert details.startswith("kind: must be \"JobSet\""), details[:200]
        assert len(details.encode()) <= 2048 and details.endswith("more bytes cut)")


_UNDECODABLE = [pytest.param(b"\n\x02\xff\xfe", id="bad-utf8"),
                pytest.param(b"\xff\xff\xff", id="corrupt")]


@pytest.mark.parametrize("body", _UNDECODABLE)
@pytest.mark.parametrize(("path", "kind"), [
    ("/grpc.health.v1.Health/Check", "unary_unary"),
    ("/grpc.health.v1.Health/Watch", "unary_stream"),
    ("/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", "stream_stream"),
], ids=["health-check", "health-watch", "reflection"])
def test_health_and_reflection_refuse_an_undecodable_request_as_invalid_argument(
        channel: grpc.Channel, caplog: pytest.LogCaptureFixture, path: str, kind: str,
        body: bytes) -> None:
    """grpcio's stock servicers answered UNKNOWN and logged an ERROR with a traceback."""
    call = getattr(channel, kind)(path)
    with caplog.at_level(logging.INFO), pytest.raises(grpc.RpcError) as caught:
        if kind == "unary_unary":
            call(body, timeout=10)
        elif kind == "unary_stream":
            list(call(body, timeout=10))
        else:
            list(call(iter([body]), timeout=10))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT, caught.value.details()
    assert "not a valid message" in caught.value.details()
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    # Still serving, and still answering good requests.
    ok = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=10)
    assert ok.status == health_pb2.HealthCheckResponse.SERVING


def test_reflection_still_lists_services_through_the_guard(channel: grpc.Channel) -> None:
    stub = reflection_pb2_grpc.ServerReflectionStub(channel)
    answers = list(stub.ServerReflectionInfo(
        iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=10))
    names = {s.name for s in answers[0].list_services_response.service}
    assert {"decider.v1.Decider", "grpc.health.v1.Health"} <= names


def _h2_frame(kind: int, flags: int, stream: int, payload: bytes = b"") -> bytes:
    return len(payload).to_bytes(3, "big") + bytes([kind, flags]) + stream.to_bytes(4, "big") \
        + payload


def _hpack_literal(name: bytes, value: bytes) -> bytes:
    """A header as HPACK's literal without indexing, new name, no Huffman (RFC 7541 6.2.2)."""
    return b"\x00" + bytes([len(name)]) + name + bytes([len(value)]) + value


def _half_closed_call(target: str, path: str, wait: float) -> tuple[str, float]:
    """A unary call sent as HEADERS with END_STREAM and no message, as a raw HTTP/2 client
    (grpcio's clients always send one). Returns how it ended ("status", "closed" or "hung")
    and when."""
    import socket

    host, port = target.rsplit(":", 1)
    started = time.monotonic()
    headers = (b"\x83\x86"  # :method POST, :scheme http (HPACK's static table)
               + _hpack_literal(b":path", path.encode())
               + _hpack_literal(b":authority", target.encode())
               + _hpack_literal(b"content-type", b"application/grpc")
               + _hpack_literal(b"te", b"trailers"))
    with socket.create_connection((host, int(port)), timeout=wait) as sock:
        sock.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + _h2_frame(4, 0, 0)
                     + _h2_frame(1, 0x5, 1, headers))  # END_STREAM | END_HEADERS
        buffer = b""
        try:
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    return "closed", time.monotonic() - started
                buffer += chunk
                while len(buffer) >= 9:
                    length = int.from_bytes(buffer[:3], "big")
                    if len(buffer) < 9 + length:
                        break
                    kind, flags = buffer[3], buffer[4]
                    stream = int.from_bytes(buffer[5:9], "big") & 0x7FFFFFFF
                    buffer = buffer[9 + length:]
                    if kind == 4 and not flags & 1:  # SETTINGS: acknowledged, as clients must
                        sock.sendall(_h2_frame(4, 1, 0))
                    if kind == 1 and stream == 1 and flags & 1:  # trailers: a status
                        return "status", time.monotonic() - started
        except (TimeoutError, ConnectionResetError):
            return "hung" if time.monotonic() - started >= wait else "closed", \
                time.monotonic() - started


@pytest.mark.parametrize("path", ["/decider.v1.Decider/Decide", "/grpc.health.v1.Health/Check"])
def test_a_call_half_closed_without_its_message_does_not_hang_forever(path: str) -> None:
    """grpc.aio never hands such a call to a method nor answers it; the connection's age and
    its grace (the longest a call may still run) end it."""
    with BackgroundServer(workers=1, max_connection_age=0.5, max_decision_seconds=0.5) as srv:
        ended, after = _half_closed_call(srv.target, path, wait=HANG_GUARD)
    assert ended in ("status", "closed"), (ended, after)


def test_a_repeated_warning_is_logged_once_then_with_a_count(caplog) -> None:
    """Requests past --max-pending logged a warning each: hundreds a second under a flood."""
    from decider.service.server import _Occasional

    # The clock the test's: fifty reports within the interval however slow the machine.
    now = [100.0]
    occasional = _Occasional(0.3, clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, logger="decider.server"):
        for _ in range(50):
            occasional.report("Decide: 1024 requests are already waiting")
        now[0] += 0.35
        occasional.report("Decide: 1024 requests are already waiting")
    lines = [r.getMessage() for r in caplog.records if r.name == "decider.server"]
    assert lines[0] == "Decide: 1024 requests are already waiting"
    assert len(lines) == 2 and "(49 more like it in the last" in lines[1], lines
