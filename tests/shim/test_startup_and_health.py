"""The shim starts or says in one line why not; it reports liveness and readiness; its calls
to the decider are spread over every address the decider's name resolves to."""

from __future__ import annotations

import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from decider.service.server import BackgroundServer
from decider_api.v1 import decider_pb2 as pb
from shim import decider_channel
from shim.config import Config
from shim.health import Health, HealthServer
from tests.shim.helpers import jobset, rjob, wait_for

pytestmark = pytest.mark.waits

ROOT = Path(__file__).resolve().parents[2]


def shim_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "shim.main", "--decider-address",
                           "127.0.0.1:1", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=60, env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"})


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _one_line_exit_2(out: subprocess.CompletedProcess[str]) -> str:
    assert out.returncode == 2, (out.returncode, out.stderr)
    assert "Traceback" not in out.stderr
    lines = [x for x in out.stderr.splitlines() if x.startswith("decider-shim: ")]
    assert len(lines) == 1, out.stderr
    return lines[0]


@pytest.fixture(scope="module")
def decider() -> Any:
    with BackgroundServer("127.0.0.1:0") as srv:
        yield srv


@pytest.mark.parametrize("flags,needle", [
    (["--feature-gates", "Bogus=true"], "options.feature_gates[Bogus]: unknown feature gate"),
    (["--scheduling-api-version", "scheduling.k8s.io/v9"],
     "options.gang_api_version: Unsupported value: 'scheduling.k8s.io/v9'"),
], ids=["unknown-feature-gate", "unserved-gang-api-version"])
def test_options_the_decider_refuses_stop_the_start(decider: Any, flags: list[str],
                                                    needle: str, tmp_path: Path) -> None:
    """Said once at start, before the API server is asked anything, rather than as a warning
    for every JobSet the shim then fails to decide."""
    out = subprocess.run([sys.executable, "-m", "shim.main", "--decider-address", decider.target,
                          "--kubeconfig", _unreachable_kubeconfig(tmp_path), *flags],
                         capture_output=True,
                         text=True, cwd=ROOT, timeout=60,
                         env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"})
    line = _one_line_exit_2(out)
    assert line.startswith("decider-shim: the decider refuses the shim's options: ")
    assert needle in line


def test_options_the_decider_takes_go_on_to_the_cluster(decider: Any, tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "shim.main", "--decider-address", decider.target,
                          "--kubeconfig", _unreachable_kubeconfig(tmp_path),
                          "--feature-gates", "RestartJob=true"], capture_output=True,
                         text=True, cwd=ROOT, timeout=60,
                         env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"})
    assert _one_line_exit_2(out).startswith("decider-shim: cannot reach the API server at ")
    # urllib3 had warned of each of its own three connection retries first.
    assert "Retrying" not in out.stderr, out.stderr


def _unreachable_kubeconfig(tmp_path: Path) -> str:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        f"clusters: [{{name: c, cluster: {{server: 'http://127.0.0.1:{_closed_port()}'}}}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\n")
    return str(kubeconfig)


def test_a_missing_kubeconfig_stops_the_start_before_a_local_decider(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "shim.main", "--kubeconfig",
                          str(tmp_path / "nope")], capture_output=True, text=True, cwd=ROOT,
                         timeout=60, env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"})
    assert _one_line_exit_2(out) == f"decider-shim: --kubeconfig {tmp_path / 'nope'}: no such file"
    assert "started a local decider" not in out.stderr


def test_a_missing_kubeconfig_is_one_line(tmp_path: Path) -> None:
    line = _one_line_exit_2(shim_cli("--kubeconfig", str(tmp_path / "nope")))
    assert line == f"decider-shim: --kubeconfig {tmp_path / 'nope'}: no such file"


def test_no_kubeconfig_at_all_is_one_line() -> None:
    line = _one_line_exit_2(shim_cli())
    assert line.startswith("decider-shim: ~/.kube/config (no --kubeconfig, KUBECONFIG or "
                           "in-cluster service account): ")


def test_a_kubeconfig_that_is_not_one_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "kubeconfig"
    bad.write_text("clusters: 7\n")
    line = _one_line_exit_2(shim_cli("--kubeconfig", str(bad)))
    assert line.startswith(f"decider-shim: --kubeconfig {bad}: ")


