"""Run a Deployment's container on this machine as the kubelet runs it (restartPolicy Always):
when it exits it is started again, at once the first time, then after 10 s, 20 s, ... up to
300 s, the delay forgotten once it has run for 10 minutes. SIGTERM or SIGINT ends the
supervision once the container has exited: both run in one process group, and the group is
what is signalled (tools/controlplane/processes.py), so the container gets the signal once,
from the sender, as it would from the kubelet.

    python -m tools.controlplane.supervise NAME -- COMMAND [ARG...]

The shim exits when it loses its Lease (an API server away for longer than its renew
deadline): in a cluster its pod's container is restarted, and here too.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from types import FrameType

FIRST, CAP, STEADY = 10.0, 300.0, 600.0


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print("usage: python -m tools.controlplane.supervise NAME -- COMMAND [ARG...]",
              file=sys.stderr)
        return 2
    name, command = argv[0], argv[2:]
    stopping = False

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    delay = 0.0
    code = 0
    while not stopping:
        started = time.monotonic()
        child = subprocess.Popen(command)
        code = child.wait()
        if stopping:
            break
        if time.monotonic() - started >= STEADY:
            delay = 0.0
        print(f"supervise: {name} exited with status {code}; starting it again in "
              f"{delay:.0f} s", file=sys.stderr, flush=True)
        deadline = time.monotonic() + delay
        while not stopping and time.monotonic() < deadline:
            time.sleep(0.1)
        delay = FIRST if delay == 0 else min(delay * 2, CAP)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
