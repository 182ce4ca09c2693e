"""Builders for the admission tests: a small valid JobSet, and rjobs to vary it."""

from __future__ import annotations

import copy
from typing import Any


def container(name: str = "main", mounts: tuple[str, ...] = ()) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "image": "busybox"}
    if mounts:
        out["volumeMounts"] = [{"name": m, "mountPath": f"/mnt/{m}"} for m in mounts]
    return out


def rjob(
    name: str,
    replicas: int | None = None,
    *,
    parallelism: int | None = None,
    completions: int | None = None,
    mounts: tuple[str, ...] = (),
    depends_on: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    job_spec: dict[str, Any] = {
        "template": {"spec": {"containers": [container(mounts=mounts)]}},
    }
    if parallelism is not None:
        job_spec["parallelism"] = parallelism
    if completions is not None:
        job_spec["completions"] = completions
    out: dict[str, Any] = {"name": name, "template": {"spec": job_spec}}
    if replicas is not None:
        out["replicas"] = replicas
    if depends_on is not None:
        out["dependsOn"] = depends_on
    return out


def jobset(*rjobs: dict[str, Any], name: str = "js", **spec: Any) -> dict[str, Any]:
    """A valid JobSet (before defaulting): by default a leader and 2 workers."""
    if not rjobs:
        rjobs = (rjob("leader", 1, parallelism=1, completions=1), rjob("worker", 2))
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"replicatedJobs": [copy.deepcopy(r) for r in rjobs], **spec},
    }


def job_spec(js: dict[str, Any], index: int) -> dict[str, Any]:
    return js["spec"]["replicatedJobs"][index]["template"]["spec"]


def pod_spec(js: dict[str, Any], index: int) -> dict[str, Any]:
    return job_spec(js, index)["template"]["spec"]


def _steps(path: str) -> list[str | int]:
    steps: list[str | int] = []
    for part in path.replace("]", "").split("."):
        name, *indices = part.split("[")
        if name:
            steps.append(name)
        steps.extend(int(i) for i in indices)
    return steps


def put(path: str, value: Any):
    """A mutator setting `path` (e.g. "spec.replicatedJobs[0].replicas"), creating objects
    along the way."""

    def mutate(obj: dict[str, Any]) -> None:
        *parents, last = _steps(path)
        cur: Any = obj
        for step in parents:
            if isinstance(step, str) and step not in cur:
                cur[step] = {}
            cur = cur[step]
        cur[last] = copy.deepcopy(value)

    return mutate


def delete(path: str):
    def mutate(obj: dict[str, Any]) -> None:
        *parents, last = _steps(path)
        cur: Any = obj
        for step in parents:
            cur = cur[step]
        del cur[last]

    return mutate


def chain(*mutators: Any):
    def mutate(obj: dict[str, Any]) -> None:
        for m in mutators:
            m(obj)

    return mutate
