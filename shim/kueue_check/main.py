"""`decider-kueue-check`: the decider-backed Kueue AdmissionCheck controller (docs/kueue.md).

Whatever stops it from starting (no kubeconfig, an API server it cannot reach, Kueue's or
JobSet's CRDs not served, a TLS file it cannot read, a bad flag) is one line on stderr and exit
status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import FrameType

from kubernetes import client

from decider_client import DeciderClient
from shim import decider_channel, kubeconfig
from shim.config import parse_feature_gates
from shim.kube import Kube
from shim.kube_errors import ResourceNotServed
from shim.kueue_check.controller import (
    DEFAULT_CONTROLLER_NAME,
    AdmissionCheckController,
    CheckConfig,
)

EXIT_STARTUP = 2
log = logging.getLogger("kueue-check")


def build_parser() -> argparse.ArgumentParser:
    env = os.environ
    p = argparse.ArgumentParser(
        prog="decider-kueue-check",
        description="Answer Kueue AdmissionChecks of controllerName --controller-name: each "
                    "JobSet's Workload is Ready when the decider finds the JobSet valid and "
                    "its pod sets equal the Workload's, Rejected when not, Retry while the "
                    "decider sheds load.")
    p.add_argument("--kubeconfig", default=env.get("KUBECONFIG", ""),
                   help="kubeconfig (default: in-cluster, else ~/.kube/config)")
    p.add_argument("--context", default="", help="kubeconfig context")
    p.add_argument("--decider-address", required=True,
                   help="the decider's gRPC address, host:port (a DNS name is round-robined)")
    p.add_argument("--decider-ca-file", default="", help="CA bundle: TLS to the decider")
    p.add_argument("--decider-cert-file", default="", help="client certificate (mutual TLS)")
    p.add_argument("--decider-key-file", default="", help="client key (mutual TLS)")
    p.add_argument("--decider-server-name", default="", help="TLS server name to expect")
    p.add_argument("--decider-timeout", type=float, default=10.0,
                   help="seconds per decider call, retries included (default 10)")
    p.add_argument("--controller-name", default=DEFAULT_CONTROLLER_NAME,
                   help=f"AdmissionCheck spec.controllerName answered "
                        f"(default {DEFAULT_CONTROLLER_NAME})")
    p.add_argument("--namespaces", default="",
                   help="comma-separated namespaces whose Workloads are watched (default all)")
    p.add_argument("--feature-gates", default="",
                   help="the cluster's JobSet feature gates, as the decider takes them")
    p.add_argument("--gang-api-version", default="",
                   help="scheduling API generation for PodSets' gang view (default the newest)")
    p.add_argument("--retry-after", type=int, default=30,
                   help="requeueAfterSeconds when the decider cannot answer and sent no "
                        "pushback (default 30)")
    p.add_argument("--workers", type=int, default=2, help="Workloads judged at once")
    p.add_argument("--healthz-port", type=int, default=8081,
                   help="HTTP /healthz and /readyz port (0: none)")
    return p


def parse(argv: Sequence[str] | None) -> tuple[argparse.Namespace, CheckConfig]:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        gates = parse_feature_gates(args.feature_gates)
    except ValueError as exc:
        parser.error(f"--feature-gates: {exc}")
    if args.retry_after < 0:
        parser.error("--retry-after: must be 0 or more seconds")
    if args.workers < 1:
        parser.error("--workers: must be at least 1")
    if args.decider_timeout <= 0:
        parser.error("--decider-timeout: must be more than 0 seconds")
    # No --decider-tls flag here: a CA, a certificate or a key file is what asks for TLS.
    args.decider_tls = bool(args.decider_ca_file or args.decider_cert_file
                            or args.decider_key_file)
    namespaces = [n.strip() for n in args.namespaces.split(",") if n.strip()] or None
    return args, CheckConfig(controller_name=args.controller_name, namespaces=namespaces,
                             feature_gates=gates, gang_api_version=args.gang_api_version,
                             decider_timeout=args.decider_timeout,
                             retry_after=args.retry_after, workers=args.workers)


class StartupError(Exception):
    pass


def api_client(args: argparse.Namespace) -> client.ApiClient:
    """The API client of the kubeconfig the flags select, found as the shim finds its own."""
    try:
        configuration = kubeconfig.load(args.kubeconfig, args.context)
    except kubeconfig.KubeconfigError as exc:
        raise StartupError(str(exc)) from None
    # TCP keepalive, as the shim's: a dead watch connection fails within minutes.
    configuration.keep_alive = True
    api = client.ApiClient(configuration)
    api.user_agent = "decider-kueue-check"
    return api


def decider(args: argparse.Namespace) -> DeciderClient:
    """The decider client the --decider-* flags describe, dialled as the shim dials its own."""
    try:
        return decider_channel.client(args)
    except decider_channel.ChannelError as exc:
        raise StartupError(str(exc)) from None


def serve_health(port: int, controller: AdmissionCheckController) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            synced = controller.checks.synced and controller.workloads.synced
            ok = controller.healthy if self.path == "/healthz" else (
                synced and controller.healthy) if self.path == "/readyz" else None
            code = 404 if ok is None else 200 if ok else 503
            body = b"ok\n" if code == 200 else b"not ok\n"
            self.send_response(code)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            return

    server = ThreadingHTTPServer(("", port), Handler)
    threading.Thread(target=server.serve_forever, name="healthz", daemon=True).start()
    return server


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: "
                                                   "%(message)s")
    args, cfg = parse(argv)
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        kube = Kube(api_client(args))
        controller = AdmissionCheckController(kube, decider(args), cfg)
        controller.start()
    except (StartupError, ResourceNotServed, RuntimeError) as exc:
        print(f"decider-kueue-check: {exc}", file=sys.stderr)
        return EXIT_STARTUP
    except Exception as exc:  # noqa: BLE001 - said on one line, as every start-up failure
        first = (str(exc).splitlines() or [""])[0]
        print(f"decider-kueue-check: {type(exc).__name__}: {first}", file=sys.stderr)
        return EXIT_STARTUP
    health = serve_health(args.healthz_port, controller) if args.healthz_port else None
    log.info("answering AdmissionChecks of controllerName %s", cfg.controller_name)
    stop.wait()
    controller.stop()
    if health is not None:
        health.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
