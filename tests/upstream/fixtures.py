"""JobSets shaped like the ones upstream's tests build (names are ours)."""

from __future__ import annotations

from typing import Any

from support.builders import jobset, rjob
from upstream.sim import World

NS = "jobset-ns-1"
NAME = "test-js"
UID = "uid-test-js"


def two_rjobs(**spec: Any) -> dict[str, Any]:
    """The integration suite's standard JobSet: replicated-job-a x1, replicated-job-b x3, DNS
    hostnames on, success policy All over every replicated Job."""
    spec.setdefault("successPolicy", {"operator": "All", "targetReplicatedJobs": []})
    spec.setdefault("network", {"enableDNSHostnames": True})
    return jobset(
        rjob("replicated-job-a", 1),
        rjob("replicated-job-b", 3),
        name=NAME,
        namespace=NS,
        uid=UID,
        **spec,
    )


def three_deps(
    *deps: list[tuple[str, str]] | None, replicas: tuple[int, ...] = (1, 1, 3), **spec: Any
) -> dict[str, Any]:
    """rjob-a, rjob-b, rjob-c with the given dependsOn lists (None = none)."""
    names = ("rjob-a", "rjob-b", "rjob-c")
    rjobs = [rjob(n, r, depends_on=d) for n, r, d in zip(names, replicas, deps, strict=False)]
    spec.setdefault("successPolicy", {"operator": "All", "targetReplicatedJobs": []})
    return jobset(*rjobs, name="depends-on", namespace=NS, uid=UID, **spec)


def world(js: dict[str, Any], **kw: Any) -> World:
    return World(jobset=js, **kw)


def started(js: dict[str, Any], **kw: Any) -> World:
    """A World after the passes that create everything the JobSet starts with."""
    w = World(jobset=js, **kw)
    w.settle()
    return w
