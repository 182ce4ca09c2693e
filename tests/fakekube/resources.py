"""The resource types the fake API server serves, and how each one behaves."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ResourceType:
    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool = True
    # With a status subresource, writes to the main resource keep the stored status and writes
    # to /status keep everything else, as the real API server does.
    status_subresource: bool = True
    # Strategic merge patch exists only for compiled-in types; a CRD answers 415 to it.
    builtin: bool = True
    short_names: tuple[str, ...] = ()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def key(self) -> str:
        return f"{self.group}/{self.version}/{self.plural}"

    @property
    def resource_label(self) -> str:
        # How the API server names a resource in error messages: "jobs.batch", "services".
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def singular(self) -> str:
        return self.kind.lower()


DEFAULT_RESOURCES: tuple[ResourceType, ...] = (
    ResourceType("", "v1", "Pod", "pods"),
    ResourceType("", "v1", "Service", "services"),
    ResourceType("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims"),
    ResourceType("", "v1", "Event", "events", status_subresource=False),
    ResourceType("", "v1", "ConfigMap", "configmaps", status_subresource=False),
    ResourceType("batch", "v1", "Job", "jobs"),
    ResourceType("coordination.k8s.io", "v1", "Lease", "leases", status_subresource=False),
    ResourceType("jobset.x-k8s.io", "v1alpha2", "JobSet", "jobsets", builtin=False),
    # Gang scheduling, every generation and target the shim can be pointed at. Each version has
    # its own store here (a real API server converts between them); the shim watches one.
    ResourceType("scheduling.k8s.io", "v1alpha2", "Workload", "workloads"),
    ResourceType("scheduling.k8s.io", "v1alpha2", "PodGroup", "podgroups"),
    ResourceType("scheduling.k8s.io", "v1alpha1", "Workload", "workloads"),
    ResourceType("scheduling.k8s.io", "v1beta1", "Workload", "workloads"),
    ResourceType("scheduling.k8s.io", "v1beta1", "PodGroup", "podgroups"),
    # JobSetGangOfGangs: a v1beta1 Workload's tree of v1alpha3 CompositePodGroups.
    ResourceType("scheduling.k8s.io", "v1alpha3", "CompositePodGroup", "compositepodgroups"),
    ResourceType("scheduling.x-k8s.io", "v1alpha1", "PodGroup", "podgroups", builtin=False),
    ResourceType("scheduling.volcano.sh", "v1beta1", "PodGroup", "podgroups", builtin=False),
)
