"""The clients' retry policy: one document in Go, Python and Node; its rules; and the Python
client against a decider that sheds load (`serve --workers 1 --max-pending 1`): a burst without
retries meets RESOURCE_EXHAUSTED with the 100 ms pushback, and with the policy every call of a
flood completes, the retries counted. (The Go and Node clients' own tests flood it the same way.)
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import grpc
import pytest
import yaml

from decider.v1 import decider_pb2 as pb
from decider_client import DeciderClient, observe
from decider_client.retry import DEFAULT, NO_RETRY, PUSHBACK, SERVICE_CONFIG, RetryPolicy
from support.builders import NOW

ROOT = Path(__file__).resolve().parent.parent
JOBSET = yaml.safe_load((ROOT / "examples" / "leader-workers.yaml").read_text())
SHED = grpc.StatusCode.RESOURCE_EXHAUSTED


def test_every_client_ships_the_same_service_config() -> None:
    go = json.loads((ROOT / "clients/go/decider/retry_service_config.json").read_text())
    node = json.loads((ROOT / "clients/node/retry-service-config.json").read_text())
    assert json.loads(SERVICE_CONFIG) == go == node
    expected = RetryPolicy(max_attempts=5, initial_backoff=0.1, max_backoff=1.0,
                           backoff_multiplier=2.0,
                           retryable=frozenset({grpc.StatusCode.UNAVAILABLE, SHED}))
    assert expected == DEFAULT


@pytest.mark.parametrize("code,trailers,backoffs,expected", [
    (SHED, [(PUSHBACK, "100")], 3, (0.1, True)),
    (SHED, [(PUSHBACK, "500")], 0, (0.5, True)),
    (grpc.StatusCode.UNAVAILABLE, [(PUSHBACK, "0")], 0, (0.0, True)),
    (SHED, [(PUSHBACK, "-1")], 0, None),
    (SHED, [(PUSHBACK, "soon")], 0, None),
    (SHED, [(PUSHBACK, "100"), (PUSHBACK, "200")], 0, None),
    (SHED, [], 0, None),
    (grpc.StatusCode.INVALID_ARGUMENT, [(PUSHBACK, "100")], 0, None),
    (grpc.StatusCode.DEADLINE_EXCEEDED, None, 0, None),
], ids=["load-shed-pushback", "worker-lost-pushback", "pushback-zero", "negative-pushback",
        "malformed-pushback", "two-pushbacks", "too-large-no-pushback", "invalid-argument",
        "deadline-exceeded"])
def test_retry_rules(code: grpc.StatusCode, trailers: list[tuple[str, str]] | None,
                     backoffs: int, expected: tuple[float, bool] | None) -> None:
    """gRFC A6's pushback rules, and the decider's: RESOURCE_EXHAUSTED without a pushback is an
    input over a limit, never sent again."""
    assert DEFAULT.delay(code, trailers, backoffs) == expected


@pytest.mark.parametrize("backoffs,bound", [(0, 0.1), (2, 0.4), (30, 1.0)])
def test_backoff_without_pushback_is_random_below_its_bound(backoffs: int, bound: float) -> None:
    for _ in range(50):
        wait = DEFAULT.delay(grpc.StatusCode.UNAVAILABLE, [], backoffs)
        assert wait is not None and not wait[1] and 0 <= wait[0] <= bound


@pytest.mark.parametrize("policy,message", [
    ({}, "retryPolicy: missing"),
    ({"maxAttempts": 0}, "maxAttempts"),
    ({"maxAttempts": 3, "backoffMultiplier": 2, "initialBackoff": "soon", "maxBackoff": "1s"},
     "initialBackoff"),
    ({"maxAttempts": 3, "backoffMultiplier": 2, "initialBackoff": "1s", "maxBackoff": "1s",
      "retryableStatusCodes": ["NOPE"]}, "not a status code"),
])
def test_a_bad_policy_is_refused_naming_the_field(policy: dict[str, object],
                                                   message: str) -> None:
    doc = {"methodConfig": [{"retryPolicy": policy}]} if policy else {}
    with pytest.raises(ValueError, match=message):
        RetryPolicy.from_service_config(json.dumps(doc))


@contextmanager
def shedding_decider() -> Iterator[str]:
    """`decider serve` with one worker and room for one waiting request."""
    proc = subprocess.Popen([sys.executable, "-m", "decider.cli", "serve", "--host", "127.0.0.1",
                             "--port", "0", "--drain-delay", "0", "--workers", "1",
                             "--max-pending", "1"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "serving decider.v1.Decider on 127.0.0.1:" in line, proc.stderr.read()
        yield line.strip().rsplit(" ", 1)[-1]
    finally:
        proc.kill()
        proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def _flood(client: DeciderClient, request: pb.DecideRequest, wave: int, waves: int,
           enough: object) -> list[BaseException | None]:
    """`wave` calls at once, up to `waves` times, until `enough()`: each call's error or None."""
    outcomes: list[BaseException | None] = []

    def one() -> BaseException | None:
        try:
            client.decide(request, timeout=60)
        except grpc.RpcError as exc:
            return exc
        return None

    with ThreadPoolExecutor(wave) as pool:
        for _ in range(waves):
            if enough():  # type: ignore[operator]
                break
            outcomes.extend(pool.map(lambda _: one(), range(wave)))
    return outcomes


@pytest.mark.waits
def test_a_shed_request_succeeds_on_retry() -> None:
    request = observe.build_decide_request(JOBSET, [], NOW)
    with shedding_decider() as target:
        with DeciderClient(target, retry=NO_RETRY) as bare:
            shed: list[grpc.RpcError] = []
            for exc in _flood(bare, request, 6, 20, lambda: bool(shed)):
                if exc is not None:
                    assert isinstance(exc, grpc.RpcError) and exc.code() == SHED, exc
                    assert (PUSHBACK, "100") in exc.trailing_metadata()  # type: ignore[attr-defined]
                    shed.append(exc)
            assert shed, "20 waves of 6 calls at once: none was shed"
            assert bare.retries == 0
        with DeciderClient(target) as client:
            outcomes = _flood(client, request, 6, 20, lambda: client.retries > 0)
            failed = [exc for exc in outcomes if exc is not None]
            assert not failed, f"{len(failed)} of {len(outcomes)} calls failed despite " \
                               f"{client.retries} retries: {failed[0]}"
            assert client.retries > 0, f"{len(outcomes)} calls, none retried"
            # Not retried: the field's problem stays the caller's, at once.
            bad = observe.build_decide_request(
                {**JOBSET, "spec": {**JOBSET["spec"], "replicatedJobs": [
                    {**JOBSET["spec"]["replicatedJobs"][0], "name": ""}]}}, [], NOW)
            retries = client.retries
            with pytest.raises(grpc.RpcError) as err:
                client.decide(bad, timeout=30)
            assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert err.value.details() == "spec.replicatedJobs[0].name: Required value"
            assert client.retries == retries
