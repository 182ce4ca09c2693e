"""`decider serve`: its flags, and the ServerConfig (and webhook certificate) they describe.

Kept apart from decider/cli/main.py, which reads files and prints plans: this part binds ports,
reads certificates and may talk to the Kubernetes API (--webhook-self-signed).
"""

from __future__ import annotations

import argparse
import asyncio
import math
import sys
from typing import Any

from decider.cli.common import EXIT_UNAVAILABLE, UsageError, fail, parse_gates
from decider_api.pem import read_pem


def _read_pem(path: str, flag: str) -> bytes:
    try:
        return read_pem(path)
    except ValueError as exc:
        raise UsageError(f"{flag}: {path}: {exc}") from None


_C_INT_MAX = 2**31 - 1


def _finite(flag: str, value: float) -> None:
    # argparse's float() takes "nan" and "inf": a nan deadline never compares as passed, and an
    # infinite drain never ends.
    if not math.isfinite(value):
        raise UsageError(f"{flag}: must be a finite number, got {value}")


def _port(flag: str, value: int) -> None:
    # gRPC takes any number and wraps it: --port 99999 served on 34463.
    if not 0 <= value <= 65535:
        raise UsageError(f"{flag}: {value} is not a port (0..65535)")


def server_config(args: argparse.Namespace) -> Any:
    """The `serve` flags as a ServerConfig; UsageError naming the flag for a bad value."""
    from decider.contract.limits import Limits
    from decider.service.server import ServerConfig
    from decider.service.tls_files import TLSFileError, TLSFiles

    tls = None
    if args.tls_cert_file or args.tls_key_file or args.tls_client_ca_file:
        if not (args.tls_cert_file and args.tls_key_file):
            raise UsageError("--tls-cert-file and --tls-key-file go together"
                             + (" (--tls-client-ca-file needs both)"
                                if args.tls_client_ca_file else ""))
        for flag, path in (("--tls-cert-file", args.tls_cert_file),
                           ("--tls-key-file", args.tls_key_file),
                           ("--tls-client-ca-file", args.tls_client_ca_file)):
            if path:
                _read_pem(path, flag)
        # The paths, not their bytes: the server reads them again when they change.
        tls = TLSFiles(cert_file=args.tls_cert_file, key_file=args.tls_key_file,
                       client_ca_file=args.tls_client_ca_file)
        try:
            tls.paths().load()
        except TLSFileError as exc:
            raise UsageError(f"--tls-cert-file/--tls-key-file/--tls-client-ca-file: "
                             f"{exc}") from None
    positive = {"--max-message-bytes": args.max_message_bytes,
                "--max-object-bytes": args.max_object_bytes,
                "--max-replicated-jobs": args.max_replicated_jobs,
                "--max-replicas": args.max_replicas, "--max-jobs": args.max_jobs,
                "--max-observed": args.max_observed, "--max-string-bytes": args.max_string_bytes,
                "--max-json-depth": args.max_json_depth, "--max-pending": args.max_pending,
                "--max-inflight-bytes": args.max_inflight_bytes,
                "--max-decision-seconds": args.max_decision_seconds}
    for flag, value in positive.items():
        _finite(flag, value)
        if value <= 0:
            raise UsageError(f"{flag}: must be greater than 0, got {value}")
    for flag, value in {"--workers": args.workers, "--grace": args.grace,
                        "--drain-delay": args.drain_delay,
                        "--max-connection-age": args.max_connection_age,
                        "--max-worker-memory-mb": args.max_worker_memory_mb,
                        "--kill-grace": args.kill_grace}.items():
        _finite(flag, value)
        if value < 0:
            raise UsageError(f"{flag}: must not be negative, got {value}")
    # gRPC takes these as C ints (milliseconds for the age), the kernel's address-space limit
    # as bytes in 64 bits: a larger value was a traceback when the server or a worker started.
    for flag, value, most in (("--max-message-bytes", args.max_message_bytes, _C_INT_MAX),
                              ("--max-connection-age", args.max_connection_age,
                               _C_INT_MAX // 1000),
                              ("--max-worker-memory-mb", args.max_worker_memory_mb,
                               (2**63 - 1) >> 20)):
        if value > most:
            raise UsageError(f"{flag}: must be at most {most:,}, got {value:,}")
    if args.max_inflight_bytes < args.max_message_bytes:
        # Else the largest request the server takes could never be held.
        raise UsageError(f"--max-inflight-bytes: must be at least --max-message-bytes "
                         f"({args.max_message_bytes:,}), got {args.max_inflight_bytes:,}")
    _port("--port", args.port)
    _port("--metrics-port", args.metrics_port)
    webhook = webhook_config(args) if args.webhook_port is not None else None
    limits = Limits(max_message_bytes=args.max_message_bytes,
                    max_object_bytes=args.max_object_bytes,
                    max_replicated_jobs=args.max_replicated_jobs, max_replicas=args.max_replicas,
                    max_jobs=args.max_jobs, max_observed=args.max_observed,
                    max_string_bytes=args.max_string_bytes, max_json_depth=args.max_json_depth)
    return ServerConfig(address=f"{args.host}:{args.port}", limits=limits, workers=args.workers,
                        max_decision_seconds=args.max_decision_seconds,
                        kill_grace=args.kill_grace, max_pending=args.max_pending,
                        max_inflight_bytes=args.max_inflight_bytes,
                        max_worker_memory_mb=args.max_worker_memory_mb, tls=tls,
                        reflection=args.reflection, drain_delay=args.drain_delay,
                        grace=args.grace, decision_log=args.decision_log, webhook=webhook,
                        max_connection_age=args.max_connection_age)


def webhook_config(args: argparse.Namespace) -> Any:
    """The --webhook-* flags as a WebhookConfig; certificate files are checked here (a
    self-signed pair is made later, at start, through the API)."""
    from decider.core.constants import GATE_DEFAULTS
    from decider.webhook.server import WebhookConfig, tls_context

    _port("--webhook-port", args.webhook_port)
    gates = parse_gates(args.webhook_feature_gates)
    unknown = sorted(set(gates) - set(GATE_DEFAULTS))
    if unknown:
        raise UsageError(f"--webhook-feature-gates: unknown feature gate {unknown[0]!r}; known "
                         "gates: " + ", ".join(sorted(GATE_DEFAULTS)))
    _finite("--webhook-timeout", args.webhook_timeout)
    if args.webhook_max_body_bytes <= 0 or args.webhook_timeout <= 0:
        raise UsageError("--webhook-max-body-bytes and --webhook-timeout must be greater than 0")
    cert, key = args.webhook_cert_file, args.webhook_key_file
    if args.webhook_self_signed:
        if cert or key:
            raise UsageError("--webhook-self-signed makes its own certificate: give it without "
                             "--webhook-cert-file/--webhook-key-file")
    elif not (cert and key):
        raise UsageError("--webhook-port needs --webhook-cert-file and --webhook-key-file "
                         "(the API server calls webhooks over HTTPS only), or "
                         "--webhook-self-signed")
    else:
        for flag, path in (("--webhook-cert-file", cert), ("--webhook-key-file", key)):
            _read_pem(path, flag)
        try:
            tls_context(cert, key)
        except (OSError, ValueError) as exc:
            raise UsageError(f"--webhook-cert-file/--webhook-key-file: cannot be used: "
                             f"{exc}") from None
    return WebhookConfig(port=args.webhook_port, cert_file=cert, key_file=key,
                         host=args.webhook_host or args.host, feature_gates=gates,
                         max_body_bytes=args.webhook_max_body_bytes,
                         timeout_seconds=args.webhook_timeout)


def self_signed_files(args: argparse.Namespace) -> tuple[str, str]:
    """--webhook-self-signed: the certificate kept in its Secret, the CA in the webhook
    configurations; the files the webhook serves. One line naming the failure otherwise."""
    from kubernetes import client, config
    from kubernetes.config.config_exception import ConfigException

    from decider.webhook import certs as webhook_certs

    namespace = args.webhook_namespace or webhook_certs.pod_namespace()
    if not namespace:
        raise UsageError("--webhook-self-signed: no namespace: give --webhook-namespace (or "
                         "POD_NAMESPACE)")
    configuration = client.Configuration()
    try:
        if args.kubeconfig:
            config.load_kube_config(config_file=args.kubeconfig,
                                    client_configuration=configuration)
        else:
            config.load_incluster_config(client_configuration=configuration)
    except (ConfigException, OSError, ValueError) as exc:
        raise UsageError(f"--webhook-self-signed: no Kubernetes credentials ("
                         f"{'--kubeconfig ' + args.kubeconfig if args.kubeconfig else 'in-cluster'}"
                         f"): {exc}") from None
    cfg = webhook_certs.SelfSigned(namespace=namespace, service=args.webhook_service,
                                   secret=args.webhook_secret,
                                   mutating=args.webhook_mutating_configuration,
                                   validating=args.webhook_validating_configuration)
    try:
        with client.ApiClient(configuration) as api:
            return webhook_certs.setup(api, cfg)
    except webhook_certs.CertError as exc:
        fail(f"--webhook-self-signed: {exc}", EXIT_UNAVAILABLE)
    except Exception as exc:  # noqa: BLE001 - urllib3's connection errors, one line each
        fail(f"--webhook-self-signed: cannot reach the API server at {configuration.host}: "
              f"{_first_line(exc)}", EXIT_UNAVAILABLE)


def _first_line(exc: BaseException) -> str:
    reason = getattr(exc, "reason", None)
    text = str(reason or exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def cmd_serve(args: argparse.Namespace) -> int:
    import logging

    import decider_telemetry as telemetry
    from decider.service import server

    config = server_config(args)
    logging.basicConfig(level=getattr(logging, args.log_level),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if config.webhook is not None and args.webhook_self_signed:
        import dataclasses

        cert, key = self_signed_files(args)
        config = dataclasses.replace(config, webhook=dataclasses.replace(
            config.webhook, cert_file=cert, key_file=key))
    try:
        # The metrics port listens where the gRPC port does (--host), unless
        # OTEL_EXPORTER_PROMETHEUS_HOST names an address of its own.
        otel = telemetry.setup("jobset-decider", metrics_port=args.metrics_port,
                               metrics_host=args.host)
    except telemetry.TelemetryConfigError as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"--metrics-port: cannot serve metrics on {args.host}:"
                         f"{args.metrics_port}: {exc.strerror or exc}") from None

    def ready(port: int) -> None:
        # This line's last word is the address: shim/local_decider.py reads it. With the
        # decision log on standard output it goes to standard error, so that the output stays
        # a log `decider replay` reads.
        print(f"decider: serving decider.v1.Decider on {args.host}:{port}", flush=True,
              file=sys.stderr if args.decision_log == "-" else sys.stdout)
        scheme = "plaintext" if config.tls is None else "TLS, client certificates required" \
            if config.tls.client_ca else "TLS"
        logging.getLogger("decider.server").info(
            "%s, %d decision workers, reflection %s, traces %s, metrics %s%s", scheme,
            config.worker_count, "on" if config.reflection else "off",
            "on" if otel.tracing else "off", "on" if otel.metering else "off",
            f", decision log {config.decision_log}" if config.decision_log else "")
        if config.webhook is not None:
            logging.getLogger("decider.webhook").info(
                "admission webhook on https://%s:%d (%s)", config.webhook.host,
                config.webhook.port, "self-signed" if args.webhook_self_signed
                else config.webhook.cert_file)

    try:
        with asyncio.Runner(loop_factory=server.new_event_loop) as runner:
            runner.run(server.serve(config, on_ready=ready, telemetry=otel))
    except OSError as exc:
        otel.shutdown()
        if config.decision_log and getattr(exc, "filename", None) == config.decision_log:
            raise UsageError(f"--decision-log: {exc.filename}: {exc.strerror}") from None
        raise UsageError(str(exc) if str(exc).startswith("--webhook-port")
                         else f"--port: {exc}") from None
    except RuntimeError as exc:
        otel.shutdown()
        text = str(exc).lower()
        if "bind" in text or "address" in text:
            raise UsageError(f"--port: cannot bind {config.address}: {exc}") from None
        if "ssl" in text or "tls" in text or "credentials" in text:
            raise UsageError(f"--tls-cert-file/--tls-key-file: {exc}") from None
        if "worker" in text:
            fail(str(exc), EXIT_UNAVAILABLE)
        raise
    return 0


def serve_flags(serve: argparse.ArgumentParser) -> None:
    from decider.contract.limits import DEFAULT as L
    from decider.service.pool import DEFAULT_KILL_GRACE_SECONDS
    from decider.service.server import (
        DEFAULT_DRAIN_DELAY_SECONDS,
        DEFAULT_GRACE_SECONDS,
        DEFAULT_MAX_CONNECTION_AGE_SECONDS,
        DEFAULT_MAX_DECISION_SECONDS,
        DEFAULT_MAX_INFLIGHT_BYTES,
        DEFAULT_MAX_PENDING,
    )

    serve.add_argument("--host", default="0.0.0.0",
                       help="address every port listens on: gRPC, --metrics-port and the "
                            "webhook's unless --webhook-host (default 0.0.0.0: every address, "
                            "IPv6 and IPv4)")
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
    life = serve.add_argument_group("shutdown")
    life.add_argument("--drain-delay", type=float, default=DEFAULT_DRAIN_DELAY_SECONDS,
                      help="on SIGTERM, seconds to keep accepting RPCs after health goes "
                           f"NOT_SERVING, so load balancers notice (default "
                           f"{DEFAULT_DRAIN_DELAY_SECONDS:g})")
    life.add_argument("--max-connection-age", type=float,
                      default=DEFAULT_MAX_CONNECTION_AGE_SECONDS,
                      help="seconds before a client connection is closed (calls in flight "
                           "finish), so clients balancing over a headless Service find new "
                           "replicas (default "
                           f"{DEFAULT_MAX_CONNECTION_AGE_SECONDS:g}; 0: never)")
    life.add_argument("--grace", type=float, default=DEFAULT_GRACE_SECONDS,
                      help="then, seconds in-flight RPCs get to finish (default "
                           f"{DEFAULT_GRACE_SECONDS:g})")
    _webhook_flags(serve)
    obs = serve.add_argument_group("observability (docs/observability.md; traces and metrics "
                                   "by the OTEL_* environment)")
    obs.add_argument("--decision-log", default="", metavar="FILE",
                     help="append one JSON line per decision to FILE ('-': standard output); "
                          "`decider replay FILE` decides them again")
    obs.add_argument("--metrics-port", type=int, default=0,
                     help="serve the metrics for Prometheus on this port, on --host (default 0: "
                          "off; docs/observability.md)")
    obs.add_argument("--log-level", default="INFO",
                     choices=("DEBUG", "INFO", "WARNING", "ERROR"),
                     help="INFO logs every refused RPC; DEBUG every decision (default INFO)")
    lim = serve.add_argument_group("limits per request (docs/serving.md, Limits)")
    lim.add_argument("--max-decision-seconds", type=float, default=DEFAULT_MAX_DECISION_SECONDS,
                     help="work per request; longer is DEADLINE_EXCEEDED (default "
                          f"{DEFAULT_MAX_DECISION_SECONDS:g})")
    lim.add_argument("--kill-grace", type=float, default=DEFAULT_KILL_GRACE_SECONDS,
                     help="seconds a worker may finish a request whose client deadline passed "
                          "or whose caller left (its answer dropped) before it is killed and "
                          f"replaced (default {DEFAULT_KILL_GRACE_SECONDS:g}; 0: at once)")
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
    lim.add_argument("--max-inflight-bytes", type=int, default=DEFAULT_MAX_INFLIGHT_BYTES,
                     help="request bytes held at once, waiting for a worker or with one; a "
                          "request past it is RESOURCE_EXHAUSTED with retry pushback (default "
                          f"{DEFAULT_MAX_INFLIGHT_BYTES:,}; at least --max-message-bytes)")
    lim.add_argument("--max-worker-memory-mb", type=int, default=0,
                     help="address space of each worker; a decision needing more is "
                          "RESOURCE_EXHAUSTED (default 0: the container's limit)")


def _webhook_flags(serve: argparse.ArgumentParser) -> None:
    from decider.webhook.server import DEFAULT_MAX_BODY_BYTES, DEFAULT_TIMEOUT_SECONDS

    hook = serve.add_argument_group(
        "admission webhook (HTTPS AdmissionReview at upstream's paths; default: off)")
    hook.add_argument("--webhook-port", type=int, default=None,
                      help="serve the JobSet mutating and validating webhooks on this port")
    hook.add_argument("--webhook-host", default="",
                      help="address the webhook listens on (default: --host)")
    hook.add_argument("--webhook-cert-file", default="",
                      help="serving certificate chain (PEM); re-read when it changes")
    hook.add_argument("--webhook-key-file", default="", help="its private key (PEM)")
    hook.add_argument("--webhook-feature-gates", default="",
                      help="gates admission decides with, e.g. RestartJob=true (as the shim's)")
    hook.add_argument("--webhook-max-body-bytes", type=int, default=DEFAULT_MAX_BODY_BYTES,
                      help=f"largest AdmissionReview; more is 413 (default "
                           f"{DEFAULT_MAX_BODY_BYTES:,})")
    hook.add_argument("--webhook-timeout", type=float, default=DEFAULT_TIMEOUT_SECONDS,
                      help="seconds one review may take, at most --max-decision-seconds, less "
                           "when the API server's ?timeout= says so (default "
                           f"{DEFAULT_TIMEOUT_SECONDS:g})")
    signed = serve.add_argument_group(
        "--webhook-self-signed: make the certificate at start, keep it in a Secret, and set "
        "the webhook configurations' caBundle through the Kubernetes API")
    signed.add_argument("--webhook-self-signed", action=argparse.BooleanOptionalAction,
                        default=False,
                        help="instead of --webhook-cert-file/--webhook-key-file (the last of "
                             "--webhook-self-signed and --no-webhook-self-signed wins)")
    signed.add_argument("--webhook-service", default="jobset-decider-webhook",
                        help="the webhook's Service, named in the certificate (default "
                             "%(default)s)")
    signed.add_argument("--webhook-namespace", default="",
                        help="its namespace (default: POD_NAMESPACE, else the service account's)")
    signed.add_argument("--webhook-secret", default="jobset-decider-webhook-cert",
                        help="Secret holding the certificate (default %(default)s)")
    signed.add_argument("--webhook-mutating-configuration", default="jobset-decider-mutating",
                        help="MutatingWebhookConfiguration to set caBundle on (default "
                             "%(default)s)")
    signed.add_argument("--webhook-validating-configuration",
                        default="jobset-decider-validating",
                        help="ValidatingWebhookConfiguration to set caBundle on (default "
                             "%(default)s)")
    signed.add_argument("--kubeconfig", default="",
                        help="credentials for it (default: the in-cluster service account)")


def add_arguments(serve: argparse.ArgumentParser) -> None:
    serve_flags(serve)
    serve.set_defaults(func=cmd_serve)
