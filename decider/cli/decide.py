"""`decider decide`: one reconcile pass for each JobSet of the input; print the plan."""

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
from decider_api import summarize
from decider_client import observe, render, table
from decider_client.documents import group_by_jobset, jobset_key


def cmd_decide(args: argparse.Namespace) -> int:
    objects, source = read_objects(args)
    groups = group_by_jobset(objects, source)
    if args.name:
        wanted = args.name if "/" in args.name else None
        picked = [g for g in groups if jobset_key(g[0]) == wanted
                  or (wanted is None and jobset_key(g[0]).split("/", 1)[1] == args.name)]
        if len(picked) != 1:
            raise UsageError(f"--name: {'no' if not picked else 'more than one'} JobSet "
                             f"{args.name!r} in {source} (it holds "
                             + ", ".join(jobset_key(g[0]) for g in groups) + ")"
                             + ("; name it as namespace/name" if picked else ""))
        groups = picked
    now = parse_now(args.now)
    gates = parse_gates(args.feature_gates)
    plans: dict[str, Any] = {}
    for jobset, owned in groups:
        request = observe.build_decide_request(
            jobset, owned, now, controller_name=args.controller_name, feature_gates=gates,
            gang_api_version=args.gang_api_version, gang_target=args.gang_target)
        key = jobset_key(jobset)
        try:
            response = call(args, "decide", request)
        except UsageError as exc:
            raise UsageError(f"{key}: {exc}" if len(groups) > 1 else str(exc)) from None
        plans[key] = render.plan_to_dict(response)
        # Pods that build_decide_request left out, as upstream lists none of them.
        left_out = [str((o.get("metadata") or {}).get("name") or "") for o in owned
                    if o.get("kind") == "Pod" and not summarize.pod_of(o, jobset)]
        if left_out:
            plans[key]["explanation"].append(summarize.unlisted_pods_sentence(left_out, jobset))
    # One JobSet: its plan, as always. Several: every plan, keyed by namespace/name.
    if args.output is None:
        sys.stdout.write(table.plan(next(iter(plans.values()))) if len(plans) == 1
                         else table.plans(plans))
        return 0
    out = next(iter(plans.values())) if len(plans) == 1 else plans
    sys.stdout.write(render.dumps(out, args.output))
    return 0


def add_arguments(decide: argparse.ArgumentParser) -> None:
    add_file_flags(decide, "YAML/JSON: JobSets and the objects they own, as `kubectl get "
                           "jobset,jobs,svc -o yaml` prints them; several JobSets print a plan "
                           "each, keyed by namespace/name")
    decide.add_argument("--name", default="",
                        help="decide only this JobSet of the file (NAME or NAMESPACE/NAME)")
    decide.add_argument("--now", help="the time of the decision, RFC 3339 (default: now)")
    decide.add_argument("--feature-gates", help="e.g. RestartJob=true,ElasticJobSet=true")
    decide.add_argument("--controller-name", default="",
                        help="decide as this controller (default: upstream's "
                             "jobset.sigs.k8s.io/jobset-controller)")
    decide.add_argument("--gang-api-version", default="",
                        help=f"gang scheduling API of gang JobSets: {GANG_API_VERSIONS}")
    decide.add_argument("--gang-target", default="", help=f"gang target: {GANG_TARGETS}")
    decide.add_argument("--server", type=server_target,
                        help="ask a running decider at HOST:PORT instead")
    decide.add_argument("-o", "--output", choices=("json", "yaml"),
                        help="print the whole plan as JSON or YAML (default: a table of the "
                             "actions and the explanation)")
    decide.set_defaults(func=cmd_decide)
