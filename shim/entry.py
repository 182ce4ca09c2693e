"""The `decider-shim` command's entry point: a Ctrl-C while it still imports (before its own
signal handling is set up) exits 130 rather than printing a KeyboardInterrupt traceback."""

from __future__ import annotations

import sys


def main() -> int:
    try:
        from shim.main import main as shim_main

        return shim_main()
    except KeyboardInterrupt:
        print("decider-shim: interrupted", file=sys.stderr)
        return 130
