"""The informers a shim runs: its JobSets, what they own, gang objects, and (for in-place
restart) pods; built from the configuration, each delivering to the shim's handler."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from shim import indexes
from shim.config import Config
from shim.informer import Handler, Informer
from shim.kube import Kube
from shim.owned import BY_NAME_KINDS

log = logging.getLogger("shim.controller")

JOBSET_API_VERSION = "jobset.x-k8s.io/v1alpha2"
JOBSET_NAME_LABEL = indexes.JOBSET_NAME_LABEL


@dataclass
class Watches:
    jobsets: Informer
    # Every informer, the JobSets' first.
    informers: list[Informer]
    # Workloads/PodGroups are cached whoever controls them: a pass also sends the ones named
    # like a JobSet's gang objects, so a foreign one reaches the decider.
    gang_informers: list[Informer]
    pods: Informer | None
    # The Service and PVC informers by kind (those the cluster serves): their caches hold every
    # Service/PVC of the watched namespaces, and a pass reads a JobSet's by name from them.
    by_name: dict[str, Informer]


def build(kube: Kube, config: Config, on_jobset: Handler, on_owned: Handler,
          on_gang: Handler, on_pod: Handler) -> Watches:
    # Each read a pass (or a handler) makes other than by namespace and name has its index:
    # JobSets by the gang names they may give, gang objects by the JobSet names they may carry,
    # pods by their JobSet (shim/indexes.py).
    windows = {"watch_timeout": config.watch_timeout, "read_margin": config.watch_read_margin}
    jobsets = Informer(kube, kube.resource(JOBSET_API_VERSION, "JobSet"), config.namespaces,
                       on_jobset, **windows,
                       indexers={indexes.JOBSET_NAMES: indexes.jobset_values})
    informers = [jobsets]
    gang_informers: list[Informer] = []
    by_name: dict[str, Informer] = {}
    gang_kinds = set(config.gang_kinds)
    for api_version, kind in config.owned_kinds:
        if not kube.served(api_version, kind):
            log.warning("%s %s is not served by this cluster: not watched", api_version, kind)
            continue
        gang = (api_version, kind) in gang_kinds
        informer = Informer(kube, kube.resource(api_version, kind), config.namespaces,
                            on_gang if gang else on_owned, **windows,
                            indexers={indexes.GANG_NAMES: indexes.gang_values} if gang else None)
        informers.append(informer)
        if gang:
            gang_informers.append(informer)
        elif api_version == "v1" and kind in BY_NAME_KINDS:
            by_name[kind] = informer
    pods = None
    if config.feature_gates.get("InPlaceRestart"):
        # Only in-place restart reads pods; watching every pod otherwise costs for nothing.
        pods = Informer(kube, kube.resource("v1", "Pod"), config.namespaces, on_pod,
                        label_selector=JOBSET_NAME_LABEL, **windows,
                        indexers={indexes.POD_JOBSET: indexes.pod_values})
        informers.append(pods)
    return Watches(jobsets, informers, gang_informers, pods, by_name)
