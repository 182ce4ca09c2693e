"""What each control plane is made of: pinned versions, the wrapper modules that build them,
the feature gates and API versions it serves, and where its binaries are cached."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODULES = HERE / "modules"

# etcd as Kubernetes 1.37 pins it (build/dependencies.yaml: 3.7.0), at the newest patch of that
# minor on the module proxy; it serves 1.36 too (whose pin is 3.6.8: the client is older).
ETCD_VERSION = "v3.7.3"
# KWOK: simulated nodes and the pod lifecycle, run against our API server (never kwokctl).
KWOK_VERSION = "v0.8.0"


@dataclass(frozen=True)
class Release:
    """One Kubernetes release the tool builds and runs."""

    version: str
    # --feature-gates of all three components: the workload-aware scheduling generation.
    gates: tuple[str, ...]
    # --runtime-config: the scheduling.k8s.io versions the gang scenarios need.
    runtime_config: tuple[str, ...]
    # The Workload/PodGroup generation the shim plans with on this release.
    scheduling_api_version: str

    @property
    def minor(self) -> str:
        return self.version.lstrip("v").split(".")[1]

    @property
    def module_dir(self) -> Path:
        return MODULES / f"kubernetes-{self.version}"


RELEASES: dict[str, Release] = {
    # pkg/features/kube_features.go of v1.37.2: GenericWorkload is beta (off by default),
    # WorkloadWithJob alpha; CompositePodGroup needs TopologyAwareWorkloadScheduling. The
    # GangScheduling gate of 1.36 is gone: the scheduler's GangScheduling plugin follows
    # GenericWorkload.
    "v1.37.2": Release(
        version="v1.37.2",
        gates=("GenericWorkload", "WorkloadWithJob", "TopologyAwareWorkloadScheduling",
               "CompositePodGroup"),
        runtime_config=("scheduling.k8s.io/v1beta1", "scheduling.k8s.io/v1alpha3"),
        scheduling_api_version="scheduling.k8s.io/v1beta1",
    ),
    # v1.36.3: the v1alpha2 generation, GangScheduling still a gate of its own.
    "v1.36.3": Release(
        version="v1.36.3",
        gates=("GenericWorkload", "GangScheduling", "WorkloadWithJob",
               "TopologyAwareWorkloadScheduling"),
        runtime_config=("scheduling.k8s.io/v1alpha2",),
        scheduling_api_version="scheduling.k8s.io/v1alpha2",
    ),
}
DEFAULT_RELEASE = "v1.37.2"

KUBE_COMMANDS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler")


def release(version: str) -> Release:
    try:
        return RELEASES[version]
    except KeyError:
        raise SystemExit(f"controlplane: unknown Kubernetes version {version!r}; known: "
                         + ", ".join(sorted(RELEASES))) from None


def cache_root() -> Path:
    """Binaries live outside the repository, one folder per component and version."""
    explicit = os.environ.get("JOBSET_DECIDER_CONTROLPLANE_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "jobset-decider" / "controlplane"
