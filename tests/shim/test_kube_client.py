"""The API client the shim is to the API server: Retry-After honoured, a client-side QPS limit."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from fakekube import FakeKube
from shim import kube as kube_module
from shim.flags import parse_args
from shim.kube_errors import KubeError, status_reason
from shim.main import build_kube
from shim.ratelimit import TokenBucket, retry_after
from tests.shim.helpers import NS, jobset, rjob, wait_for

pytestmark = pytest.mark.waits


@pytest.fixture
def fake():
    with FakeKube() as kube:
        yield kube


class _Sleeps:
    """shim.kube's `time`, recording each wait the client asks for (and waiting it): what a
    test bounds is what the client asked, which a busy machine does not change, where the
    time it took grows with the load."""

    def __init__(self) -> None:
        self.asked: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.asked.append(seconds)
        time.sleep(seconds)

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> _Sleeps:
    recorder = _Sleeps()
    monkeypatch.setattr(kube_module, "time", recorder)
    return recorder


def _kube(fake: FakeKube, *argv: str) -> Any:
    """A Kube built from flags as decider-shim builds it."""
    cfg = parse_args(["--kube-api-qps=0", *argv], env={})
    configuration = client.Configuration()
    configuration.host = fake.url
    return build_kube(cfg, client.ApiClient(configuration))


def _cm(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {}}


def _posts(fake: FakeKube) -> list[int]:
    return [r.code for r in fake.writes("/configmaps$", "POST")]


@pytest.mark.parametrize("code", [429, 503])
def test_retry_after_is_waited_then_the_request_is_sent_again(fake, sleeps, code):
    k = _kube(fake)
    fake.add_fault("POST", "/configmaps$", code=code, count=1, retry_after=1)
    started = time.monotonic()
    k.create(k.resource("v1", "ConfigMap"), NS, _cm("a"))
    # What the server asked, once, then the request again.
    assert sleeps.asked == [1.0]
    assert time.monotonic() - started >= 1.0
    assert _posts(fake) == [code, 201]


@pytest.mark.parametrize("method", ["POST", "GET"])
def test_retry_after_is_bounded_and_so_are_the_retries(fake, sleeps, method):
    """For every method: urllib3 would otherwise wait out an hour itself on a GET."""
    k = _kube(fake, "--kube-api-max-retry-wait=0.2", "--kube-api-max-retries=2")
    res = k.resource("v1", "ConfigMap")
    k.create(res, NS, _cm("b"))
    fault = fake.add_fault(method, "/configmaps(/b)?$", code=429, retry_after=3600)
    started = time.monotonic()
    with pytest.raises(ApiException) as err:
        if method == "POST":
            k.create(res, NS, _cm("c"))
        else:
            k.get(res, NS, "b")
    assert err.value.status == 429
    assert sleeps.asked[-2:] == [0.2, 0.2]  # two waits of 0.2 s, not an hour
    assert time.monotonic() - started >= 0.4
    assert fault.hits == 3


def test_a_server_error_without_retry_after_is_not_retried_by_the_client(fake):
    k = _kube(fake)
    fake.add_fault("POST", "/configmaps$", code=500, count=1)
    with pytest.raises(ApiException):
        k.create(k.resource("v1", "ConfigMap"), NS, _cm("c"))
    assert _posts(fake) == [500]


def test_requests_are_rate_limited_by_qps_and_burst(fake):
    k = _kube(fake, "--kube-api-qps=10", "--kube-api-burst=2")
    limiter = k.limiter
    waits: list[float] = []
    acquire = limiter.acquire
    limiter.acquire = lambda: waits.append(acquire()) or waits[-1]  # type: ignore[method-assign]
    started = time.monotonic()
    res = k.resource("v1", "ConfigMap")  # discovery: a request too
    for i in range(12):
        k.create(res, NS, _cm(f"q{i}"))
    elapsed = time.monotonic() - started
    # 2 at once, then one every 0.1 s: a second at least, and no wait beyond the rate's (a
    # busy machine's slow requests earn their tokens meanwhile, and wait less).
    assert len(waits) >= 12 and waits[:2] == [0.0, 0.0]
    assert elapsed >= (len(waits) - 2) / 10 - 0.05
    assert sum(waits) <= (len(waits) - 2) / 10 + 1e-6, waits


def test_a_shim_at_qps_10_burst_5_spreads_21_job_creates_over_1_6_s(cluster, shims):
    shims.start(kube_api_qps=10.0, kube_api_burst=5)
    cluster.create_jobset(jobset("q", rjob("workers", 21)))
    wait_for(lambda: len(cluster.creates()) == 21, what="21 jobs")
    times = sorted(r.time for r in cluster.creates())
    # In any window of T seconds at most burst + qps * T requests go out: 21 <= 5 + 10 T.
    assert times[-1] - times[0] >= 1.5


def test_token_bucket_spends_the_burst_then_one_token_per_1_over_qps():
    now = [0.0]
    bucket = TokenBucket(qps=5, burst=10, clock=lambda: now[0], sleep=lambda s: None)
    waits = [bucket.reserve() for _ in range(21)]
    assert waits[:10] == [0.0] * 10
    # Reserved in order: the 11th waits 0.2 s, the 21st 2.2 s.
    assert waits[10:] == pytest.approx([0.2 * i for i in range(1, 12)])
    now[0] = 10.0  # a quiet while refills the burst, and no more
    assert [bucket.reserve() for _ in range(10)] == [0.0] * 10
    assert bucket.reserve() == pytest.approx(0.2)


def test_retry_after_reads_seconds_and_dates_and_only_throttling_codes():
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert retry_after(429, {"Retry-After": "3"}) == 3.0
    assert retry_after(503, {"Retry-After": "Thu, 01 Jan 2026 12:00:07 GMT"}, now=lambda: now) == 7
    assert retry_after(429, {"Retry-After": "86400"}, limit=60) == 60
    assert retry_after(429, {"Retry-After": "-5"}) == 0
    assert retry_after(429, {}) is None  # a 429 without the header is final, as in client-go
    assert retry_after(409, {"Retry-After": "1"}) is None
    assert retry_after(500, {"Retry-After": "soon"}) == 1.0


def test_leader_election_is_neither_throttled_nor_held_in_retry_after(fake):
    # Throttled, the elector would wait 100 s for a token; held in Retry-After, 60 s (the
    # longest the client waits): far past the generous bound below.
    k = _kube(fake, "--kube-api-qps=0.01", "--kube-api-burst=1")
    lease = k.resource("coordination.k8s.io/v1", "Lease")
    k.create(
        lease,
        NS,
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "l"},
            "spec": {},
        },
    )
    assert k.limiter is not None and k.limiter.reserve() > 90  # empty for 100 s
    elector = k.for_leader_election()
    fake.add_fault("GET", "/leases/l$", code=429, count=1, retry_after=3600)
    started = time.monotonic()
    with pytest.raises(ApiException):  # the elector's own period retries, not the client
        elector.get(lease, NS, "l")
    assert elector.get(lease, NS, "l")["metadata"]["name"] == "l"
    assert time.monotonic() - started < 30.0


def test_an_api_error_is_one_line_naming_the_request_and_the_servers_message(fake):
    """Every retry warning of the shim prints the error: the client's own text is five lines
    with the response's headers."""
    k = _kube(fake)
    fake.add_fault("POST", "/configmaps$", code=500, count=1)
    with pytest.raises(ApiException) as caught:
        k.create(k.resource("v1", "ConfigMap"), NS, _cm("a"))
    assert caught.value.status == 500 and status_reason(caught.value) == "InternalError"
    assert str(caught.value) == (f"POST /api/v1/namespaces/{NS}/configmaps: 500 Internal Server "
                                 "Error: injected fault (500)")


