"""A CLI command imports only what it uses (issue 20, item 8).

`decider --version` took 2.75 s on a loaded machine because every command imported the whole
server stack: grpc, the server and its worker pool, aiohttp (through OpenTelemetry's exporters),
OpenTelemetry itself. Asserted on the modules a fresh process holds after the command, not on
time: `python -X importtime` and bench figures are in the commit that made imports lazy.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.waits

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = str(ROOT / "examples" / "leader-workers.yaml")
GANG_JOB = str(ROOT / "examples" / "gang-job.yaml")
NOW = "2026-01-01T00:00:00Z"

# Runs `decider ARGS` as the entry point does, then writes the modules it loaded to a file
# (standard output is the command's).
_PROBE = """
import json, sys
out, args = sys.argv[1], sys.argv[2:]
sys.argv = ["decider", *args]
from decider.cli.entry import main
try:
    code = main()
except SystemExit as exc:
    code = exc.code
with open(out, "w") as fh:
    json.dump({"code": code, "modules": sorted(sys.modules)}, fh)
"""

# What serving needs and a command run in its own process does not.
SERVER_STACK = ("grpc", "aiohttp", "opentelemetry", "uvloop", "cryptography", "kubernetes",
                "decider.service.server", "decider.service.pool", "decider.service.worker",
                "decider.webhook", "decider.telemetry", "decider_telemetry",
                "decider_client.client")


def _loaded(tmp_path: Path, *args: str) -> tuple[int, set[str]]:
    out = tmp_path / "modules.json"
    subprocess.run([sys.executable, "-c", _PROBE, str(out), *args], cwd=ROOT,
                   capture_output=True, text=True, timeout=120, check=True)
    result = json.loads(out.read_text())
    return result["code"], set(result["modules"])


def _present(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == n or m.startswith(n + ".") for n in names))


def test_version_imports_no_command(tmp_path: Path) -> None:
    code, modules = _loaded(tmp_path, "--version")
    assert code == 0
    assert _present(modules, SERVER_STACK) == []
    # Nor any command, the contract, protobuf, YAML or RE2.
    assert _present(modules, ("decider.cli.decide", "decider.cli.serve", "decider.cli.replay",
                              "decider.contract", "decider.core", "google.protobuf", "yaml",
                              "re2")) == []


@pytest.mark.parametrize("args", [
    pytest.param(("decide", "-f", EXAMPLE, "--now", NOW), id="decide"),
    pytest.param(("simulate", "-f", EXAMPLE, "--now", NOW, "--fail", "trainer-workers-0"),
                 id="simulate"),
    pytest.param(("validate", "-f", EXAMPLE), id="validate"),
    pytest.param(("gang", "-f", GANG_JOB), id="gang"),
    pytest.param(("podsets", "-f", GANG_JOB), id="podsets"),
])
def test_a_command_in_process_imports_no_server(tmp_path: Path, args: tuple[str, ...]) -> None:
    code, modules = _loaded(tmp_path, *args)
    assert code == 0
    assert _present(modules, SERVER_STACK) == []
    # The other commands stay unread too.
    others = {"decide", "simulate", "validate", "gang", "serve", "replay"} - {args[0]}
    if args[0] == "podsets":
        others.discard("gang")  # podsets lives beside gang
    assert _present(modules, tuple(f"decider.cli.{c}" for c in others)) == []


def test_asking_a_server_imports_the_grpc_client_not_the_server(tmp_path: Path) -> None:
    # Nothing listens on port 1: the client's import is what is asserted, then exit 1.
    code, modules = _loaded(tmp_path, "decide", "-f", EXAMPLE, "--now", NOW,
                            "--server", "127.0.0.1:1")
    assert code == 1
    assert "grpc" in modules and "decider_client.client" in modules
    assert _present(modules, ("aiohttp", "uvloop", "cryptography", "kubernetes",
                              "decider.service.server", "decider.service.pool",
                              "decider.webhook")) == []
