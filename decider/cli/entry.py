"""The `decider` command's entry point.

The CLI imports for about 0.3 s before its main() runs; a Ctrl-C then (a user who typed the
wrong file) printed a KeyboardInterrupt traceback. Here it exits 130, as one later does.
"""

from __future__ import annotations

import sys


def main() -> int:
    try:
        from decider.cli.main import main as cli_main

        return cli_main()
    except KeyboardInterrupt:
        print("decider: interrupted", file=sys.stderr)
        return 130
