"""`decider serve` as a process: it serves, and drains on SIGTERM."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

ROOT = Path(__file__).resolve().parent.parent


def test_serve_answers_and_exits_cleanly_on_sigterm() -> None:
    proc = subprocess.Popen([sys.executable, "-m", "decider.cli", "serve", "--host", "127.0.0.1",
                             "--port", "0", "--grace", "2"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "serving decider.v1.Decider on 127.0.0.1:" in line
        target = line.strip().rsplit(" ", 1)[-1]
        with grpc.insecure_channel(target) as channel:
            resp = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service="decider.v1.Decider"), timeout=10)
            assert resp.status == health_pb2.HealthCheckResponse.SERVING
        proc.send_signal(signal.SIGTERM)
        started = time.monotonic()
        assert proc.wait(timeout=20) == 0
        assert time.monotonic() - started < 10
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_serve_on_a_taken_port_exits_2() -> None:
    first = subprocess.Popen([sys.executable, "-m", "decider.cli", "serve", "--host",
                              "127.0.0.1", "--port", "0"], stdout=subprocess.PIPE, text=True,
                             cwd=ROOT)
    try:
        assert first.stdout is not None
        port = first.stdout.readline().strip().rsplit(":", 1)[-1]
        second = subprocess.run([sys.executable, "-m", "decider.cli", "serve", "--host",
                                 "127.0.0.1", "--port", port], capture_output=True, text=True,
                                cwd=ROOT, timeout=30)
        assert second.returncode == 2
        assert "--port" in second.stderr
        assert "Traceback" not in second.stderr
    finally:
        first.terminate()
        first.wait(timeout=20)
