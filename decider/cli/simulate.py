"""`decider simulate`: what if? Decide passes rolled forward under hypothetical events.

Event flags keep their command-line order; `--at SECONDS` sets the time of the flags after it,
so `--fail a --at 60 --fail b` fails a at once and b a minute later. Like every command it asks
the contract (in-process or `--server`), so both print the same bytes.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from decider.cli.calls import call, server_target
from decider.cli.common import (
    GANG_API_VERSIONS,
    GANG_TARGETS,
    UsageError,
    parse_gates,
    parse_now,
)
from decider.cli.files import add_file_flags, read_objects
from decider_client import observe, render, table
from decider_client.documents import split_jobset


class _EventFlag(argparse.Action):
    """A hypothetical event flag (--fail, --succeed, ...), kept in command-line order with the
    time of the --at before it."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        events = list(getattr(namespace, "events", None) or [])
        events.append((self.const, values, getattr(namespace, "at", 0) or 0, option_string))
        namespace.events = events


def _at_seconds(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of seconds") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {value}")
    if value > _INT64_MAX:  # the contract's at_seconds is an int64
        raise argparse.ArgumentTypeError(f"must be at most {_INT64_MAX:,}, got {value:,}")
    return value


def _max_passes(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    # The server says what the range is; a value past the contract's int32 cannot be sent.
    if not -(2**31) <= value < 2**31:
        from decider.core.simulate import MAX_PASSES

        raise argparse.ArgumentTypeError(f"must be between 0 and {MAX_PASSES}, got {value:,}")
    return value


_INT64_MAX = 2**63 - 1


def simulation_events(flags: list[tuple[str, Any, int, str]]) -> list[Any]:
    """The event flags as SimulationEvents: `--fail JOB[:REASON[:MESSAGE]]` and the rest."""
    from decider_api.v1 import decider_pb2 as pb

    events = []
    for kind, value, at, flag in flags:
        event = pb.SimulationEvent(type=render.SIMULATION_EVENT_TYPES[kind], at_seconds=at)
        if kind == "JobFailed":
            job, _, rest = value.partition(":")
            reason, _, message = rest.partition(":")
            event.job, event.reason, event.message = job, reason, message
        elif isinstance(value, str):  # the JobSet's flags take no value
            event.job = value
        if kind.startswith("Job") and not kind.startswith("JobSet") and not event.job:
            raise UsageError(f"{flag}: names a Job (got {value!r})")
        events.append(event)
    return events


def cmd_simulate(args: argparse.Namespace) -> int:
    from decider_api.v1 import decider_pb2 as pb

    objects, source = read_objects(args)
    jobset, owned = split_jobset(objects, source)
    observed = observe.build_decide_request(
        jobset, owned, parse_now(args.now), controller_name=args.controller_name,
        feature_gates=parse_gates(args.feature_gates), gang_api_version=args.gang_api_version,
        gang_target=args.gang_target)
    request = pb.SimulateRequest(observed=observed, max_passes=args.max_passes,
                                 events=simulation_events(args.events or []))
    response = call(args, "simulate", request)
    simulation = render.simulation_to_dict(response)
    sys.stdout.write(table.simulation(simulation) if args.output is None
                     else render.dumps(simulation, args.output))
    return 0


def add_arguments(sim: argparse.ArgumentParser) -> None:
    from decider.core.simulate import DEFAULT_MAX_PASSES, MAX_PASSES

    add_file_flags(sim, "YAML/JSON: one JobSet and the objects it owns")
    sim.add_argument("--now", help="when the simulation starts, RFC 3339 (default: now)")
    events = sim.add_argument_group(
        "events (each at the time of the --at before it; several at one time apply in order)")
    events.add_argument("--at", type=_at_seconds, default=0, metavar="SECONDS",
                        help="seconds after --now for the event flags that follow (default 0)")
    for flag, kind, metavar, text in (
            ("--fail", "JobFailed", "JOB[:REASON[:MESSAGE]]",
             "the Job fails (reason default BackoffLimitExceeded)"),
            ("--succeed", "JobSucceeded", "JOB", "the Job completes"),
            ("--ready", "JobReady", "JOB", "the Job's pods become ready"),
            ("--suspend-job", "JobSuspended", "JOB", "someone else suspends the Job"),
            ("--resume-job", "JobResumed", "JOB", "someone else resumes the Job")):
        events.add_argument(flag, action=_EventFlag, const=kind, metavar=metavar, help=text)
    events.add_argument("--suspend", action=_EventFlag, const="JobSetSuspended", nargs=0,
                        help="the JobSet is suspended")
    events.add_argument("--resume", action=_EventFlag, const="JobSetResumed", nargs=0,
                        help="the JobSet is resumed")
    sim.add_argument("--max-passes", type=_max_passes, default=0,
                     help=f"Decide passes at most (default {DEFAULT_MAX_PASSES}, at most "
                          f"{MAX_PASSES})")
    sim.add_argument("--feature-gates", help="e.g. RestartJob=true")
    sim.add_argument("--controller-name", default="",
                     help="decide as this controller (default: upstream's)")
    sim.add_argument("--gang-api-version", default="",
                     help=f"gang scheduling API of gang JobSets: {GANG_API_VERSIONS}")
    sim.add_argument("--gang-target", default="", help=f"gang target: {GANG_TARGETS}")
    sim.add_argument("--server", type=server_target,
                     help="ask a running decider at HOST:PORT instead")
    sim.add_argument("-o", "--output", choices=("json", "yaml"),
                     help="print every pass's plan and the outcome as JSON or YAML (default: "
                          "a table of the passes and the outcome)")
    sim.set_defaults(func=cmd_simulate, events=[])
