"""`decider gang` and `decider podsets`: what a scheduler asks of a Job or JobSet: the gang
objects it needs, and Kueue's pod sets beside the gang minCount of each."""

from __future__ import annotations

import argparse
import sys

from decider.cli.calls import call, server_target
from decider.cli.common import GANG_API_VERSIONS, GANG_TARGETS, parse_gates
from decider.cli.files import add_file_flags, read_objects
from decider_client import observe, render
from decider_client.documents import split_subject


def cmd_gang(args: argparse.Namespace) -> int:
    objects, source = read_objects(args)
    subject, existing = split_subject(objects, source)
    request = observe.build_plan_gang_request(subject, existing, args.api_version, args.target,
                                              parse_gates(args.feature_gates))
    # Both paths go through the contract, so --server prints the same bytes as in-process.
    response = call(args, "plan_gang", request)
    sys.stdout.write(render.dumps(render.gang_plan_to_dict(response), args.output))
    return 0


def cmd_podsets(args: argparse.Namespace) -> int:
    objects, source = read_objects(args)
    subject, _ = split_subject(objects, source)
    request = observe.build_pod_sets_request(subject, args.api_version,
                                             parse_gates(args.feature_gates))
    response = call(args, "pod_sets", request)
    sys.stdout.write(render.dumps(render.pod_sets_to_dict(response), args.output))
    return 0


_GATES = ("e.g. JobSetGangOfGangs=true: spec.scheduling compiles to a CompositePodGroup tree "
          "(spec.scheduling is planned whatever JobSetWorkloadAwareSchedulingAPI says; Decide "
          "reconciles it only with that gate)")


def add_gang_arguments(gang: argparse.ArgumentParser) -> None:
    add_file_flags(gang, "YAML/JSON: a batch/v1 Job or a JobSet, and any Workloads/PodGroups "
                         "that exist")
    gang.add_argument("--api-version", default="", help=GANG_API_VERSIONS)
    gang.add_argument("--target", default="", help=GANG_TARGETS)
    gang.add_argument("--feature-gates", help=_GATES)
    gang.add_argument("--server", type=server_target,
                      help="ask a running decider at HOST:PORT instead")
    gang.add_argument("-o", "--output", choices=("json", "yaml"), default="json")
    gang.set_defaults(func=cmd_gang)


def add_podsets_arguments(podsets: argparse.ArgumentParser) -> None:
    add_file_flags(podsets, "YAML/JSON: a batch/v1 Job or a JobSet")
    podsets.add_argument("--api-version", default="", help=GANG_API_VERSIONS)
    podsets.add_argument("--feature-gates", help=_GATES)
    podsets.add_argument("--server", type=server_target,
                         help="ask a running decider at HOST:PORT instead")
    podsets.add_argument("-o", "--output", choices=("json", "yaml"), default="json")
    podsets.set_defaults(func=cmd_podsets)
