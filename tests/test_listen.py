"""Health, metrics and webhook ports answer on IPv6 as well as IPv4, as the gRPC port does.

On an IPv6-only cluster the kubelet's probes, Prometheus and the API server reach a pod on its
IPv6 address; Python's servers given `0.0.0.0` listen on IPv4 alone.
"""

from __future__ import annotations

import errno
import http.client
import socket
import ssl
import urllib.request
from types import SimpleNamespace
from typing import Any

import pytest

import decider_telemetry as telemetry
from decider.service.server import BackgroundServer
from decider.webhook.server import WebhookConfig
from decider_api.listen import bind_every_address
from shim.health import HealthServer
from support.certs import make_pki


def _has_ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


needs_ipv6 = pytest.mark.skipif(not _has_ipv6_loopback(), reason="no IPv6 loopback here")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> int:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return resp.status


@pytest.mark.waits
@needs_ipv6
def test_shim_health_answers_on_both_families() -> None:
    health = SimpleNamespace(liveness=lambda: "", readiness=lambda: "")
    server = HealthServer(health, 0).start()  # type: ignore[arg-type]
    try:
        assert _get(f"http://127.0.0.1:{server.port}/healthz") == 200
        assert _get(f"http://[::1]:{server.port}/readyz") == 200
    finally:
        server.stop()


@pytest.mark.waits
@needs_ipv6
def test_a_specific_host_is_kept() -> None:
    health = SimpleNamespace(liveness=lambda: "", readiness=lambda: "")
    server = HealthServer(health, 0, host="127.0.0.1").start()  # type: ignore[arg-type]
    try:
        assert _get(f"http://127.0.0.1:{server.port}/healthz") == 200
        with pytest.raises(OSError):
            _get(f"http://[::1]:{server.port}/healthz")
    finally:
        server.stop()


@pytest.mark.waits
@needs_ipv6
def test_metrics_port_answers_on_both_families() -> None:
    port = _free_port()
    on = telemetry.setup("listen-test", metrics_port=port, env={})
    try:
        assert _get(f"http://127.0.0.1:{port}/metrics") == 200
        assert _get(f"http://[::1]:{port}/metrics") == 200
    finally:
        on.shutdown(0.1)


@pytest.mark.waits
@needs_ipv6
def test_webhook_answers_on_both_families_on_one_port(tmp_path) -> None:
    pki = make_pki(tmp_path)
    hook = WebhookConfig(port=0, host="0.0.0.0", cert_file=str(pki.server_cert),
                         key_file=str(pki.server_key))
    with BackgroundServer("127.0.0.1:0", webhook=hook) as srv:
        for host in ("127.0.0.1", "::1"):
            ctx = ssl.create_default_context(cafile=str(pki.ca))
            ctx.check_hostname = False
            conn = http.client.HTTPSConnection(host, srv.webhook_port, context=ctx, timeout=10)
            try:
                conn.request("GET", "/mutate-jobset-x-k8s-io-v1alpha2-jobset")
                assert conn.getresponse().status == 405, host  # served: only POST is allowed
            finally:
                conn.close()


def test_without_ipv6_the_wildcard_falls_back_to_ipv4() -> None:
    tried: list[str] = []

    def bind(host: str) -> str:
        tried.append(host)
        if host == "::":
            raise OSError(errno.EAFNOSUPPORT, "Address family not supported by protocol")
        return host

    assert bind_every_address(bind, "0.0.0.0") == "0.0.0.0"
    assert tried == ["::", "0.0.0.0"]


def test_a_taken_port_is_said_not_retried_on_ipv4() -> None:
    tried: list[str] = []

    def bind(host: str) -> Any:
        tried.append(host)
        raise OSError(errno.EADDRINUSE, "Address already in use")

    with pytest.raises(OSError) as caught:
        bind_every_address(bind, "")
    assert caught.value.errno == errno.EADDRINUSE and tried == ["::"]
