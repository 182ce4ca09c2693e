"""The shim's HTTP ports listen where --host says, and idle connections cost no thread.

Before: the health port was a thread per connection, kept for as long as the client kept it
open (1,000 idle connections, 1,000 threads), and the metrics port listened on every address
whatever the operator believed.
"""

from __future__ import annotations

import http.client
import ipaddress
import os
import select
import socket
import subprocess
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from shim.health import CHECK_THREADS, HealthServer
from tests.shim.helpers import wait_for

pytestmark = pytest.mark.waits

ROOT = Path(__file__).resolve().parents[2]
IDLE = 1000


def _get(port: int, path: str) -> tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, resp.read().decode()
    finally:
        conn.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_1000_idle_connections_hold_no_thread_and_are_closed_when_idle():
    health = SimpleNamespace(liveness=lambda: "", readiness=lambda: "")
    server = HealthServer(health, 0, "127.0.0.1").start()  # type: ignore[arg-type]
    clients: list[socket.socket] = []
    try:
        assert _get(server.port, "/healthz") == (200, "ok\n")  # the check threads exist
        before = threading.active_count()
        for _ in range(IDLE):
            clients.append(socket.create_connection(("127.0.0.1", server.port), timeout=10))
        # Every connection is accepted and held (an answer is served past all of them) ...
        assert _get(server.port, "/readyz") == (200, "ok\n")
        # ... by the event loop, not a thread each.
        assert threading.active_count() <= before + CHECK_THREADS
        # Left idle, each is closed by the server.
        open_ = set(clients)
        poller = select.poll()
        by_fd = {sock.fileno(): sock for sock in clients}
        for fd in by_fd:
            poller.register(fd, select.POLLIN)

        def closed() -> bool:
            for fd, _ in poller.poll(500):
                sock = by_fd[fd]
                if sock in open_ and sock.recv(1) == b"":
                    open_.discard(sock)
                    poller.unregister(fd)
            return not open_

        wait_for(closed, timeout=60, what="the idle connections closed by the server")
        assert _get(server.port, "/healthz") == (200, "ok\n")
    finally:
        for sock in clients:
            sock.close()
        server.stop()


def _listening(pid: int) -> list[tuple[str, int]]:
    """(address, port) of every TCP socket the process and its children listen on."""
    pids = [pid]
    for task in (Path("/proc") / str(pid) / "task").iterdir():
        children = (task / "children").read_text().split()
        pids.extend(int(c) for c in children)
    inodes = set()
    for p in pids:
        for fd in (Path("/proc") / str(p) / "fd").iterdir():
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    out = []
    for table, size in (("/proc/net/tcp", 4), ("/proc/net/tcp6", 16)):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state != "0A" or inode not in inodes:  # 0A: LISTEN
                continue
            hexaddr, hexport = local.split(":")
            raw = bytes.fromhex(hexaddr)
            # /proc prints each 32-bit word in host (little-endian) order.
            raw = b"".join(raw[i:i + 4][::-1] for i in range(0, size, 4))
            address = ipaddress.ip_address(raw)
            # An IPv6 socket bound to an IPv4 address shows it mapped (::ffff:127.0.0.1).
            mapped = getattr(address, "ipv4_mapped", None)
            out.append((str(mapped or address), int(hexport, 16)))
    return out


def test_with_host_127_0_0_1_nothing_the_shim_opens_listens_elsewhere(cluster) -> None:
    health, metrics = _free_port(), _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "shim.main", "--kubeconfig", str(cluster.kubeconfig),
         "--decider-address", "local", "--no-leader-elect", "--host", "127.0.0.1",
         "--healthz-port", str(health), "--metrics-port", str(metrics)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)
    try:
        def ready() -> bool:
            try:
                return _get(health, "/readyz")[0] == 200
            except OSError:
                return False

        wait_for(ready, timeout=60, what="/readyz 200")
        assert _get(metrics, "/metrics")[0] == 200
        listening = _listening(proc.pid)
        ports = {port for _, port in listening}
        # The health and metrics ports, and the local decider's gRPC port (its child).
        assert {health, metrics} <= ports and len(ports) >= 3, listening
        assert all(address == "127.0.0.1" for address, _ in listening), listening
    finally:
        proc.terminate()
        assert proc.wait(timeout=30) == 0, proc.stderr.read()
