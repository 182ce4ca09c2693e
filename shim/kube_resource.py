"""Where a kind lives in the Kubernetes REST API: its group, version, plural and scope, and
the paths of its collections, objects and subresources.

Apart from the client (kube.py) because a Resource is a value the informers, the pager and the
apply step hold and build paths from, with or without a request in flight.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Resource:
    api_version: str
    kind: str
    plural: str
    namespaced: bool = True

    @property
    def group(self) -> str:
        return self.api_version.rsplit("/", 1)[0] if "/" in self.api_version else ""

    def path(self, namespace: str | None = None, name: str = "", subresource: str = "") -> str:
        base = f"/apis/{self.api_version}" if self.group else f"/api/{self.api_version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{_segment(namespace)}"
        base += f"/{self.plural}"
        if name:
            base += f"/{_segment(name)}"
            if subresource:
                base += f"/{subresource}"
        return base


def _segment(value: str) -> str:
    # A name or namespace is one path segment: never a way to another collection.
    if "/" in value or value in (".", ".."):
        raise ValueError(f"{value!r} is not a valid object name or namespace")
    return value


# Kinds the shim knows without asking discovery; any other kind is looked up once per
# group/version. Keyed by (group, kind) because plural and scope do not change across versions.
KNOWN_KINDS: dict[tuple[str, str], tuple[str, bool]] = {
    ("", "Pod"): ("pods", True),
    ("", "Service"): ("services", True),
    ("", "PersistentVolumeClaim"): ("persistentvolumeclaims", True),
    ("", "Event"): ("events", True),
    ("batch", "Job"): ("jobs", True),
    ("coordination.k8s.io", "Lease"): ("leases", True),
    ("jobset.x-k8s.io", "JobSet"): ("jobsets", True),
    ("scheduling.k8s.io", "Workload"): ("workloads", True),
    ("scheduling.k8s.io", "PodGroup"): ("podgroups", True),
    ("scheduling.k8s.io", "CompositePodGroup"): ("compositepodgroups", True),
    ("scheduling.x-k8s.io", "PodGroup"): ("podgroups", True),  # scheduler-plugins
    ("scheduling.volcano.sh", "PodGroup"): ("podgroups", True),  # Volcano
}
