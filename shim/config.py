"""What a shim runs with (Config), and the gang kinds it watches for a generation and target.

The command line that fills it, flags with environment fallbacks, is shim/flags.py."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field

from shim.flag_values import boolean
from shim.ratelimit import DEFAULT_BURST, DEFAULT_MAX_RETRIES, DEFAULT_MAX_RETRY_WAIT, DEFAULT_QPS

DEFAULT_CONTROLLER_NAME = "jobset-decider.io/shim"
DEFAULT_SCHEDULING_API_VERSION = "scheduling.k8s.io/v1alpha2"
DEFAULT_GANG_TARGET = "kubernetes"
# Out-of-tree gang schedulers: the one PodGroup kind each consumes, whatever the generation.
# The decider has a registry of targets, but the shim must know what to watch for each one,
# so a target the shim does not know is refused at start rather than never observed.
_TARGET_PODGROUPS: dict[str, str] = {
    "scheduler-plugins": "scheduling.x-k8s.io/v1alpha1",
    "volcano": "scheduling.volcano.sh/v1beta1",
}
GANG_TARGETS: tuple[str, ...] = (DEFAULT_GANG_TARGET, *_TARGET_PODGROUPS)
# JobSetGangOfGangs (KEP-969): the tree lives in a v1beta1 Workload; its inner nodes are
# CompositePodGroup objects, which only scheduling.k8s.io/v1alpha3 serves.
GANG_OF_GANGS_GATE = "JobSetGangOfGangs"
COMPOSITE_WORKLOAD_API_VERSION = "scheduling.k8s.io/v1beta1"
COMPOSITE_API_VERSION = "scheduling.k8s.io/v1alpha3"
_CHILD_KINDS: tuple[tuple[str, str], ...] = (
    ("batch/v1", "Job"),
    ("v1", "Service"),
    ("v1", "PersistentVolumeClaim"),
)


def gang_kinds(
    scheduling_api_version: str = DEFAULT_SCHEDULING_API_VERSION,
    target: str = DEFAULT_GANG_TARGET,
    gang_of_gangs: bool = False,
) -> tuple[tuple[str, str], ...]:
    """The (apiVersion, kind) of the gang objects Decide plans for this version and target.

    They must be the kinds the shim watches: an object the shim creates but never observes
    would be planned again on every pass. `gang_of_gangs` (the JobSetGangOfGangs gate) adds
    the CompositePodGroups of a v1beta1 Workload's tree, which are v1alpha3 objects.
    """
    if target in _TARGET_PODGROUPS:
        return ((_TARGET_PODGROUPS[target], "PodGroup"),)
    if target != DEFAULT_GANG_TARGET:
        raise ValueError(f"gang target {target!r}: expected one of {', '.join(GANG_TARGETS)}")
    if scheduling_api_version == "scheduling.k8s.io/v1alpha1":
        # 1.35: the pod groups are embedded in the Workload; there is no PodGroup kind.
        return ((scheduling_api_version, "Workload"),)
    kinds = ((scheduling_api_version, "Workload"), (scheduling_api_version, "PodGroup"))
    if gang_of_gangs and scheduling_api_version == COMPOSITE_WORKLOAD_API_VERSION:
        kinds = (*kinds, (COMPOSITE_API_VERSION, "CompositePodGroup"))
    return kinds


DEFAULT_GANG_KINDS = gang_kinds()
DEFAULT_OWNED_KINDS: tuple[tuple[str, str], ...] = (*_CHILD_KINDS, *DEFAULT_GANG_KINDS)


@dataclass
class Config:
    kubeconfig: str = ""
    context: str = ""
    decider_address: str = "local"
    decider_timeout: float = 5.0
    decider_tls: bool = False
    decider_ca_file: str = ""
    decider_cert_file: str = ""
    decider_key_file: str = ""
    decider_server_name: str = ""
    controller_name: str = DEFAULT_CONTROLLER_NAME
    namespaces: list[str] | None = None
    feature_gates: dict[str, bool] = field(default_factory=dict)
    # Passed to Decide as Options.gang_api_version / gang_target: the decider's own default
    # (the newest generation) may differ from what this cluster serves and the shim watches.
    scheduling_api_version: str = DEFAULT_SCHEDULING_API_VERSION
    gang_target: str = DEFAULT_GANG_TARGET
    # Empty: the child kinds plus gang_kinds(scheduling_api_version, gang_target).
    owned_kinds: tuple[tuple[str, str], ...] = ()
    workers: int = 4
    max_parallel_writes: int = 16
    leader_elect: bool = True
    leader_elect_namespace: str = "default"
    leader_elect_name: str = "jobset-decider-shim"
    identity: str = ""
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    backoff_base: float = 0.005
    backoff_max: float = 300.0
    # A plan the guard refused, or a decision the decider refused (INVALID_ARGUMENT, ...): the
    # same input would get the same answer, so the retry waits minutes, not milliseconds. A
    # change to the JobSet or its objects still runs a pass at once.
    refusal_backoff_base: float = 30.0
    refusal_backoff_max: float = 600.0
    # A plan's requeue below this floor is honoured once; asked again and again it waits the
    # floor, doubling up to the cap (shim/workqueue.py).
    min_requeue_after: float = 1.0
    max_requeue_after: float = 60.0
    # An update of an object a JobSet owns wakes its JobSet this much later, so one pass reads
    # a burst of them (a Job's status moves 3-4 times as its pods end; 5 Jobs end together).
    # Creates and deletes, JobSet events, and updates a pass awaits wake it at once.
    owned_update_batch_period: float = 0.5
    # A watch's timeoutSeconds, drawn from this range (client-go's 5-10 min), and how long past
    # it a silent watch is taken for a dead connection (shim/informer.py).
    watch_timeout: tuple[int, int] = (300, 600)
    watch_read_margin: float = 30.0
    cache_sync_timeout: float = 120.0
    api_qps_pool: int = 32
    # Client-side rate limit of API requests (watches excepted), upstream JobSet's manager
    # defaults (500/500, shim/ratelimit.py); qps <= 0 turns it off. Throttled answers (429, or
    # 5xx with Retry-After) are waited out and sent again up to kube_api_max_retries times,
    # each wait at most kube_api_max_retry_wait.
    kube_api_qps: float = DEFAULT_QPS
    kube_api_burst: int = DEFAULT_BURST
    kube_api_max_retries: int = DEFAULT_MAX_RETRIES
    kube_api_max_retry_wait: float = DEFAULT_MAX_RETRY_WAIT
    once: bool = False
    log_level: str = "INFO"
    # Prometheus scrape port for the shim's metrics (0: off); traces and metrics also go where
    # the OTEL_* environment says.
    metrics_port: int = 0
    # 0: no health endpoint (shim/health.py).
    healthz_port: int = 0
    # The address the shim's HTTP ports (health, metrics) listen on; the wildcard is every
    # address, IPv6 as well as IPv4.
    host: str = "0.0.0.0"

    def __post_init__(self) -> None:
        if not self.identity:
            self.identity = f"{socket.gethostname()}_{os.getpid()}"
        if not self.owned_kinds:
            self.owned_kinds = (*_CHILD_KINDS, *self.gang_kinds)

    @property
    def gang_kinds(self) -> tuple[tuple[str, str], ...]:
        return gang_kinds(self.scheduling_api_version, self.gang_target,
                          self.feature_gates.get(GANG_OF_GANGS_GATE, False))


def parse_feature_gates(text: str) -> dict[str, bool]:
    """`A=true,B=false` as Kubernetes components take it."""
    gates: dict[str, bool] = {}
    for item in filter(None, (p.strip() for p in text.split(","))):
        name, _, value = item.partition("=")
        if not value:
            raise ValueError(f"feature gate {item!r} needs =true or =false")
        try:
            gates[name.strip()] = boolean(value)
        except ValueError as exc:
            raise ValueError(f"feature gate {name.strip()!r}: {exc}") from None
    return gates
