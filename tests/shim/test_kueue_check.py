"""The decider-backed Kueue AdmissionCheck's verdicts, without a cluster (shim/kueue_check):
the decider's pod sets against Kueue's, its answers and failures, the pushback."""

from __future__ import annotations

import json
from typing import Any

import grpc
import pytest

from decider_api.v1 import decider_pb2 as pb
from shim.kueue_check.controller import CheckConfig, ask
from shim.kueue_check.podsets import differences
from shim.kueue_check.verdict import (
    READY,
    REJECTED,
    RETRY,
    CallFailed,
    failed,
    pushback_seconds,
)
from tests.shim.kueue_check_support import (
    INVALID,
    TRAINER,
    Failing,
    InProcess,
    RpcFailure,
    edited,
    jobset,
    kueue_pod_sets,
    rjob,
)

CFG = CheckConfig(retry_after=30)
KUEUE = kueue_pod_sets(TRAINER)


@pytest.mark.parametrize(("workload_pod_sets", "state", "said"), [
    (KUEUE, READY, "pod sets agree (leader 1, workers 4)"),
    (edited(KUEUE, 1, ("count",), 6), REJECTED,
     "spec.podSets[1] (workers).count: the Workload has 6, the decider 4"),
    (edited(KUEUE, 0, ("minCount",), 1), REJECTED,
     "spec.podSets[0] (leader).minCount: the Workload has 1, the decider none"),
    (edited(KUEUE, 0, ("topologyRequest", "required"), "block"), REJECTED,
     "(leader).topologyRequest"),
    (edited(KUEUE, 1, ("template", "spec", "nodeSelector"), {"pool": "cpu"}), REJECTED,
     "(workers).nodeSelector: the Workload has {'pool': 'cpu'}, the decider {'pool': 'gpu'}"),
    (edited(KUEUE, 1, ("template", "spec", "tolerations"), []), REJECTED,
     "(workers).tolerations"),
    (list(reversed(KUEUE)), REJECTED,
     "spec.podSets names: the Workload has ['workers', 'leader'], the decider "
     "['leader', 'workers']"),
    (KUEUE[:1], REJECTED, "the Workload has ['leader'], the decider ['leader', 'workers']"),
], ids=["agree-ready", "count-differs", "min-count-differs", "topology-differs",
        "node-selector-differs", "tolerations-differ", "order-differs", "pod-set-missing"])
def test_pod_sets_compared(workload_pod_sets: list[dict[str, Any]], state: str,
                           said: str) -> None:
    verdict = ask(InProcess(), CFG, TRAINER, workload_pod_sets)
    assert verdict.state == state, verdict
    assert said in verdict.message, verdict.message
    assert verdict.requeue_after_seconds is None


@pytest.mark.parametrize(("toleration_a", "toleration_b", "agree"), [
    ({"key": "gpu", "operator": "Exists"}, {"key": "gpu", "operator": "Exists", "value": ""},
     True),
    ({"key": "gpu", "value": "a"}, {"key": "gpu", "operator": "Equal", "value": "a"}, True),
    ({"key": "gpu", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30},
     {"key": "gpu", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60},
     False),
], ids=["empty-value-is-absent", "empty-operator-is-equal", "seconds-compared"])
def test_tolerations_as_kubernetes_means_them(toleration_a: dict[str, Any],
                                              toleration_b: dict[str, Any],
                                              agree: bool) -> None:
    js = jobset(rjob("w", 1, 1, 1, tolerations=[toleration_a]))
    answer = InProcess().pod_sets(pb.PodSetsRequest(object_json=json.dumps(js)))
    workload = edited(kueue_pod_sets(js), 0, ("template", "spec", "tolerations"),
                      [toleration_b])
    assert (differences(answer.pod_sets, workload) == []) is agree


