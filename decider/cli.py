"""`decider serve | decide | simulate | validate | gang | podsets`: the project's stable
command-line surface.

Exit codes: 0 success (validate: valid), 2 bad input or an invalid object (the message or the
JSON on stdout names the field), 1 a server that could not be reached.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, NoReturn

from decider.cli_common import EXIT_INVALID, EXIT_UNAVAILABLE, UsageError, parse_gates
from decider.cli_common import fail as _fail
from decider.cli_common import warn as _warn
from decider.cli_serve import cmd_serve, serve_flags
from decider.core.times import parse_rfc3339
from decider_client import observe, render
from decider_client.documents import group_by_jobset, jobset_key, load_objects, split_subject
from decider_client.errors import ObservationError
from decider_client.version import version_line

# Listed for --help only: the decider checks the values, so a newer server's targets work too.
GANG_API_VERSIONS = "scheduling.k8s.io/v1alpha1|v1alpha2|v1beta1 (default: the newest)"
GANG_TARGETS = "kubernetes (default), scheduler-plugins, volcano"
GANG_KINDS = ("Workload", "PodGroup")


def _read(path: str) -> str:
    try:
        if path == "-":
            if sys.stdin is None:  # started with standard input closed (<&-)
                raise UsageError("-: there is no standard input to read (it is closed)")
            return sys.stdin.read()
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not UTF-8 text") from None


def parse_now(text: str | None) -> datetime:
    """--now, read as the decider reads the times of its input (RFC 3339, as Go's time.Parse):
    a shell variable left empty is refused rather than taken for the wall clock."""
    if text is None:
        return datetime.now(UTC)
    t = parse_rfc3339(text)
    if t is None:
        if parse_rfc3339(text + "Z") is not None:
            raise UsageError(f"--now: {text!r} has no time zone (add Z or an offset)")
        raise UsageError(f"--now: {text!r} is not an RFC 3339 time "
                         "(e.g. 2026-01-01T00:00:00Z)")
    try:
        return t.astimezone(UTC)
    except OverflowError:
        raise UsageError(f"--now: {text!r} is outside years 0001-9999 in UTC") from None


def _call_remote(target: str, method: str, request: Any, command: str | None = None) -> Any:
    import grpc

    from decider_client import DeciderClient

    with DeciderClient(target, timeout=30.0) as client:
        try:
            answer = getattr(client, method)(request)
        except grpc.RpcError as exc:
            code = exc.code()
            shed = any(key == "grpc-retry-pushback-ms" for key, _ in
                       (exc.trailing_metadata() or ()))  # type: ignore[attr-defined]
            # Too large is the input's fault, as in-process (exit 2); a server shedding load
            # says so with a retry pushback, and is "could not be served" (exit 1).
            if code == grpc.StatusCode.INVALID_ARGUMENT or (
                    code == grpc.StatusCode.RESOURCE_EXHAUSTED and not shed):
                raise UsageError(_flag_named(exc.details(), command)) from None
            _fail(f"{target}: {code.name}: {exc.details()}", EXIT_UNAVAILABLE)
        # A decider older than this CLI answers in its older contract: what it does not know is
        # unset in its answer, which reads as "absent". Said, so the difference from the
        # in-process answer is not taken for a fact about the input.
        gaps = client.contract_gaps(_RPC_NAME[method], request, timeout=5.0)
        if gaps:
            _warn(f"{target} serves an older contract than this client: {gaps}")
        return answer


_RPC_NAME = {"decide": "Decide", "validate": "Validate", "plan_gang": "PlanGang",
             "pod_sets": "PodSets", "simulate": "Simulate"}


def _call_local(method: str, request: Any, command: str | None = None) -> Any:
    from decider import dispatch
    from decider.core.errors import InvalidInput, TooLarge
    from decider.limits import DEFAULT

    try:
        return dispatch.answer_message(_RPC_NAME[method], request, DEFAULT)
    except (InvalidInput, TooLarge) as exc:
        raise UsageError(_flag_named(dispatch.safe_text(str(exc)), command)) from None


# Request fields a flag sets, by subcommand: `gang` and `podsets` spell theirs shorter.
_FLAG_OF_FIELD = {
    "options.feature_gates": {None: "--feature-gates"},
    "options.gang_target": {"gang": "--target", None: "--gang-target"},
    "options.gang_api_version": {"gang": "--api-version", "podsets": "--api-version",
                                 "validate": "--api-version", None: "--gang-api-version"},
}


def _flag_named(message: str, command: str | None = None) -> str:
    """The decider names request fields; where a flag set the field, name the flag too."""
    for field, flags in _FLAG_OF_FIELD.items():
        if message.startswith(field):
            return f"{flags.get(command) or flags[None]}: {message}"
    return message


def _server(text: str) -> str:
    """--server: a gRPC target; an empty one (an unset variable) would silently decide here, and
    gRPC wraps a port past 65535 into another one."""
    if not text.strip():
        raise argparse.ArgumentTypeError("empty: give HOST:PORT")
    host, sep, port = text.rpartition(":")
    if sep and port.isdigit() and not 0 < int(port) <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port (1..65535)")
    return text


def _call(args: argparse.Namespace, method: str, request: Any) -> Any:
    """Ask the server named by --server, or decide in-process: one contract either way."""
    return _call_remote(args.server, method, request, args.command) if args.server \
        else _call_local(method, request, args.command)


def cmd_decide(args: argparse.Namespace) -> int:
    objects = load_objects(_read(args.file), args.file)
    groups = group_by_jobset(objects, args.file)
    if args.name:
        wanted = args.name if "/" in args.name else None
        picked = [g for g in groups if jobset_key(g[0]) == wanted
                  or (wanted is None and jobset_key(g[0]).split("/", 1)[1] == args.name)]
        if len(picked) != 1:
            raise UsageError(f"--name: {'no' if not picked else 'more than one'} JobSet "
                             f"{args.name!r} in {args.file} (it holds "
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
            response = _call(args, "decide", request)
        except UsageError as exc:
            raise UsageError(f"{key}: {exc}" if len(groups) > 1 else str(exc)) from None
        plans[key] = render.plan_to_dict(response)
    # One JobSet: its plan, as always. Several: every plan, keyed by namespace/name.
    out = next(iter(plans.values())) if len(plans) == 1 else plans
    sys.stdout.write(render.dumps(out, args.output))
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from decider.v1 import decider_pb2 as pb

    objects = load_objects(_read(args.file), args.file)
    subject, others = split_subject(objects, args.file)
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
        old, _ = split_subject(load_objects(_read(args.old), args.old), args.old)
        request.old_object_json = json.dumps(old)
    response = _call(args, "validate", request)
    sys.stdout.write(render.dumps(render.validation_to_dict(response), args.output))
    return 0 if response.valid else EXIT_INVALID


def cmd_gang(args: argparse.Namespace) -> int:
    objects = load_objects(_read(args.file), args.file)
    subject, existing = split_subject(objects, args.file)
    request = observe.build_plan_gang_request(subject, existing, args.api_version, args.target)
    # Both paths go through the contract, so --server prints the same bytes as in-process.
    response = _call(args, "plan_gang", request)
    sys.stdout.write(render.dumps(render.gang_plan_to_dict(response), args.output))
    return 0


def cmd_podsets(args: argparse.Namespace) -> int:
    objects = load_objects(_read(args.file), args.file)
    subject, _ = split_subject(objects, args.file)
    request = observe.build_pod_sets_request(subject, args.api_version)
    response = _call(args, "pod_sets", request)
    sys.stdout.write(render.dumps(render.pod_sets_to_dict(response), args.output))
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    from decider.limits import DEFAULT
    from decider.replay import ReplayInputError, replay

    text = _read(args.file)
    replayed = skipped = differing = 0
    try:
        for outcome, ran in replay(text.splitlines(), DEFAULT):
            if not ran:
                skipped += 1
                continue
            replayed += 1
            if outcome.differences:
                differing += 1
                sys.stdout.write(json.dumps(outcome.to_dict(), ensure_ascii=False) + "\n")
    except ReplayInputError as exc:
        raise UsageError(f"{args.file}: {exc}") from None
    print(f"decider: replayed {replayed} decision(s), {differing} differ, {skipped} skipped "
          "(no request logged)", file=sys.stderr)
    return 1 if differing else 0


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        _fail(message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="decider", description="A stateless decider for Kubernetes JobSets.")
    parser.add_argument("--version", action="version", version=version_line("decider"))
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    serve = sub.add_parser("serve", help="run the gRPC server (and the admission webhook)")
    serve_flags(serve)
    serve.set_defaults(func=cmd_serve)

    decide = sub.add_parser("decide", help="one reconcile pass: print the plan")
    decide.add_argument("-f", "--file", required=True,
                        help="YAML/JSON: JobSets and the objects they own, as `kubectl get "
                             "jobset,jobs,svc -o yaml` prints them ('-' for stdin); several "
                             "JobSets print a plan each, keyed by namespace/name")
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
    decide.add_argument("--server", type=_server,
                        help="ask a running decider at HOST:PORT instead")
    decide.add_argument("-o", "--output", choices=("json", "yaml"), default="json")
    decide.set_defaults(func=cmd_decide)

    from decider.cli_simulate import add_simulate_parser

    add_simulate_parser(sub)

    validate = sub.add_parser("validate", help="admission: default and validate a JobSet, or "
                                               "check a Job update against the gang rules")
    validate.add_argument("-f", "--file", required=True,
                          help="the JobSet, or a batch/v1 Job and the PodGroups that exist "
                               "('-' for stdin)")
    validate.add_argument("--old", help="the stored JobSet or Job, to validate an update")
    validate.add_argument("--feature-gates", help="e.g. RestartJob=true")
    validate.add_argument("--api-version", default="",
                          help=f"gang rules for a Job: {GANG_API_VERSIONS}")
    validate.add_argument("--server", type=_server,
                          help="ask a running decider at HOST:PORT instead")
    validate.add_argument("-o", "--output", choices=("json", "yaml"), default="json")
    validate.set_defaults(func=cmd_validate)

    gang = sub.add_parser("gang", help="gang scheduling: the Workload/PodGroups a Job or JobSet "
                                       "needs, and its pod-template references")
    gang.add_argument("-f", "--file", required=True,
                      help="YAML/JSON: a batch/v1 Job or a JobSet, and any Workloads/PodGroups "
                           "that exist ('-' for stdin)")
    gang.add_argument("--api-version", default="", help=GANG_API_VERSIONS)
    gang.add_argument("--target", default="", help=GANG_TARGETS)
    gang.add_argument("--server", type=_server,
                      help="ask a running decider at HOST:PORT instead")
    gang.add_argument("-o", "--output", choices=("json", "yaml"), default="json")
    gang.set_defaults(func=cmd_gang)

    podsets = sub.add_parser("podsets", help="Kueue's pod sets of a Job or JobSet beside the "
                                             "gang minCount of each")
    podsets.add_argument("-f", "--file", required=True,
                         help="YAML/JSON: a batch/v1 Job or a JobSet ('-' for stdin)")
    podsets.add_argument("--api-version", default="", help=GANG_API_VERSIONS)
    podsets.add_argument("--server", type=_server,
                         help="ask a running decider at HOST:PORT instead")
    podsets.add_argument("-o", "--output", choices=("json", "yaml"), default="json")
    podsets.set_defaults(func=cmd_podsets)
    replay = sub.add_parser("replay", help="decide every decision-log line again; print those "
                                           "whose answer differs (exit 1 if any)")
    replay.add_argument("file", help="a file written by `decider serve --decision-log` "
                                     "('-' for stdin)")
    replay.set_defaults(func=cmd_replay)
    return parser


# Flags naming files: a path may be any bytes; every other value goes into the request.
_PATH_FLAGS = frozenset({"file", "old", "func"})


def _check_text(args: argparse.Namespace) -> None:
    """Values bound for the request are protobuf strings, which must be UTF-8: bytes that are
    not (Python keeps them as lone surrogates) are refused naming their flag, not a traceback
    when the request is built."""
    for dest, value in vars(args).items():
        if dest in _PATH_FLAGS or args.command == "serve":
            continue
        for item in value if isinstance(value, list) else [value]:
            # Simulation events are (kind, value, at, flag) tuples.
            flag, text = (item[3], item[1]) if isinstance(item, tuple) else \
                (f"--{dest.replace('_', '-')}", item)
            if isinstance(text, str):
                try:
                    text.encode("utf-8")
                except UnicodeEncodeError:
                    raise UsageError(f"{flag}: {text!r} is not valid UTF-8") from None


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        _check_text(args)
        return args.func(args)
    except (UsageError, ObservationError) as exc:
        _fail(str(exc))
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    # Run as decider.cli, not __main__: subcommand modules (cli_simulate) import this one, and a
    # second copy of it would have UsageError classes main() does not catch.
    from decider.cli import main as _main

    sys.exit(_main())
