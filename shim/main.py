"""`decider-shim`: the thin operator's entry point.

Whatever stops it from starting (no kubeconfig, an API server it cannot reach or that refuses
its credentials, a TLS file it cannot read, caches that never sync) is one line naming the
problem on stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError as Urllib3Error

import decider_telemetry as telemetry
from decider_client import DeciderClient
from decider_telemetry import Telemetry
from shim import decider_channel, kubeconfig
from shim.config import Config
from shim.controller import Shim
from shim.flags import parse_args
from shim.health import Health, HealthServer
from shim.kube import Kube
from shim.local_decider import LocalDecider
from shim.ratelimit import TokenBucket

# --decider-address value that runs a decider of the shim's own (shim/local_decider.py).
LOCAL = "local"
EXIT_STARTUP = 2

log = logging.getLogger("shim")


class StartupError(Exception):
    """The shim cannot start; the message names the problem on one line."""


def api_client(cfg: Config) -> client.ApiClient:
    """The API client of the kubeconfig the flags select (shim/kubeconfig.py)."""
    try:
        configuration = kubeconfig.load(cfg.kubeconfig, cfg.context)
    except kubeconfig.KubeconfigError as exc:
        raise StartupError(str(exc)) from None
    connection_settings(configuration, cfg)
    api = client.ApiClient(configuration)
    api.user_agent = f"decider-shim/{cfg.identity}"
    return api


def connection_settings(configuration: client.Configuration, cfg: Config) -> None:
    """How the shim's connections to the API server are made (before the ApiClient is)."""
    # Parallel writes and one watch per kind share this pool; the default (5 x CPUs) is small.
    configuration.connection_pool_maxsize = max(
        cfg.api_qps_pool, cfg.max_parallel_writes + len(cfg.owned_kinds) + 4
    )
    # TCP keepalive with client-go's timings (the client's own option: idle 30 s, then probes
    # 15 s apart, 9 of them): a watch whose connection died without a FIN or RST (a NAT or a
    # load balancer that forgot it) fails within ~3 minutes however quiet its kind, where its
    # read timeout alone waits out the watch's 5-10 minutes.
    configuration.keep_alive = True


def check_api_server(kube: Kube) -> None:
    """One request before anything else, so an unreachable API server or refused credentials
    are said at once and plainly."""
    host = kube.api.configuration.host
    try:
        kube.request("GET", "/version")
    except ApiException as exc:
        if exc.status in (401, 403):
            raise StartupError(f"the API server at {host} refused the credentials: "
                               f"{exc.status} {exc.reason}") from None
        raise StartupError(f"the API server at {host} answered {exc.status} {exc.reason}") \
            from None
    except (Urllib3Error, OSError) as exc:
        raise StartupError(f"cannot reach the API server at {host}: "
                           f"{kubeconfig.one_line(exc)}") from None


def decider_client(cfg: Config) -> DeciderClient:
    try:
        return decider_channel.client(cfg)
    except decider_channel.ChannelError as exc:
        raise StartupError(str(exc)) from None


def build_kube(cfg: Config, api: client.ApiClient) -> Kube:
    """The API client the flags describe: rate limit and Retry-After bounds."""
    limiter = TokenBucket(cfg.kube_api_qps, cfg.kube_api_burst) if cfg.kube_api_qps > 0 else None
    return Kube(
        api,
        limiter=limiter,
        max_retries=cfg.kube_api_max_retries,
        max_retry_wait=cfg.kube_api_max_retry_wait,
    )


def build(cfg: Config, tel: Telemetry | None = None,
          api: client.ApiClient | None = None) -> Shim:
    decider = decider_client(cfg)
    refused = decider_channel.refused_options(cfg, decider)
    if refused is not None:
        raise StartupError(f"the decider refuses the shim's options: {refused} (see "
                           "--feature-gates, --scheduling-api-version, --gang-target)")
    kube = build_kube(cfg, api if api is not None else api_client(cfg))
    check_api_server(kube)
    try:
        return Shim(cfg, kube, decider, telemetry=tel)
    except ApiException as exc:
        raise StartupError(f"API discovery failed: {exc.status} {exc.reason}") from None
    except (Urllib3Error, OSError) as exc:
        raise StartupError(f"API discovery failed: {kubeconfig.one_line(exc)}") from None


def main(argv: Sequence[str] | None = None) -> int:
    cfg = parse_args(argv)
    level = getattr(logging, cfg.log_level.upper(), logging.INFO)
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if level > logging.DEBUG:
        # urllib3 warns of each of its own connection retries (three in a millisecond against a
        # closed port), in several lines each; what finally fails is the shim's to say, once.
        logging.getLogger("urllib3.connectionpool").setLevel(logging.ERROR)
    try:
        return _start(cfg)
    except StartupError as exc:
        print(f"decider-shim: {exc}", file=sys.stderr)
        return EXIT_STARTUP


def _start(cfg: Config) -> int:
    # The kubeconfig first: a missing one should not wait for a local decider to start.
    api = api_client(cfg)
    local = None
    if cfg.decider_address == LOCAL:
        local = LocalDecider()
        try:
            cfg.decider_address = local.start()
        except (RuntimeError, OSError) as exc:
            raise StartupError(f"--decider-address local: {exc}") from None
        log.info("started a local decider at %s", cfg.decider_address)
    try:
        return _run(cfg, api)
    finally:
        if local is not None:
            local.stop()


def _run(cfg: Config, api: client.ApiClient) -> int:
    try:
        # The metrics port listens where --host says, unless OTEL_EXPORTER_PROMETHEUS_HOST
        # names an address of its own.
        tel = telemetry.setup("decider-shim", metrics_port=cfg.metrics_port,
                              metrics_host=cfg.host)
    except telemetry.TelemetryConfigError as exc:
        raise StartupError(str(exc)) from None
    except OSError as exc:
        raise StartupError(f"--metrics-port {cfg.metrics_port}: {exc.strerror or exc}") from None
    try:
        shim = build(cfg, tel, api)
        if cfg.once:
            return shim.run_once()
        return _serve(cfg, shim)
    except TimeoutError as exc:
        # Caches that never sync: the warnings logged above say why (403: RBAC; 404: the
        # JobSet CRD is not installed).
        raise StartupError(f"{exc} (see the warnings above)") from None
    finally:
        tel.shutdown()


def _serve(cfg: Config, shim: Shim) -> int:
    def on_signal(signum: int, frame: FrameType | None) -> None:
        log.info("signal %d: shutting down", signum)
        shim.stop()

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
    health = None
    if cfg.healthz_port:
        try:
            health = HealthServer(Health(shim, decider_channel.health_check(cfg)),
                                  cfg.healthz_port, cfg.host).start()
        except OSError as exc:
            raise StartupError(f"--healthz-port {cfg.healthz_port} on --host {cfg.host}: "
                               f"{exc.strerror or exc}") from None
    log.info(
        "decider-shim %s: controller %s, decider %s, namespaces %s, API %s",
        cfg.identity,
        cfg.controller_name,
        cfg.decider_address,
        ",".join(cfg.namespaces or ["(all)"]),
        f"{cfg.kube_api_qps:g} QPS, burst {cfg.kube_api_burst}"
        if cfg.kube_api_qps > 0
        else "not rate-limited",
    )
    try:
        return shim.run()
    finally:
        if health is not None:
            health.stop()


if __name__ == "__main__":
    sys.exit(main())
