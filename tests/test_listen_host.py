"""`--host` is where the decider listens, every port of it: with `--host 127.0.0.1` nothing it
opens listens on another address (F15: --metrics-port listened on every address), and idle
connections to its HTTP ports hold no thread each and are closed (issue 20, item 1)."""

from __future__ import annotations

import http.client
import os
import select
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

import decider_telemetry as telemetry
from support.certs import make_pki
from support.listeners import listening, threads

pytestmark = pytest.mark.waits

ROOT = Path(__file__).resolve().parent.parent
IDLE = 1000


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(condition, what: str, timeout: float = 60.0):  # noqa: ANN001, ANN202
    deadline = time.monotonic() + timeout
    while True:
        got = condition()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:g}s: {what}")
        time.sleep(0.05)


def _scrape(port: int) -> tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", "/metrics")
        resp = conn.getresponse()
        return resp.status, resp.read().decode()
    finally:
        conn.close()


def test_with_host_loopback_every_port_listens_on_loopback_alone_and_idle_connections_cost_no_thread(  # noqa: E501
        tmp_path: Path) -> None:
    pki = make_pki(tmp_path)
    metrics, webhook = _free_port(), _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "decider.cli", "serve", "--host", "127.0.0.1", "--port", "0",
         "--workers", "1", "--drain-delay", "0", "--metrics-port", str(metrics),
         "--webhook-port", str(webhook), "--webhook-cert-file", str(pki.server_cert),
         "--webhook-key-file", str(pki.server_key)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT,
        env={**os.environ, "OTEL_TRACES_EXPORTER": "none"})
    clients: list[socket.socket] = []
    try:
        assert proc.stdout is not None
        grpc_port = int(proc.stdout.readline().strip().rsplit(":", 1)[-1])
        ports = {grpc_port, metrics, webhook}
        found = _wait_for(lambda: (lambda got: got if ports <= {p for _, p in got} else None)(
            listening(proc.pid)), "the gRPC, metrics and webhook ports listening")
        assert {address for address, _ in found} == {"127.0.0.1"}, sorted(found)

        assert _scrape(metrics)[0] == 200  # the metrics port's thread exists
        before = threads(proc.pid)
        for port in (metrics, webhook):
            clients += [socket.create_connection(("127.0.0.1", port), timeout=30)
                        for _ in range(IDLE)]
        # Every connection is taken (a scrape is answered past them all) ...
        status, text = _scrape(metrics)
        assert status == 200 and "decider_decisions_total" in text
        # ... by event loops, not a thread each.
        assert threads(proc.pid) <= before + 2, (before, threads(proc.pid))
    finally:
        for sock in clients:
            sock.close()
        proc.terminate()
        proc.wait(timeout=60)
        if proc.stdout is not None:
            proc.stdout.close()


def test_an_idle_connection_to_the_metrics_port_is_closed() -> None:
    """One that never sends a byte, one that stops half-way through its request line, and one
    that keeps its connection after a scrape: each is closed once idle."""
    on = telemetry.setup("idle-test", metrics_port=_free_port(), metrics_host="127.0.0.1",
                         env={}, metrics_idle_seconds=1.0)
    try:
        port = on.metrics_port
        silent = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(20)]
        half = socket.create_connection(("127.0.0.1", port), timeout=30)
        half.sendall(b"GET /metr")
        kept = socket.create_connection(("127.0.0.1", port), timeout=30)
        kept.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        open_ = {*silent, half, kept}
        by_fd = {sock.fileno(): sock for sock in open_}
        poller = select.poll()
        for fd in by_fd:
            poller.register(fd, select.POLLIN)

        def all_closed() -> bool:
            for fd, _ in poller.poll(200):
                sock = by_fd[fd]
                while sock in open_:
                    data = sock.recv(65536)  # the scrape's answer first, for `kept`
                    if not data:
                        open_.discard(sock)
                        poller.unregister(fd)
                    elif not select.select([sock], [], [], 0)[0]:
                        break
            return not open_

        _wait_for(all_closed, "every idle connection closed by the server")
        assert _scrape(port)[0] == 200
        for sock in by_fd.values():
            sock.close()
    finally:
        on.shutdown(5.0)


def test_the_metrics_port_listens_where_it_is_told() -> None:
    """The server's --host (metrics_host), unless OTEL_EXPORTER_PROMETHEUS_HOST names an
    address of its own; nothing is the wildcard, every address."""
    for env, host, expected in (({}, "127.0.0.1", "127.0.0.1"),
                                ({"OTEL_EXPORTER_PROMETHEUS_HOST": "127.0.0.1"}, "", "127.0.0.1"),
                                ({}, "", "::")):
        on = telemetry.setup("host-test", metrics_port=_free_port(), metrics_host=host, env=env)
        try:
            addresses = {a for a, p in listening(os.getpid()) if p == on.metrics_port}
            assert addresses == {expected} or (expected == "::" and addresses == {"0.0.0.0"})
            assert _scrape(on.metrics_port)[0] == 200
        finally:
            on.shutdown(5.0)