def test_an_unreachable_api_server_is_one_line(tmp_path: Path) -> None:
    port = _closed_port()
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        f"clusters: [{{name: c, cluster: {{server: 'http://127.0.0.1:{port}'}}}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\n")
    line = _one_line_exit_2(shim_cli("--kubeconfig", str(kubeconfig)))
    assert line.startswith(f"decider-shim: cannot reach the API server at "
                           f"http://127.0.0.1:{port}: ")
    assert "refused" in line.lower()


@pytest.mark.parametrize("flag", ["--decider-ca-file", "--decider-cert-file",
                                  "--decider-key-file"])
def test_an_unreadable_tls_file_is_one_line_naming_the_flag(flag: str, tmp_path: Path) -> None:
    kubeconfig = _unreachable_kubeconfig(tmp_path)  # read first; the decider's files next
    line = _one_line_exit_2(shim_cli(flag, "/nonexistent.pem", "--decider-tls",
                                     "--kubeconfig", kubeconfig))
    assert line == (f"decider-shim: {flag} /nonexistent.pem: cannot read: "
                    "No such file or directory")
    notpem = tmp_path / "x.pem"
    notpem.write_text("hello")
    line = _one_line_exit_2(shim_cli(flag, str(notpem), "--decider-tls",
                                     "--kubeconfig", kubeconfig))
    assert line == f"decider-shim: {flag} {notpem}: not a PEM file"


@pytest.mark.parametrize("flag", ["--decider-ca-file", "--decider-cert-file",
                                  "--decider-key-file"])
