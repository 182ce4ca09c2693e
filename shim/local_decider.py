"""A decider of the shim's own, for `--decider-address local`.

It runs `decider serve` as a child process on a loopback port and is reached over gRPC like any
other decider, so the shim still sees only the contract. This lets one command with nothing but a
kubeconfig drive a cluster; a Deployment points the shim at the decider Service instead.
"""

from __future__ import annotations

import subprocess
import sys
import threading


class LocalDecider:
    def __init__(self) -> None:
        self._proc: subprocess.Popen[str] | None = None
        self.target = ""

    def start(self, timeout: float = 60.0) -> str:
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "decider.cli", "serve", "--host", "127.0.0.1", "--port", "0",
             # A child of the shim has no load balancer to wait for when it stops.
             "--drain-delay", "0"],
            stdout=subprocess.PIPE,
            text=True,
        )
        line: list[str] = []
        assert self._proc.stdout is not None
        reader = threading.Thread(target=lambda: line.append(self._proc.stdout.readline()),
                                  daemon=True)
        reader.start()
        reader.join(timeout)
        if not line or "serving" not in line[0]:
            self.stop()
            raise RuntimeError("the local decider did not start (is the decider package "
                               "installed beside the shim?)")
        self.target = line[0].strip().rsplit(" ", 1)[-1]
        return self.target

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._proc = None
