"""The shim's command line: each flag with its environment fallback, checked as a whole and
turned into a Config (shim/config.py)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence

from decider_api.version import VersionAction
from shim.config import (
    COMPOSITE_WORKLOAD_API_VERSION,
    DEFAULT_CONTROLLER_NAME,
    DEFAULT_GANG_TARGET,
    DEFAULT_SCHEDULING_API_VERSION,
    GANG_OF_GANGS_GATE,
    GANG_TARGETS,
    Config,
    parse_feature_gates,
)
from shim.flag_values import env_boolean, number, port
from shim.ratelimit import DEFAULT_BURST, DEFAULT_MAX_RETRIES, DEFAULT_MAX_RETRY_WAIT, DEFAULT_QPS

IN_CLUSTER_NAMESPACE_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
_LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def default_lease_namespace(env: Mapping[str, str]) -> str:
    if env.get("POD_NAMESPACE"):
        return env["POD_NAMESPACE"]
    try:
        with open(IN_CLUSTER_NAMESPACE_FILE) as f:
            return f.read().strip() or "default"
    except OSError:
        return "default"


def build_parser(env: Mapping[str, str]) -> argparse.ArgumentParser:
    e = env.get
    p = argparse.ArgumentParser(
        prog="decider-shim",
        description="Watch JobSets managed by this controller, ask the decider, apply the plan.",
    )
    p.add_argument(
        "--kubeconfig",
        default=e("KUBECONFIG", ""),
        help="kubeconfig file (env KUBECONFIG); empty: in-cluster config, else ~/.kube/config",
    )
    p.add_argument("--context", default=e("SHIM_KUBE_CONTEXT", ""), help="kubeconfig context")
    p.add_argument(
        "--decider-address",
        default=e("DECIDER_ADDRESS", "local"),
        help="gRPC target of the decider (env DECIDER_ADDRESS); 'local' (the default) runs "
        "one as a child process on a loopback port",
    )
    p.add_argument(
        "--decider-timeout",
        type=number(float, above=0, env="DECIDER_TIMEOUT"),
        default=e("DECIDER_TIMEOUT", "5"),
        help="deadline of one Decide call, seconds (env DECIDER_TIMEOUT)",
    )
    p.add_argument(
        "--decider-tls",
        action=argparse.BooleanOptionalAction,
        default=env_boolean(p, env, "DECIDER_TLS", False),
        help="use TLS to the decider (env DECIDER_TLS)",
    )
    p.add_argument("--decider-ca-file", default=e("DECIDER_CA_FILE", ""), help="CA bundle (PEM)")
    p.add_argument(
        "--decider-cert-file", default=e("DECIDER_CERT_FILE", ""), help="client certificate (mTLS)"
    )
    p.add_argument("--decider-key-file", default=e("DECIDER_KEY_FILE", ""), help="client key")
    p.add_argument(
        "--decider-server-name",
        default=e("DECIDER_SERVER_NAME", ""),
        help="TLS server name override",
    )
    p.add_argument(
        "--controller-name",
        default=e("SHIM_CONTROLLER_NAME", DEFAULT_CONTROLLER_NAME),
        help="spec.managedBy value of the JobSets this shim reconciles (env SHIM_CONTROLLER_NAME)",
    )
    p.add_argument(
        "--namespaces",
        default=e("SHIM_NAMESPACES", ""),
        help="comma-separated namespaces to watch; empty: all (env SHIM_NAMESPACES)",
    )
    p.add_argument(
        "--feature-gates",
        default=e("SHIM_FEATURE_GATES", ""),
        help="decider feature gates, e.g. RestartJob=true (env SHIM_FEATURE_GATES)",
    )
    p.add_argument(
        "--scheduling-api-version",
        default=e("SHIM_SCHEDULING_API_VERSION", DEFAULT_SCHEDULING_API_VERSION),
        help="gang scheduling API generation: the Workload/PodGroup version watched, and the "
        "rules Decide plans gang JobSets with (env SHIM_SCHEDULING_API_VERSION)",
    )
    p.add_argument(
        "--gang-target",
        default=e("SHIM_GANG_TARGET", DEFAULT_GANG_TARGET),
        choices=GANG_TARGETS,
        help="who consumes the gang objects: kubernetes (Workload/PodGroup of "
        "--scheduling-api-version), scheduler-plugins (PodGroup scheduling.x-k8s.io/v1alpha1) "
        "or volcano (PodGroup scheduling.volcano.sh/v1beta1) (env SHIM_GANG_TARGET)",
    )
    p.add_argument(
        "--kube-api-qps",
        type=number(float, env="SHIM_KUBE_API_QPS"),
        default=e("SHIM_KUBE_API_QPS", str(DEFAULT_QPS)),
        help="API requests per second (watches excepted), client-side; 0 or less: no limit "
        "(env SHIM_KUBE_API_QPS, default %(default)s as upstream JobSet's manager)",
    )
    p.add_argument(
        "--kube-api-burst",
        type=number(int, at_least=0, env="SHIM_KUBE_API_BURST"),
        default=e("SHIM_KUBE_API_BURST", str(DEFAULT_BURST)),
        help="API requests allowed at once above --kube-api-qps "
        "(env SHIM_KUBE_API_BURST, default %(default)s as upstream JobSet's manager)",
    )
    p.add_argument(
        "--kube-api-max-retries",
        type=number(int, at_least=0, env="SHIM_KUBE_API_MAX_RETRIES"),
        default=e("SHIM_KUBE_API_MAX_RETRIES", str(DEFAULT_MAX_RETRIES)),
        help="times a request answered 429 (or 5xx) with Retry-After is sent again after "
        "waiting (env SHIM_KUBE_API_MAX_RETRIES, default %(default)s)",
    )
    p.add_argument(
        "--kube-api-max-retry-wait",
        type=number(float, at_least=0, env="SHIM_KUBE_API_MAX_RETRY_WAIT"),
        default=e("SHIM_KUBE_API_MAX_RETRY_WAIT", str(DEFAULT_MAX_RETRY_WAIT)),
        help="longest Retry-After honoured, seconds (env SHIM_KUBE_API_MAX_RETRY_WAIT, "
        "default %(default)s)",
    )
    p.add_argument(
        "--min-requeue-after",
        type=number(float, at_least=0, env="SHIM_MIN_REQUEUE_AFTER"),
        default=e("SHIM_MIN_REQUEUE_AFTER", "1"),
        help="shortest wait between passes a plan's requeue_after may ask again and again, "
        "seconds: a shorter one is honoured once, then waits this long, doubling up to 60 s "
        "(env SHIM_MIN_REQUEUE_AFTER, default %(default)s)",
    )
    p.add_argument(
        "--owned-update-batch-period",
        # At most a minute: a mistyped 500 would leave a failed Job unanswered for minutes.
        type=number(float, at_least=0, at_most=60, env="SHIM_OWNED_UPDATE_BATCH_PERIOD"),
        default=e("SHIM_OWNED_UPDATE_BATCH_PERIOD", "0.5"),
        help="seconds an update of a Job, Service or gang object waits before its JobSet's "
        "pass, so that one pass reads a burst of them, as the Job controller batches pod "
        "updates; 0: a pass per update, at most 60 (env SHIM_OWNED_UPDATE_BATCH_PERIOD, "
        "default %(default)s)",
    )
    p.add_argument(
        "--workers",
        type=number(int, at_least=1, env="SHIM_WORKERS"),
        default=e("SHIM_WORKERS", "4"),
        help="JobSets reconciled at once (env SHIM_WORKERS, default %(default)s)",
    )
    p.add_argument(
        "--max-parallel-writes",
        type=number(int, at_least=1, env="SHIM_MAX_PARALLEL_WRITES"),
        default=e("SHIM_MAX_PARALLEL_WRITES", "16"),
        help="concurrent creates/deletes within one plan",
    )
    p.add_argument(
        "--leader-elect",
        action=argparse.BooleanOptionalAction,
        default=env_boolean(p, env, "SHIM_LEADER_ELECT", True),
        help="elect a leader with a Lease so that only one replica acts (env SHIM_LEADER_ELECT)",
    )
    p.add_argument(
        "--leader-elect-namespace",
        default=e("SHIM_LEADER_ELECT_NAMESPACE", "") or default_lease_namespace(env),
        help="namespace of the Lease (env SHIM_LEADER_ELECT_NAMESPACE; default: the pod's "
        "namespace (POD_NAMESPACE or the service account's), else default)",
    )
    p.add_argument(
        "--leader-elect-name",
        default=e("SHIM_LEADER_ELECT_NAME", "jobset-decider-shim"),
        help="name of the Lease (env SHIM_LEADER_ELECT_NAME, default %(default)s)",
    )
    p.add_argument(
        "--leader-elect-identity",
        default=e("POD_NAME", ""),
        help="holder identity; default hostname_pid (env POD_NAME)",
    )
    p.add_argument(
        "--leader-elect-lease-duration",
        type=number(float, above=0),
        default=15.0,
        help="seconds a standby waits after the last renewal before taking the Lease "
        "(default %(default)s, as client-go)",
    )
    p.add_argument(
        "--leader-elect-renew-deadline",
        type=number(float, above=0),
        default=10.0,
        help="seconds the leader keeps trying to renew before it stops writing and exits "
        "(default %(default)s, as client-go)",
    )
    p.add_argument(
        "--leader-elect-retry-period",
        type=number(float, above=0),
        default=2.0,
        help="seconds between tries to acquire or renew the Lease (default %(default)s)",
    )
    p.add_argument(
        "--once",
        action="store_true",
        help="one pass over every managed JobSet, then exit (0: all passes succeeded)",
    )
    p.add_argument(
        "--metrics-port",
        type=port(env="SHIM_METRICS_PORT"),
        default=e("SHIM_METRICS_PORT", "0"),
        help="serve the shim's metrics for Prometheus on this port (env SHIM_METRICS_PORT; "
        "default 0: off); traces and metrics are exported as the OTEL_* environment says",
    )
    p.add_argument(
        "--log-level",
        default=e("SHIM_LOG_LEVEL", "INFO"),
        help="DEBUG, INFO, WARNING or ERROR (env SHIM_LOG_LEVEL, default %(default)s)",
    )
    p.add_argument(
        "--healthz-port",
        type=port(env="SHIM_HEALTHZ_PORT"),
        default=e("SHIM_HEALTHZ_PORT", "0"),
        help="serve /healthz (liveness) and /readyz (readiness) over HTTP on this port "
        "(env SHIM_HEALTHZ_PORT; default 0: off)",
    )
    p.add_argument(
        "--host",
        default=e("SHIM_HOST", "0.0.0.0"),
        help="address the health and metrics ports listen on (env SHIM_HOST; default "
        "%(default)s: every address, IPv6 too); 127.0.0.1 keeps them to this machine",
    )
    p.add_argument("--version", action=VersionAction, prog="decider-shim")
    return p


def parse_args(argv: Sequence[str] | None, env: Mapping[str, str] | None = None) -> Config:
    env = os.environ if env is None else env
    parser = build_parser(env)
    args = parser.parse_args(argv)
    if args.gang_target not in GANG_TARGETS:
        # argparse checks choices on the command line only, not on an environment default.
        parser.error(
            f"--gang-target: invalid choice {args.gang_target!r} "
            f"(choose from {', '.join(GANG_TARGETS)})"
        )
    if args.kube_api_qps > 0 and args.kube_api_burst < 1:
        parser.error("--kube-api-burst must be at least 1 when --kube-api-qps is set")
    if args.log_level.upper() not in _LOG_LEVELS:
        parser.error(f"--log-level: {args.log_level!r} is not one of {', '.join(_LOG_LEVELS)}")
    if not (args.leader_elect_retry_period < args.leader_elect_renew_deadline
            < args.leader_elect_lease_duration):
        parser.error("--leader-elect-retry-period < --leader-elect-renew-deadline < "
                     "--leader-elect-lease-duration must hold, got "
                     f"{args.leader_elect_retry_period:g}, {args.leader_elect_renew_deadline:g}, "
                     f"{args.leader_elect_lease_duration:g}")
    try:
        feature_gates = parse_feature_gates(args.feature_gates)
    except ValueError as exc:
        parser.error(f"--feature-gates: {exc}")
    if (feature_gates.get(GANG_OF_GANGS_GATE) and args.gang_target == DEFAULT_GANG_TARGET
            and args.scheduling_api_version != COMPOSITE_WORKLOAD_API_VERSION):
        # The decider would refuse every tree it is asked for: say it once, at start.
        parser.error(f"--feature-gates {GANG_OF_GANGS_GATE}=true builds CompositePodGroup "
                     f"trees, which need --scheduling-api-version "
                     f"{COMPOSITE_WORKLOAD_API_VERSION} (got {args.scheduling_api_version})")
    namespaces = [n.strip() for n in args.namespaces.split(",") if n.strip()] or None
    return Config(
        kubeconfig=args.kubeconfig,
        context=args.context,
        decider_address=args.decider_address,
        decider_timeout=args.decider_timeout,
        decider_tls=args.decider_tls or bool(args.decider_ca_file or args.decider_cert_file),
        decider_ca_file=args.decider_ca_file,
        decider_cert_file=args.decider_cert_file,
        decider_key_file=args.decider_key_file,
        decider_server_name=args.decider_server_name,
        controller_name=args.controller_name,
        namespaces=namespaces,
        feature_gates=feature_gates,
        scheduling_api_version=args.scheduling_api_version,
        gang_target=args.gang_target,
        min_requeue_after=args.min_requeue_after,
        owned_update_batch_period=args.owned_update_batch_period,
        workers=args.workers,
        max_parallel_writes=args.max_parallel_writes,
        kube_api_qps=args.kube_api_qps,
        kube_api_burst=args.kube_api_burst,
        kube_api_max_retries=args.kube_api_max_retries,
        kube_api_max_retry_wait=args.kube_api_max_retry_wait,
        leader_elect=args.leader_elect,
        leader_elect_namespace=args.leader_elect_namespace,
        leader_elect_name=args.leader_elect_name,
        identity=args.leader_elect_identity,
        lease_duration=args.leader_elect_lease_duration,
        renew_deadline=args.leader_elect_renew_deadline,
        retry_period=args.leader_elect_retry_period,
        once=args.once,
        log_level=args.log_level,
        metrics_port=args.metrics_port,
        healthz_port=args.healthz_port,
        host=args.host.strip(),
    )