def test_the_kueue_check_says_an_unreadable_tls_file_as_the_shim_does(flag: str,
                                                                     tmp_path: Path) -> None:
    # Both dial the decider through shim/decider_channel.py: a file names itself alike.
    def check(path: str) -> str:
        out = subprocess.run([sys.executable, "-m", "shim.kueue_check.main", "--decider-address",
                              "127.0.0.1:1", "--kubeconfig", _unreachable_kubeconfig(tmp_path),
                              flag, path], capture_output=True, text=True, cwd=ROOT, timeout=60,
                             env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"})
        assert out.returncode == 2, (out.returncode, out.stderr)
        assert "Traceback" not in out.stderr
        lines = [x for x in out.stderr.splitlines() if x.startswith("decider-kueue-check: ")]
        assert len(lines) == 1, out.stderr
        return lines[0]

    assert check("/nonexistent.pem") == (f"decider-kueue-check: {flag} /nonexistent.pem: "
                                         "cannot read: No such file or directory")
    notpem = tmp_path / "x.pem"
    notpem.write_text("hello")
    assert check(str(notpem)) == f"decider-kueue-check: {flag} {notpem}: not a PEM file"


# ---- health ---------------------------------------------------------------------------------

def _get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_liveness_and_readiness(cluster, shims, decider_server) -> None:
    shim = shims.start()
    health = Health(shim, decider_channel.health_check(Config(
        decider_address=decider_server.target)), cache_seconds=0)
    server = HealthServer(health, 0, "127.0.0.1").start()
    try:
        assert _get(server.port, "/healthz") == (200, "ok\n")
        assert _get(server.port, "/readyz") == (200, "ok\n")
        assert _get(server.port, "/nope")[0] == 404
        # The leader's decider is gone: not ready (alive all the same).
        # A closed port refuses at once; the deadline only bounds a machine too busy to say so.
        health.decider_check = decider_channel.health_check(Config(
            decider_address=f"127.0.0.1:{_closed_port()}"), timeout=10)
        code, why = _get(server.port, "/readyz")
        assert code == 503 and why.startswith("decider 127.0.0.1:") and "UNAVAILABLE" in why
        assert _get(server.port, "/healthz")[0] == 200
        # Informers stopped: neither alive nor ready.
        shim.kill()
        code, why = _get(server.port, "/healthz")
        assert code == 503 and why.startswith("informers stopped: jobsets")
        assert _get(server.port, "/readyz") == (503, "shutting down\n")
    finally:
        server.stop()


def test_a_standby_is_ready_without_asking_the_decider(cluster, shims) -> None:
    shim = shims.start()
    asked = []
    shim.is_leader = lambda: False  # type: ignore[method-assign]
    health = Health(shim, lambda: asked.append(1) or "unreachable", cache_seconds=0)
    assert health.readiness() == ""
    assert asked == []


# ---- the channel to the decider -------------------------------------------------------------

class _Count:
    """Decider RPCs a server answered: every one is submitted to its worker pool."""

    def __init__(self, server: BackgroundServer) -> None:
        self.calls = 0
        pool = server.pool
        real = pool.submit

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            return real(*args, **kwargs)

        pool.submit = counted  # type: ignore[method-assign]


def test_a_dns_name_gets_the_dns_resolver_and_addresses_stay_as_they_are() -> None:
    assert decider_channel.target("jobset-decider.jobset-decider.svc:50051") == \
        "dns:///jobset-decider.jobset-decider.svc:50051"
    assert decider_channel.target("localhost:50051") == "dns:///localhost:50051"
    for kept in ("127.0.0.1:50051", "[::1]:50051", "dns:///x:1", "ipv4:127.0.0.1:1,127.0.0.1:2",
                 "unix:/tmp/s"):
        assert decider_channel.target(kept) == kept


def test_calls_are_spread_over_every_address_of_the_decider() -> None:
    with BackgroundServer("127.0.0.1:0") as a, BackgroundServer("127.0.0.1:0") as b:
        counts = [_Count(a), _Count(b)]
        # What a headless Service's name resolves to, as a static list (no DNS server here).
        cfg = Config(decider_address=f"ipv4:127.0.0.1:{a.port},127.0.0.1:{b.port}")
        request = pb.ValidateRequest(object_json='{"apiVersion": "jobset.x-k8s.io/v1alpha2", '
                                                 '"kind": "JobSet", "metadata": {"name": "x"}}')
        with decider_channel.client(cfg) as client:
            for _ in range(20):
                client.validate(request, timeout=10)
    assert sum(c.calls for c in counts) == 20
    assert all(c.calls >= 5 for c in counts), [c.calls for c in counts]


def test_a_dns_name_reaches_the_decider_through_the_dns_resolver() -> None:
    with BackgroundServer("127.0.0.1:0") as server:
        count = _Count(server)
        cfg = Config(decider_address=f"localhost:{server.port}")
        assert decider_channel.target(cfg.decider_address).startswith("dns:///")
        request = pb.ValidateRequest(object_json='{"kind": "JobSet"}')
        with decider_channel.client(cfg) as client:
            client.validate(request, timeout=10)
    assert count.calls == 1


def test_decider_shim_serves_its_health_port(cluster, decider_server) -> None:
    port = _closed_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "shim.main", "--kubeconfig", str(cluster.kubeconfig),
         "--decider-address", decider_server.target, "--no-leader-elect",
         "--healthz-port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        def ready() -> bool:
            try:
                return _get(port, "/readyz")[0] == 200
            except OSError:
                return False

        wait_for(ready, timeout=30, what="/readyz 200")
        assert _get(port, "/healthz") == (200, "ok\n")
        cluster.create_jobset(jobset("hc", rjob("workers", 1)))
        wait_for(lambda: len(cluster.live_jobs("hc-")) == 1, what="the Job")
    finally:
        proc.terminate()
        assert proc.wait(timeout=30) == 0, proc.stderr.read()


@pytest.mark.parametrize("module,prog", [("shim.main", "decider-shim"),
                                         ("shim.kueue_check.main", "decider-kueue-check")],
                         ids=["shim", "kueue-check"])
@pytest.mark.parametrize("content,said", [(None, "no such file"), ("clusters: 7\n", "")],
                         ids=["missing", "not-a-kubeconfig"])
def test_both_programs_say_a_bad_kubeconfig_alike(tmp_path: Path, module: str, prog: str,
                                                  content: str | None, said: str) -> None:
    # One loader (shim/kubeconfig.py) serves the shim and the Kueue AdmissionCheck controller.
    path = tmp_path / "kubeconfig"
    if content is not None:
        path.write_text(content)
    out = subprocess.run([sys.executable, "-m", module, "--decider-address", "127.0.0.1:1",
                          "--kubeconfig", str(path)], capture_output=True, text=True, cwd=ROOT,
                         timeout=60, env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"})
    assert out.returncode == 2, (out.returncode, out.stderr)
    assert "Traceback" not in out.stderr
    lines = [x for x in out.stderr.splitlines() if x.startswith(f"{prog}: ")]
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith(f"{prog}: --kubeconfig {path}: {said}")
    assert len(lines[0]) > len(f"{prog}: --kubeconfig {path}: ")