@pytest.mark.parametrize(("decider", "js", "state", "requeue", "said"), [
    (InProcess(), INVALID, REJECTED, None, "decider Validate: JobSet team-a/trainer is invalid"),
    (Failing(RpcFailure(grpc.StatusCode.RESOURCE_EXHAUSTED, "server busy",
                        (("grpc-retry-pushback-ms", "100"),))), TRAINER, RETRY, 1,
     "shedding load; pushback 1s"),
    (Failing(RpcFailure(grpc.StatusCode.UNAVAILABLE, "draining",
                        (("grpc-retry-pushback-ms", "2500"),))), TRAINER, RETRY, 3,
     "UNAVAILABLE: draining"),
    (Failing(RpcFailure(grpc.StatusCode.RESOURCE_EXHAUSTED, "busy",
                        (("grpc-retry-pushback-ms", "500"),)), only_pod_sets=True),
     TRAINER, RETRY, 1, "decider PodSets"),
    (Failing(RpcFailure(grpc.StatusCode.UNAVAILABLE, "connection refused")), TRAINER, RETRY,
     30, "connection refused"),
    (Failing(RpcFailure(grpc.StatusCode.DEADLINE_EXCEEDED, "deadline")), TRAINER, RETRY, 30,
     "DEADLINE_EXCEEDED"),
    (Failing(RpcFailure(grpc.StatusCode.RESOURCE_EXHAUSTED, "request past --max-request-bytes")),
     TRAINER, REJECTED, None, "past --max-request-bytes"),
    (Failing(RpcFailure(grpc.StatusCode.INVALID_ARGUMENT, "spec.replicatedJobs[0]: bad")),
     TRAINER, REJECTED, None, "INVALID_ARGUMENT: spec.replicatedJobs[0]: bad"),
], ids=["invalid-jobset-rejected-with-decider-message", "shed-retry-after-pushback",
        "unavailable-with-pushback-retry-rounded-up", "pod-sets-shed-retry",
        "unreachable-retry-after-default", "deadline-retry-after-default",
        "past-a-limit-rejected", "refused-input-rejected"])
def test_decider_answers(decider: Any, js: dict[str, Any], state: str, requeue: int | None,
                         said: str) -> None:
    verdict = ask(decider, CFG, js, kueue_pod_sets(js))
    assert (verdict.state, verdict.requeue_after_seconds) == (state, requeue), verdict
    assert said in verdict.message, verdict.message


def test_invalid_names_the_field() -> None:
    verdict = ask(InProcess(), CFG, INVALID, kueue_pod_sets(INVALID))
    assert "spec.replicatedJobs" in verdict.message, verdict.message


@pytest.mark.parametrize(("trailers", "seconds"), [
    ((("grpc-retry-pushback-ms", "100"),), 1),
    ((("grpc-retry-pushback-ms", "1000"),), 1),
    ((("grpc-retry-pushback-ms", "1001"),), 2),
    ((("grpc-retry-pushback-ms", "0"),), 1),
    ((("Grpc-Retry-Pushback-Ms", "3000"),), 3),
    ((("grpc-retry-pushback-ms", "-1"),), None),
    ((("grpc-retry-pushback-ms", "soon"),), None),
    ((), None),
], ids=["100ms-is-1s", "exact-second", "rounded-up", "zero-is-at-least-1s",
        "key-any-case", "negative-is-none", "malformed-is-none", "absent"])
def test_pushback_seconds(trailers: tuple[tuple[str, str], ...], seconds: int | None) -> None:
    assert pushback_seconds(trailers) == seconds


@pytest.mark.parametrize(("code", "trailers", "state"), [
    (grpc.StatusCode.RESOURCE_EXHAUSTED, (("grpc-retry-pushback-ms", "-1"),), REJECTED),
    (grpc.StatusCode.INTERNAL, (), RETRY),
    (grpc.StatusCode.FAILED_PRECONDITION, (), REJECTED),
], ids=["exhausted-told-not-to-retry-is-a-limit", "internal-is-transient",
        "failed-precondition-is-final"])
def test_failed_calls(code: grpc.StatusCode, trailers: tuple[tuple[str, str], ...],
                      state: str) -> None:
    assert failed(CallFailed("Validate", code, "x", trailers), 30).state == state


def test_message_within_kueues_limit() -> None:
    # Kueue's AdmissionCheckState.message is at most 32768 characters; the API server refuses more.
    verdict = failed(CallFailed("Validate", grpc.StatusCode.INVALID_ARGUMENT, "e" * 40000), 30)
    assert len(verdict.message) == 32768 and verdict.message.endswith("...")
