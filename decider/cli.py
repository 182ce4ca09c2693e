"""`decider serve | decide | simulate | validate | gang | podsets`: the project's stable
command-line surface.

Exit codes: 0 success (validate: valid), 2 bad input or an invalid object (the message or the
JSON on stdout names the field), 1 a server that could not be reached.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, NoReturn

from decider_client import observe, render
from decider_client.documents import load_objects, split_jobset, split_subject
from decider_client.errors import ObservationError

EXIT_INVALID = 2
EXIT_UNAVAILABLE = 1
# Listed for --help only: the decider checks the values, so a newer server's targets work too.
GANG_API_VERSIONS = "scheduling.k8s.io/v1alpha1|v1alpha2|v1beta1 (default: the newest)"
GANG_TARGETS = "kubernetes (default), scheduler-plugins, volcano"
GANG_KINDS = ("Workload", "PodGroup")


class UsageError(Exception):
    """Bad input: reported on one line, exit code 2."""


def _fail(message: str, code: int = EXIT_INVALID) -> NoReturn:
    print(f"decider: {message}", file=sys.stderr)
    sys.exit(code)


def _read(path: str) -> str:
    try:
        if path == "-":
            return sys.stdin.read()
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not UTF-8 text") from None


def parse_gates(text: str | None) -> dict[str, bool]:
    """`RestartJob=true,ElasticJobSet=false` -> {"RestartJob": True, "ElasticJobSet": False}."""
    gates: dict[str, bool] = {}
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        name, sep, value = item.partition("=")
        if not sep or not name.strip() or value.strip().lower() not in ("true", "false"):
            raise UsageError(f"--feature-gates: {item!r} is not NAME=true|false")
        gates[name.strip()] = value.strip().lower() == "true"
    return gates


def parse_now(text: str | None) -> datetime:
    if not text:
        return datetime.now(UTC)
    try:
        t = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"--now: {text!r} is not an RFC 3339 time "
                         "(e.g. 2026-01-01T00:00:00Z)") from None
    if t.tzinfo is None:
        raise UsageError(f"--now: {text!r} has no time zone (add Z or an offset)")
    return t.astimezone(UTC)


def _call_remote(target: str, method: str, request: Any) -> Any:
    import grpc

    from decider_client import DeciderClient

    with DeciderClient(target, timeout=30.0) as client:
        try:
            return getattr(client, method)(request)
        except grpc.RpcError as exc:
            code = exc.code()
            if code == grpc.StatusCode.INVALID_ARGUMENT:
                raise UsageError(exc.details()) from None
            _fail(f"{target}: {code.name}: {exc.details()}", EXIT_UNAVAILABLE)


def _call_local(method: str, request: Any) -> Any:
    from decider import dispatch
    from decider.core.errors import InvalidInput, TooLarge
    from decider.limits import DEFAULT

    name = {"decide": "Decide", "validate": "Validate", "plan_gang": "PlanGang",
            "pod_sets": "PodSets", "simulate": "Simulate"}[method]
    try:
        return dispatch.answer_message(name, request, DEFAULT)
    except (InvalidInput, TooLarge) as exc:
        raise UsageError(dispatch.safe_text(str(exc))) from None


def _call(args: argparse.Namespace, method: str, request: Any) -> Any:
    """Ask the server named by --server, or decide in-process: one contract either way."""
    return _call_remote(args.server, method, request) if args.server else _call_local(
        method, request)


def cmd_decide(args: argparse.Namespace) -> int:
    objects = load_objects(_read(args.file), args.file)
    jobset, owned = split_jobset(objects, args.file)
    request = observe.build_decide_request(
        jobset, owned, parse_now(args.now), controller_name=args.controller_name,
        feature_gates=parse_gates(args.feature_gates), gang_api_version=args.gang_api_version,
        gang_target=args.gang_target)
    response = _call(args, "decide", request)
    sys.stdout.write(render.dumps(render.plan_to_dict(response), args.output))
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


def _read_pem(path: str, flag: str) -> bytes:
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise UsageError(f"{flag}: {path}: cannot read: {exc.strerror or exc}") from None
    if b"-----BEGIN" not in data:
        raise UsageError(f"{flag}: {path}: not a PEM file")
    return data


def server_config(args: argparse.Namespace) -> Any:
    """The `serve` flags as a ServerConfig; UsageError naming the flag for a bad value."""
    from decider.limits import Limits
    from decider.server import ServerConfig, TLSFiles

    tls = None
    if args.tls_cert_file or args.tls_key_file or args.tls_client_ca_file:
        if not (args.tls_cert_file and args.tls_key_file):
            raise UsageError("--tls-cert-file and --tls-key-file go together"
                             + (" (--tls-client-ca-file needs both)"
                                if args.tls_client_ca_file else ""))
        tls = TLSFiles(cert=_read_pem(args.tls_cert_file, "--tls-cert-file"),
                       key=_read_pem(args.tls_key_file, "--tls-key-file"),
                       client_ca=_read_pem(args.tls_client_ca_file, "--tls-client-ca-file")
                       if args.tls_client_ca_file else None)
    positive = {"--max-message-bytes": args.max_message_bytes,
                "--max-object-bytes": args.max_object_bytes,
                "--max-replicated-jobs": args.max_replicated_jobs,
                "--max-replicas": args.max_replicas, "--max-jobs": args.max_jobs,
                "--max-observed": args.max_observed, "--max-string-bytes": args.max_string_bytes,
                "--max-json-depth": args.max_json_depth, "--max-pending": args.max_pending,
                "--max-decision-seconds": args.max_decision_seconds}
    for flag, value in positive.items():
        if value <= 0:
            raise UsageError(f"{flag}: must be greater than 0, got {value}")
    for flag, value in {"--workers": args.workers, "--grace": args.grace,
                        "--drain-delay": args.drain_delay,
                        "--max-worker-memory-mb": args.max_worker_memory_mb}.items():
        if value < 0:
            raise UsageError(f"{flag}: must not be negative, got {value}")
    limits = Limits(max_message_bytes=args.max_message_bytes,
                    max_object_bytes=args.max_object_bytes,
                    max_replicated_jobs=args.max_replicated_jobs, max_replicas=args.max_replicas,
                    max_jobs=args.max_jobs, max_observed=args.max_observed,
                    max_string_bytes=args.max_string_bytes, max_json_depth=args.max_json_depth)
    return ServerConfig(address=f"{args.host}:{args.port}", limits=limits, workers=args.workers,
                        max_decision_seconds=args.max_decision_seconds,
                        max_pending=args.max_pending,
                        max_worker_memory_mb=args.max_worker_memory_mb, tls=tls,
                        reflection=args.reflection, drain_delay=args.drain_delay,
                        grace=args.grace, decision_log=args.decision_log)


def cmd_serve(args: argparse.Namespace) -> int:
    import logging

    from decider import server, telemetry

    config = server_config(args)
    if not 0 <= args.metrics_port <= 65535:
        raise UsageError(f"--metrics-port: {args.metrics_port} is not a port")
    logging.basicConfig(level=getattr(logging, args.log_level),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        otel = telemetry.setup("jobset-decider", metrics_port=args.metrics_port)
    except telemetry.TelemetryConfigError as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"--metrics-port: cannot serve metrics on {args.metrics_port}: "
                         f"{exc.strerror or exc}") from None

    def ready(port: int) -> None:
        # This line's last word is the address: shim/local_decider.py reads it.
        print(f"decider: serving decider.v1.Decider on {args.host}:{port}", flush=True)
        scheme = "plaintext" if config.tls is None else "TLS, client certificates required" \
            if config.tls.client_ca else "TLS"
        logging.getLogger("decider.server").info(
            "%s, %d decision workers, reflection %s, traces %s, metrics %s%s", scheme,
            config.worker_count, "on" if config.reflection else "off",
            "on" if otel.tracing else "off", "on" if otel.metering else "off",
            f", decision log {config.decision_log}" if config.decision_log else "")

    try:
        asyncio.run(server.serve(config, on_ready=ready, telemetry=otel))
    except OSError as exc:
        otel.shutdown()
        if config.decision_log and getattr(exc, "filename", None) == config.decision_log:
            raise UsageError(f"--decision-log: {exc.filename}: {exc.strerror}") from None
        raise UsageError(f"--port: {exc}") from None
    except RuntimeError as exc:
        otel.shutdown()
        text = str(exc).lower()
        if "bind" in text or "address" in text:
            raise UsageError(f"--port: cannot bind {config.address}: {exc}") from None
        if "ssl" in text or "tls" in text or "credentials" in text:
            raise UsageError(f"--tls-cert-file/--tls-key-file: {exc}") from None
        if "worker" in text:
            _fail(str(exc), EXIT_UNAVAILABLE)
        raise
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


def _serve_flags(serve: argparse.ArgumentParser) -> None:
    from decider.limits import DEFAULT as L
    from decider.server import (
        DEFAULT_DRAIN_DELAY_SECONDS,
        DEFAULT_GRACE_SECONDS,
        DEFAULT_MAX_DECISION_SECONDS,
        DEFAULT_MAX_PENDING,
    )

    serve.add_argument("--host", default="0.0.0.0", help="address to listen on (default 0.0.0.0)")
    serve.add_argument("--port", type=int, default=50051, help="port (default 50051; 0: any)")
    serve.add_argument("--workers", type=int, default=0,
                       help="decision worker processes (default 0: one per available core)")
    tls = serve.add_argument_group("TLS (default: plaintext)")
    tls.add_argument("--tls-cert-file", default="", help="server certificate chain (PEM)")
    tls.add_argument("--tls-key-file", default="", help="server private key (PEM)")
    tls.add_argument("--tls-client-ca-file", default="",
                     help="CA bundle (PEM): require and verify client certificates (mTLS)")
    serve.add_argument("--reflection", action=argparse.BooleanOptionalAction, default=True,
                       help="serve gRPC server reflection (default on; --no-reflection: off)")
    obs = serve.add_argument_group("observability (README: Observability; traces and metrics "
                                   "by the OTEL_* environment)")
    obs.add_argument("--decision-log", default="", metavar="FILE",
                     help="append one JSON line per decision to FILE ('-': standard output); "
                          "`decider replay FILE` decides them again")
    obs.add_argument("--metrics-port", type=int, default=0,
                     help="serve the metrics for Prometheus on this port (default 0: off)")
    obs.add_argument("--log-level", default="INFO",
                     choices=("DEBUG", "INFO", "WARNING", "ERROR"),
                     help="INFO logs every refused RPC; DEBUG every decision (default INFO)")
    life = serve.add_argument_group("shutdown")
    life.add_argument("--drain-delay", type=float, default=DEFAULT_DRAIN_DELAY_SECONDS,
                      help="on SIGTERM, seconds to keep accepting RPCs after health goes "
                           f"NOT_SERVING, so load balancers notice (default "
                           f"{DEFAULT_DRAIN_DELAY_SECONDS:g})")
    life.add_argument("--grace", type=float, default=DEFAULT_GRACE_SECONDS,
                      help="then, seconds in-flight RPCs get to finish (default "
                           f"{DEFAULT_GRACE_SECONDS:g})")
    lim = serve.add_argument_group("limits per request (README: Limits)")
    lim.add_argument("--max-decision-seconds", type=float, default=DEFAULT_MAX_DECISION_SECONDS,
                     help="work per request; longer is DEADLINE_EXCEEDED (default "
                          f"{DEFAULT_MAX_DECISION_SECONDS:g})")
    lim.add_argument("--max-message-bytes", type=int, default=L.max_message_bytes,
                     help=f"largest request or answer (default {L.max_message_bytes:,})")
    lim.add_argument("--max-object-bytes", type=int, default=L.max_object_bytes,
                     help=f"largest JobSet or object JSON (default {L.max_object_bytes:,})")
    lim.add_argument("--max-replicated-jobs", type=int, default=L.max_replicated_jobs,
                     help=f"replicated Jobs per JobSet (default {L.max_replicated_jobs:,})")
    lim.add_argument("--max-replicas", type=int, default=L.max_replicas,
                     help=f"replicas of one replicated Job (default {L.max_replicas:,})")
    lim.add_argument("--max-jobs", type=int, default=L.max_jobs,
                     help=f"Jobs of one JobSet in all (default {L.max_jobs:,})")
    lim.add_argument("--max-observed", type=int, default=L.max_observed,
                     help=f"observed Jobs, objects or pods, each (default {L.max_observed:,})")
    lim.add_argument("--max-string-bytes", type=int, default=L.max_string_bytes,
                     help=f"any one string of a typed field (default {L.max_string_bytes:,})")
    lim.add_argument("--max-json-depth", type=int, default=L.max_json_depth,
                     help=f"nesting of any JSON object (default {L.max_json_depth})")
    lim.add_argument("--max-pending", type=int, default=DEFAULT_MAX_PENDING,
                     help="requests waiting for a free worker; more is RESOURCE_EXHAUSTED "
                          f"(default {DEFAULT_MAX_PENDING})")
    lim.add_argument("--max-worker-memory-mb", type=int, default=0,
                     help="address space of each worker; a decision needing more is "
                          "RESOURCE_EXHAUSTED (default 0: the container's limit)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="decider", description="A stateless decider for Kubernetes JobSets.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    serve = sub.add_parser("serve", help="run the gRPC server")
    _serve_flags(serve)
    serve.set_defaults(func=cmd_serve)

    decide = sub.add_parser("decide", help="one reconcile pass: print the plan")
    decide.add_argument("-f", "--file", required=True,
                        help="YAML/JSON: one JobSet and the objects it owns ('-' for stdin)")
    decide.add_argument("--now", help="the time of the decision, RFC 3339 (default: now)")
    decide.add_argument("--feature-gates", help="e.g. RestartJob=true,ElasticJobSet=true")
    decide.add_argument("--controller-name", default="",
                        help="decide as this controller (default: upstream's "
                             "jobset.sigs.k8s.io/jobset-controller)")
    decide.add_argument("--gang-api-version", default="",
                        help=f"gang scheduling API of gang JobSets: {GANG_API_VERSIONS}")
    decide.add_argument("--gang-target", default="", help=f"gang target: {GANG_TARGETS}")
    decide.add_argument("--server", help="ask a running decider at HOST:PORT instead")
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
    validate.add_argument("--server", help="ask a running decider at HOST:PORT instead")
    validate.add_argument("-o", "--output", choices=("json", "yaml"), default="json")
    validate.set_defaults(func=cmd_validate)

    gang = sub.add_parser("gang", help="gang scheduling: the Workload/PodGroups a Job or JobSet "
                                       "needs, and its pod-template references")
    gang.add_argument("-f", "--file", required=True,
                      help="YAML/JSON: a batch/v1 Job or a JobSet, and any Workloads/PodGroups "
                           "that exist ('-' for stdin)")
    gang.add_argument("--api-version", default="", help=GANG_API_VERSIONS)
    gang.add_argument("--target", default="", help=GANG_TARGETS)
    gang.add_argument("--server", help="ask a running decider at HOST:PORT instead")
    gang.add_argument("-o", "--output", choices=("json", "yaml"), default="json")
    gang.set_defaults(func=cmd_gang)

    podsets = sub.add_parser("podsets", help="Kueue's pod sets of a Job or JobSet beside the "
                                             "gang minCount of each")
    podsets.add_argument("-f", "--file", required=True,
                         help="YAML/JSON: a batch/v1 Job or a JobSet ('-' for stdin)")
    podsets.add_argument("--api-version", default="", help=GANG_API_VERSIONS)
    podsets.add_argument("--server", help="ask a running decider at HOST:PORT instead")
    podsets.add_argument("-o", "--output", choices=("json", "yaml"), default="json")
    podsets.set_defaults(func=cmd_podsets)

    replay = sub.add_parser("replay", help="decide every decision-log line again; print those "
                                           "whose answer differs (exit 1 if any)")
    replay.add_argument("file", help="a file written by `decider serve --decision-log` "
                                     "('-' for stdin)")
    replay.set_defaults(func=cmd_replay)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
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
