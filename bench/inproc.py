"""In-process decision timings, interleaved across cases and, optionally, across source trees.

A case is (path, situation, Jobs, replicated Jobs): `core` times `decide()` on the core's types,
`worker` times what a decision worker runs per request (`dispatch.answer`: request bytes in,
answer bytes out). Situations: *steady* (every Job exists, runs and is ready, the status is
already written: a pass that changes nothing), *restart* (every Job belongs to the previous
attempt: the pass deletes them all), *recreate* (no Job exists: the pass builds every one).

Each source tree (this one, and e.g. main's code unpacked elsewhere) runs in its own process
(`python bench/inproc.py --serve ROOT`), imports `decider` from ROOT and builds its inputs with
the same builders; the driver asks each process for a few calls of one case at a time, in
turn, round after round, so that a slow moment of this shared machine falls on every tree and
every case alike. Both trees must give byte-identical answers (checked on every case).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

Case = tuple[str, str, int, int]  # (core|worker, situation, jobs, replicated jobs)


def split(n_jobs: int, rjobs: int) -> list[int]:
    return [n_jobs // rjobs + (1 if i < n_jobs % rjobs else 0) for i in range(rjobs)]


# --- inside a measuring process -----------------------------------------------------------------

class Cases:
    """Builds and runs cases with the `decider` on sys.path (set up by the caller)."""

    def __init__(self) -> None:
        from datetime import UTC, datetime

        from decider.contract import convert
        from decider.core.decide import decide
        from decider.core.model import Observed, ObservedJob, ObservedObject
        from decider_api.v1 import decider_pb2
        from decider_client import observe

        self.convert, self.decide, self.pb = convert, decide, decider_pb2
        self.Observed, self.ObservedJob, self.ObservedObject = Observed, ObservedJob, ObservedObject
        self.observe = observe
        # A tree from before the worker pool has no dispatch module: its server ran
        # convert.decide_response on the event loop. Checked by file, because the editable
        # install would otherwise lend this tree's module to an older package.
        self.dispatch: Any = None
        if (Path(convert.__file__).parent / "dispatch.py").exists():
            from decider.contract.limits import DEFAULT
            from decider.service import dispatch

            self.dispatch, self.limits = dispatch, DEFAULT
        self.now = datetime(2026, 1, 1, 12, tzinfo=UTC)
        self.uid = "uid-js-1"
        self.built: dict[tuple[str, int, int], tuple[Any, bytes]] = {}

    def _jobset(self, replicas: list[int], status: dict[str, Any] | None) -> dict[str, Any]:
        rjobs = [{"name": f"r{i}", "replicas": n, "template": {"spec": {
            "parallelism": 4, "completions": 4, "completionMode": "Indexed",
            "template": {"spec": {"restartPolicy": "OnFailure",
                                  "containers": [{"name": "main", "image": "busybox"}]}}}}}
            for i, n in enumerate(replicas)]
        out = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
               "metadata": {"name": "js", "namespace": "default", "uid": self.uid,
                            "resourceVersion": "7"},
               "spec": {"replicatedJobs": rjobs, "failurePolicy": {"maxRestarts": 10}}}
        if status is not None:
            out["status"] = status
        return out

    def _job(self, rjob: str, index: int) -> Any:
        labels = {"jobset.sigs.k8s.io/jobset-name": "js",
                  "jobset.sigs.k8s.io/replicatedjob-name": rjob,
                  "jobset.sigs.k8s.io/restart-attempt": "0",
                  "jobset.sigs.k8s.io/job-index": str(index)}
        return self.ObservedJob(name=f"js-{rjob}-{index}", uid=f"uid-{rjob}-{index}",
                                controller_uid=self.uid, labels=labels, suspend=False,
                                parallelism=4, completions=4, active=4, ready=4)

    @staticmethod
    def _to_k8s(jobs: list[Any]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = [
            {"apiVersion": "batch/v1", "kind": "Job",
             "metadata": {"name": j.name, "uid": j.uid, "labels": dict(j.labels),
                          "ownerReferences": [{"uid": j.controller_uid, "controller": True}]},
             "spec": {"parallelism": j.parallelism, "completions": j.completions,
                      "suspend": j.suspend},
             "status": {"active": j.active, "ready": j.ready}} for j in jobs]
        out.append({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "js"}})
        return out

    def build(self, situation: str, n_jobs: int, rjobs: int) -> tuple[Any, bytes]:
        """(the core's input, the request's bytes) for a case."""
        key = (situation, n_jobs, rjobs)
        if key not in self.built:
            replicas = split(n_jobs, rjobs)
            service = [self.ObservedObject(api_version="v1", kind="Service", name="js")]
            status = {"restarts": 1, "restartsCountTowardsMax": 1} \
                if situation == "restart" else None
            jobs = [] if situation == "recreate" else [
                self._job(f"r{i}", k) for i, n in enumerate(replicas) for k in range(n)]
            js = self._jobset(replicas, status)
            if situation == "steady":
                js["status"] = self.decide(self.Observed(jobset=js, now=self.now, jobs=jobs,
                                                         objects=service)).status
            observed = self.Observed(jobset=js, now=self.now, jobs=jobs, objects=service)
            request = self.observe.build_decide_request(js, self._to_k8s(jobs), self.now)
            self.built[key] = (observed, request.SerializeToString(deterministic=True))
        return self.built[key]

    def comparable(self, answer: bytes) -> bytes:
        """The answer without its decision_id, which names the decider's version by design
        (a digest of input and version), so that trees of two versions can be compared."""
        msg = self.pb.DecideResponse.FromString(answer)
        if "decision_id" in msg.DESCRIPTOR.fields_by_name:
            msg.ClearField("decision_id")
        return msg.SerializeToString(deterministic=True)

    def once(self, case: Case, answer: bool = False) -> bytes:
        """One call of the case; answer: also return its answer's bytes (for the core path,
        the plan through the contract adapter, outside what is timed)."""
        path, situation, n_jobs, rjobs = case
        observed, payload = self.build(situation, n_jobs, rjobs)
        if path == "core":
            plan = self.decide(observed)
            if not answer:
                return b""
            return self.convert.plan_to_proto(plan).SerializeToString(deterministic=True)
        if self.dispatch is None:
            request = self.pb.DecideRequest.FromString(payload)
            return self.convert.decide_response(request).SerializeToString(deterministic=True)
        reply = self.dispatch.answer("Decide", payload, self.limits)
        assert reply.code == self.dispatch.OK, reply.message
        return reply.body


def _serve(root: str) -> None:
    # The tree's own client builds its requests: the contract changes with the tree.
    sys.path[:0] = [root, str(ROOT / "tests"), str(Path(root) / "clients" / "python")]
    os.environ.setdefault("OTEL_TRACES_EXPORTER", "none")
    cases = Cases()
    assert Path(cases.convert.__file__).resolve().is_relative_to(Path(root).resolve())
    for line in sys.stdin:
        ask = json.loads(line)
        case = tuple(ask["case"])
        out: dict[str, Any] = {}
        if ask.get("digest"):
            answer = cases.once(case, answer=True)  # type: ignore[arg-type]
            out["digest"] = hashlib.sha256(cases.comparable(answer)).hexdigest()
            out["payload"] = hashlib.sha256(cases.build(*case[1:])[1]).hexdigest()
            out["actions"] = len(cases.decide(cases.build(*case[1:])[0]).actions)
        times = []
        for _ in range(ask.get("calls", 0)):
            t0 = time.perf_counter()
            cases.once(case)  # type: ignore[arg-type]
            times.append(time.perf_counter() - t0)
        out["times"] = times
        print(json.dumps(out), flush=True)


# --- the driver ---------------------------------------------------------------------------------

class Tree:
    """One measuring process, importing `decider` from `root`."""

    def __init__(self, name: str, root: Path) -> None:
        self.name = name
        self.root = root
        self.proc = subprocess.Popen(
            [sys.executable, str(HERE / "inproc.py"), "--serve", str(root)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=str(ROOT))

    def ask(self, case: Case, calls: int, digest: bool = False) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"case": case, "calls": calls, "digest": digest})
                              + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"{self.name}: the measuring process ended on {case}")
        return json.loads(line)

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=60)


@dataclass
class Result:
    samples: dict[tuple[str, Case], list[float]] = field(default_factory=dict)
    digests: dict[tuple[str, Case], str] = field(default_factory=dict)
    actions: dict[Case, int] = field(default_factory=dict)


def measure(trees: list[Tree], cases: Iterable[Case], seconds_per_case: float,
            rounds: int = 5) -> Result:
    """Round-robin over cases and trees: each round gives every (tree, case) about
    seconds_per_case / rounds of calls (at least one)."""
    cases = list(cases)
    out = Result()
    per_call: dict[tuple[str, Case], float] = {}
    for case in cases:
        for tree in trees:
            first = tree.ask(case, 1, digest=True)
            out.digests[(tree.name, case)] = first["digest"]
            out.digests[(tree.name + " payload", case)] = first["payload"]
            per_call[(tree.name, case)] = first["times"][0]
            out.samples[(tree.name, case)] = []
            out.actions[case] = first["actions"]
        if len({out.digests[(t.name, case)] for t in trees}) != 1:
            raise AssertionError(f"{case}: the trees answered differently")
        if len({out.digests[(t.name + " payload", case)] for t in trees}) != 1:
            raise AssertionError(f"{case}: the trees built different requests")
    for _ in range(rounds):
        for case in cases:
            for tree in trees:
                key = (tree.name, case)
                calls = max(1, int(seconds_per_case / rounds / max(per_call[key], 1e-6)))
                times = tree.ask(case, min(calls, 2000))["times"]
                out.samples[key].extend(times)
                per_call[key] = min(times)
    return out


def pct(samples: list[float], p: float) -> float:
    s = sorted(samples)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--serve":
        _serve(sys.argv[2])
        return
    raise SystemExit("usage: bench/decide_bench.py (this module is its measuring process)")


if __name__ == "__main__":
    main()