@pytest.mark.parametrize(("body", "said"), [
    pytest.param('{"kind":"Status","message":"a\\nb"}', "a b", id="status-message-one-line"),
    pytest.param("<html>\n<body>bad gateway</body>\n</html>", "<html> <body>bad gateway</body> "
                 "</html>", id="not-json"),
    pytest.param("x" * 1000, "x" * 300 + "...", id="long-body-cut"),
    pytest.param("", "", id="no-body"),
])
def test_api_error_text(body, said):
    exc = KubeError("GET", "/api/v1/pods", status=502, reason="Bad Gateway", body=body)
    text = str(exc)
    assert "\n" not in text
    assert text == "GET /api/v1/pods: 502 Bad Gateway" + (f": {said}" if said else "")


def test_a_watch_error_event_is_one_line(fake):
    exc = KubeError("watch", "jobs", status=500, reason="InternalError",
                    body='{"kind":"Status","code":500,"reason":"InternalError",'
                         '"message":"etcd is\\nunhappy"}')
    assert str(exc) == "watch jobs: 500 InternalError: etcd is unhappy"


def test_bodies_and_answers_keep_every_value_on_the_lean_path(fake):
    """Bodies are written and answers read by orjson, past the client's own serializer: every
    value a manifest carries comes back as sent (line separators, non-ASCII, a 64-bit integer;
    an integer past 64 bits, which orjson refuses, by the standard library)."""
    k = _kube(fake)
    cms = k.resource("v1", "ConfigMap")
    body = _cm("values")
    body["data"] = {"sep": "a\u2028b\u2029c\x85d", "utf8": "\u00e9\u4e2d\U0001f600",
                    "quote": '"\\/'}
    body["metadata"]["annotations"] = {"n": "1"}
    body["metadata"]["labels"] = {"x": "y"}
    created = k.create(cms, NS, body)
    assert created["data"] == body["data"]
    assert k.get(cms, NS, "values")["data"] == body["data"]
    big = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"},
           "data": {}, "extra": 2**70, "int64": 2**63 - 1}
    created = k.create(cms, NS, big)
    assert created["extra"] == 2**70 and created["int64"] == 2**63 - 1
    # A watch's events are read the same way.
    stream = k.watch(cms, NS, "0", 2)
    names = set()
    for event in stream:
        names.add(event["object"]["metadata"]["name"])
        if names >= {"values", "big"}:
            stream.close()
            break
    assert names >= {"values", "big"}
