"""Run the test suite (or part of it) while other processes keep every core busy.

A test that bounds wall time tightly or races a background thread passes on a quiet machine and
fails on a busy one, which is where a newcomer first runs it. This runs pytest under contention,
as many times as asked, and prints how long each run took and what failed, so that "green on any
machine" is something measured rather than hoped.

    python bench/suite_under_load.py                      # the README's test command, once
    python bench/suite_under_load.py --repeat 5 -m waits  # the tests that wait on clocks or
                                                          # threads (marker `waits`), 5 times
    python bench/suite_under_load.py --burners 0          # the same, on a quiet machine

Each burner is `python -c 'while True: pass'` at normal priority; pytest runs at normal priority
too, so the tests get about half the CPU they would alone on a machine with as many cores as
burners.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_SUMMARY = re.compile(r"^=*\s*(?P<text>.*\b(passed|failed|error)\b.*?)\s*=*$")


def _burners(count: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        proc.send_signal(signal.SIGKILL)
    for proc in procs:
        proc.wait()


def _run(pytest_args: list[str], log: Path | None) -> tuple[int, float, str, list[str]]:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           *pytest_args], cwd=ROOT, capture_output=True, text=True, check=False)
    elapsed = time.monotonic() - started
    if log is not None:
        log.write_text(done.stdout + done.stderr)
    lines = done.stdout.splitlines()
    summary = next((m.group("text") for line in reversed(lines)
                    if (m := _SUMMARY.match(line))), "no summary (see pytest's output)")
    failed = [line.split(" ", 1)[1] for line in lines if line.startswith(("FAILED ", "ERROR "))]
    return done.returncode, elapsed, summary, failed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--burners", type=int, default=os.cpu_count() or 1,
                        help="busy processes beside the tests (default: one per core)")
    parser.add_argument("--repeat", type=int, default=1, help="runs in a row (default 1)")
    parser.add_argument("--logs", type=Path, metavar="DIR",
                        help="keep each run's pytest output in DIR/run-N.log (failures in full)")
    args, pytest_args = parser.parse_known_args()
    burners = _burners(args.burners)
    print(f"{args.burners} burner(s) on {os.cpu_count()} core(s); pytest {' '.join(pytest_args)}")
    print(f"{'run':>4} {'exit':>4} {'seconds':>8}  summary")
    worst = 0
    if args.logs is not None:
        args.logs.mkdir(parents=True, exist_ok=True)
    try:
        for run in range(1, args.repeat + 1):
            log = args.logs / f"run-{run}.log" if args.logs is not None else None
            code, elapsed, summary, failed = _run(pytest_args, log)
            worst = max(worst, code)
            print(f"{run:>4} {code:>4} {elapsed:>8.1f}  {summary}", flush=True)
            for name in failed:
                print(f"{'':>19}{name}", flush=True)
    finally:
        _stop(burners)
    return worst


if __name__ == "__main__":
    sys.exit(main())
