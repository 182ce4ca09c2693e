"""`decider validate`: admission of a JobSet (defaulted, then validated), or of a Job update
against the gang rules; exit 2 when invalid."""

from __future__ import annotations

import argparse
import json
import sys

from decider.cli.calls import call, server_target
from decider.cli.common import EXIT_INVALID, GANG_API_VERSIONS, parse_gates, read_input
from decider.cli.files import add_file_flags, read_objects
from decider_client import observe, render
from decider_client.documents import load_objects, split_subject

GANG_KINDS = ("Workload", "PodGroup")


def cmd_validate(args: argparse.Namespace) -> int:
    from decider_api.v1 import decider_pb2 as pb

    objects, source = read_objects(args)
    subject, others = split_subject(objects, source)
    # A Job is checked against the PodGroups that exist; a JobSet against its PVCs.
    wanted = GANG_KINDS if subject.get("kind") == "Job" else ("PersistentVolumeClaim",)
    request = pb.ValidateRequest(
        object_json=json.dumps(subject),
        options=observe.options(feature_gates=parse_gates(args.feature_gates),
                                gang_api_version=args.api_version),
        objects=[observe.object_summary(o, f"objects[{i}]")
                 for i, o in enumerate(o for o in others if o.get("kind") in wanted)],
    )
    if args.old:
        old, _ = split_subject(load_objects(read_input(args.old), args.old), args.old)
        request.old_object_json = json.dumps(old)
    response = call(args, "validate", request)
    sys.stdout.write(render.dumps(render.validation_to_dict(response), args.output))
    return 0 if response.valid else EXIT_INVALID


def add_arguments(validate: argparse.ArgumentParser) -> None:
    add_file_flags(validate, "the JobSet (and the PVCs that exist), or a batch/v1 Job and the "
                             "PodGroups that exist")
    validate.add_argument("--old", help="the stored JobSet or Job, to validate an update")
    validate.add_argument("--feature-gates", help="e.g. RestartJob=true")
    validate.add_argument("--api-version", default="",
                          help=f"gang rules for a Job: {GANG_API_VERSIONS}")
    validate.add_argument("--server", type=server_target,
                          help="ask a running decider at HOST:PORT instead")
    validate.add_argument("-o", "--output", choices=("json", "yaml"), default="json")
    validate.set_defaults(func=cmd_validate)
