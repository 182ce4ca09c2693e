"""The `decider serve` under test, as an operator runs it, and the errors it writes to its log.

The server runs in its own process with --decision-log, --metrics-port, the webhook on TLS and
traces on (OTLP to a closed port), so that the telemetry, decision-log and export-failure paths
see every request too; what a request breaks there shows in the log, not in its answer.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

from . import ROOT

# The tests' certificate helper makes the webhook's CA and serving pair.
sys.path.insert(0, str(ROOT / "tests"))

from support.certs import make_pki  # noqa: E402


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`decider serve` started as an operator would start it; `target` is its gRPC address,
    read from the line it prints once it listens."""

    def __init__(self, workdir: Path, workers: int, webhook_gates: dict[str, bool]) -> None:
        self.pki = make_pki(workdir)
        self.webhook_port = _free_port()
        self.metrics_port = _free_port()
        self.log_path = workdir / "server.log"
        self.decision_log = workdir / "decisions.jsonl"
        # The server appends; a run into an --out used before counts its own lines only.
        self.decision_log.unlink(missing_ok=True)
        gates = ",".join(f"{k}={str(v).lower()}" for k, v in webhook_gates.items())
        args = [sys.executable, "-m", "decider.cli", "serve", "--host", "127.0.0.1",
                "--port", "0", "--workers", str(workers), "--drain-delay", "0",
                "--webhook-port", str(self.webhook_port),
                "--webhook-cert-file", str(self.pki.server_cert),
                "--webhook-key-file", str(self.pki.server_key),
                "--webhook-feature-gates", gates,
                "--metrics-port", str(self.metrics_port),
                "--decision-log", str(self.decision_log)]
        env = dict(os.environ, PYTHONPATH=f"{ROOT}:{ROOT / 'clients' / 'python'}",
                   OTEL_TRACES_EXPORTER="otlp",
                   OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9",
                   OTEL_BSP_MAX_QUEUE_SIZE="256", OTEL_BSP_MAX_EXPORT_BATCH_SIZE="128")
        self.log = open(self.log_path, "w")  # noqa: SIM115 - held while the server runs
        self.proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                     stderr=self.log, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if not line:
            self.proc.wait()
            raise SystemExit(f"decider serve did not start:\n{self.log_path.read_text()}")
        self.target = line.rsplit(" ", 1)[-1]

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


class LogWatch:
    """Tracebacks and errors the server writes, as they appear; each one saves the requests
    sent just before it (the one that caused it is among them)."""

    PATTERN = re.compile(r"Traceback|\bERROR\b|\bCRITICAL\b")

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.hits: list[str] = []
        self.seen: set[str] = set()

    def first(self, line: str) -> bool:
        """Whether this error is new (times and numbers aside): the requests before the first
        of a kind are saved, not before every repeat."""
        key = re.sub(r"[0-9]+", "#", line.split(" ", 2)[-1])[:160]
        if key in self.seen:
            return False
        self.seen.add(key)
        return True

    def poll(self) -> list[str]:
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            chunk = f.read()
        cut = chunk.rfind(b"\n") + 1
        self.offset += cut
        new = []
        for line in chunk[:cut].decode("utf-8", "replace").splitlines():
            if self.PATTERN.search(line) and "Failed to export" not in line \
                    and "Transient error" not in line and "exporter" not in line.lower():
                new.append(line)
        self.hits += new
        return new
