"""Fuzz a running `decider serve` over every RPC and its admission webhook, with requests
mutated where today's surface is: spec.scheduling (every block shape, wrong types, huge counts,
deep nesting, many entries and targets), activeDeadlineSeconds, container ports and resources,
status.startTime / executionAttempts / conditions, observed Workloads, PodGroups and
CompositePodGroups, Services, suspended Jobs' containers, wrong JSON types at every metadata,
spec and status field the decider reads of an observed object on every road it takes (typed
`objects`, `observed_json`, Validate's old and new objects, PlanGang's objects, the webhook's
object and oldObject), bad UTF-8, `now` out of range, expiring client deadlines, and every
combination of feature gates.

The server runs with --decision-log, --metrics-port and traces on (OTLP to a closed port), so
the telemetry and decision-log paths see every request too. What the project promises of bad
input is INVALID_ARGUMENT (or RESOURCE_EXHAUSTED for sheer size), never INTERNAL or UNKNOWN,
never a hang, never a traceback in the server's log; the webhook's equivalent is a 4xx review
or a 200 answer, never a 500 or a dropped connection.

Prints a table of status codes per RPC, then every finding (INTERNAL, UNKNOWN, a hang: a call
that outlived its long client deadline, a slow decision: the server's own DEADLINE_EXCEEDED, a
webhook 5xx, a traceback in the server's log). Each finding's request is saved under --out
(`<n>-<rpc>-<code>.bin` and a `.json` beside it) and can be sent again, alone, with
`--replay FILE...` (against a fresh server, or `--target HOST:PORT`).

Usage:
  python bench/fuzz_rpc.py [--requests 100000] [--seed 1] [--in-flight 12] [--workers 2]
                           [--out /tmp/fuzz-rpc] [--webhook-gates new|none|all] [--inproc]
  python bench/fuzz_rpc.py --replay /tmp/fuzz-rpc/0001-Decide-INTERNAL.bin
"""

# One concern a module, imports running one way (each module imports only those above it):
#   values    hostile values, and the fixed `now` and gate names every request is built with
#   blocks    the surface of today's features as spec blocks (scheduling, ports, resources, status)
#   seeds     real JobSets and what a cluster shows of them, settled by the decider itself
#   mutate    mutations of a JobSet and of what is observed of it
#   wrong_types  a wrong JSON type at a field the decider reads of an observed object
#   case      what one fuzz call is (RPC, bytes, deadline) and the RPCs there are
#   generate  requests for every RPC and the webhook, built from seeds and mutations
#   server    the `decider serve` process under test and its log
#   findings  what counts as a finding, where it is saved, and the report
#   drive     the served run: each case sent over gRPC or HTTPS, the answers counted
#   replay    saved findings sent again, alone
#   inproc    the same cases decided in this process
#   cli       the options (bench/fuzz_rpc.py is the entry that calls it)

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
