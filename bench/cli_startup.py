"""How long a `decider` command takes to start: wall time and import time, by command.

For each command, in fresh processes: the wall time of the whole command (median and best of
--runs) and what `python -X importtime` sums over the top-level imports, with the number of
modules loaded. With --baseline REF the same commands run from that commit's tree beside this
one, interleaved, so the ratio holds on a busy machine.

Usage: python bench/cli_startup.py [--runs 7] [--baseline REF]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

EXAMPLE = "examples/leader-workers.yaml"
COMMANDS = {
    "--version": ["--version"],
    "decide": ["decide", "-f", EXAMPLE, "--now", "2026-01-01T00:00:00Z"],
    "validate": ["validate", "-f", EXAMPLE],
    "serve --help": ["serve", "--help"],
}
_COUNT = "import sys, runpy; sys.argv = ['decider', *sys.argv[1:]]\n" \
         "try:\n    runpy.run_module('decider.cli', run_name='__main__')\n" \
         "except SystemExit:\n    pass\nprint(len(sys.modules), file=sys.stderr)"


def _env(tree: Path) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=f"{tree}:{tree / 'clients' / 'python'}")


def _wall(tree: Path, args: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "decider.cli", *args], cwd=tree, env=_env(tree),
                   capture_output=True, check=False)
    return time.perf_counter() - start


def _imports(tree: Path, args: list[str]) -> tuple[float, int]:
    timed = subprocess.run([sys.executable, "-X", "importtime", "-m", "decider.cli", *args],
                           cwd=tree, env=_env(tree), capture_output=True, text=True)
    total = 0
    for line in timed.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            _, cumulative, name = line.split("|", 2)
            if cumulative.strip().isdigit() and not name.startswith("  "):
                total += int(cumulative)
    counted = subprocess.run([sys.executable, "-c", _COUNT, *args], cwd=tree, env=_env(tree),
                             capture_output=True, text=True)
    return total / 1e6, int(counted.stderr.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--baseline", help="git ref to compare (e.g. main)")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    print(f"# decider CLI start-up, {os.cpu_count()} CPUs, load average {load:.1f}, "
          f"Python {sys.version.split()[0]}\n")
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"this checkout": ROOT}
        if args.baseline:
            from soak import _checkout

            trees[args.baseline] = _checkout(args.baseline, Path(tmp))
        print("| command | tree | wall median | wall best | imports (-X importtime) | modules |")
        print("|---|---|---:|---:|---:|---:|")
        for name, argv in COMMANDS.items():
            walls: dict[str, list[float]] = {label: [] for label in trees}
            for _ in range(args.runs):
                for label, tree in trees.items():
                    walls[label].append(_wall(tree, argv))
            for label, tree in trees.items():
                imported, modules = _imports(tree, argv)
                print(f"| `{name}` | {label} | {statistics.median(walls[label]):.3f} s | "
                      f"{min(walls[label]):.3f} s | {imported:.3f} s | {modules} |")


if __name__ == "__main__":
    main()
