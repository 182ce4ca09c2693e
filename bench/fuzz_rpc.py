"""Fuzz a running `decider serve` over every RPC and its admission webhook: the entry point.

The fuzzer is the package bench/fuzz/ (its docstring, printed by --help, says what it sends
and what counts as a finding); this script stays so that `python bench/fuzz_rpc.py ...`, which
the tests' notes and past reports name, keeps working with the same options.

Usage:
  python bench/fuzz_rpc.py [--requests 100000] [--seed 1] [--in-flight 12] [--workers 2]
                           [--out /tmp/fuzz-rpc] [--webhook-gates new|none|all] [--inproc]
  python bench/fuzz_rpc.py --replay /tmp/fuzz-rpc/0001-Decide-INTERNAL.bin
"""

from __future__ import annotations

from fuzz.cli import main

if __name__ == "__main__":
    main()
