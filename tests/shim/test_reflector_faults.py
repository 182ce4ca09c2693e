"""The shim's reflector against an API server that breaks watches and serves big lists.

Each case is what an operator meets: watches a proxy closes at once, a 410 on every watch, a
connection reset or an event cut in half; lists of thousands of objects, and a continue token
that expires. The reflector must neither lose an event nor hammer the API server.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from fakekube import FakeKube
from shim.informer import Informer
from shim.kube import Kube
from support.waiting import HANG_GUARD
from tests.shim.helpers import NS, wait_for

pytestmark = pytest.mark.waits


@pytest.fixture
def fake() -> Iterator[FakeKube]:
    with FakeKube(bookmark_interval=0.3) as kube:
        yield kube


def _kube(fake: FakeKube) -> Kube:
    configuration = client.Configuration()
    configuration.host = fake.url
    return Kube(client.ApiClient(configuration), request_timeout=5.0)


def _cm(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {}}


class _Seen:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def __call__(self, etype: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        self.events.append((etype, obj["metadata"]["name"]))

    def names(self) -> set[str]:
        return {name for etype, name in self.events if etype != "DELETED"}


def _informer(fake: FakeKube, seen: _Seen, **kw: Any) -> Informer:
    kube = _kube(fake)
    kw.setdefault("watch_timeout", (20, 30))
    inf = Informer(kube, kube.resource("v1", "ConfigMap"), [NS], seen, **kw)
    inf.start()
    assert inf.wait_synced(HANG_GUARD)
    return inf


@pytest.mark.parametrize(
    ("mode", "code"),
    [
        # A proxy or a shutting-down API server ends every watch at once: without a backoff
        # the reflector sent ~1,000 watches a second.
        ("close", 0),
        # Every watch answered 410 (a list served from a cache behind etcd's compaction):
        # without a backoff the reflector sent ~600 full LISTs a second.
        ("error", 410),
        ("error", 500),
        ("reset", 0),
    ],
)
def test_a_watch_that_breaks_every_time_is_retried_with_backoff(fake, mode, code):
    seen = _Seen()
    cms = fake.store.resource_for("", "v1", "configmaps")
    fake.store.create(cms, NS, _cm("before"))
    inf = _informer(fake, seen)
    try:
        fake.add_watch_fault("/configmaps$", mode, code=code)
        fake.store.drop_watches()
        start = len(fake.reads("/configmaps$"))
        time.sleep(2.0)
        # Waits of 0.1, 0.2, 0.4, 0.8 s: a handful of attempts (a 410 costs a list and a
        # watch each).
        assert len(fake.reads("/configmaps$")) - start <= 14
        fake.store.create(cms, NS, _cm("during"))
        fake.clear_faults()
        # Nothing lost once the API server serves watches again (the next wait is 1.6 s).
        wait_for(lambda: "during" in seen.names(), what="the object made meanwhile")
    finally:
        inf.stop()


def test_an_event_cut_in_half_is_delivered_by_the_next_watch(fake):
    seen = _Seen()
    cms = fake.store.resource_for("", "v1", "configmaps")
    inf = _informer(fake, seen)
    try:
        fault = fake.add_watch_fault("/configmaps$", "cut", count=1)
        fake.store.drop_watches()
        wait_for(lambda: fault.hits == 1, what="the cut watch")
        fake.store.create(cms, NS, _cm("cut"))
        wait_for(lambda: "cut" in seen.names(), what="the event sent again")
        assert seen.events.count(("ADDED", "cut")) == 1
    finally:
        inf.stop()


def _fill(fake: FakeKube, n: int) -> None:
    cms = fake.store.resource_for("", "v1", "configmaps")
    for i in range(n):
        fake.store.create(cms, NS, _cm(f"cm-{i:05d}"))


def _lists(fake: FakeKube) -> list[dict[str, str]]:
    from urllib.parse import parse_qsl

    return [dict(parse_qsl(r.query)) for r in fake.reads("/configmaps$", watch=False)]


def test_a_big_list_is_read_in_pages_of_500_as_client_go_reads_it(fake):
    _fill(fake, 1203)
    seen = _Seen()
    inf = _informer(fake, seen)
    try:
        assert len(inf.items()) == 1203
        queries = _lists(fake)
        assert [q.get("limit") for q in queries] == ["500", "500", "500"]
        assert ["continue" in q for q in queries] == [False, True, True]
        # The watch resumes from the snapshot the pages were read at: nothing listed again.
        fake.store.create(fake.store.resource_for("", "v1", "configmaps"), NS, _cm("later"))
        wait_for(lambda: "later" in seen.names(), what="an event after the paged list")
        assert len(_lists(fake)) == 3
    finally:
        inf.stop()


def test_an_expired_continue_token_falls_back_to_one_whole_list(fake):
    _fill(fake, 1100)
    # Every continuation is too old (a reader slower than etcd's compaction): paging again
    # from the start would lose the race the same way forever.
    fake.add_fault("GET", "/configmaps$", code=410, query={"continue": ""})
    seen = _Seen()
    inf = _informer(fake, seen)
    try:
        assert len(inf.items()) == 1100
        queries = _lists(fake)
        assert [("limit" in q, "continue" in q) for q in queries] == [
            (True, False), (True, True), (False, False)]
    finally:
        inf.stop()


def test_a_watch_silent_past_its_end_is_taken_for_a_dead_connection_and_replaced(fake):
    seen = _Seen()
    cms = fake.store.resource_for("", "v1", "configmaps")
    # The server ends each watch after 1 s; one still open (and silent) 3 s after that has a
    # dead connection under it. In production: 5-10 min and 30 s. (A healthy watch sends a
    # bookmark every 0.3 s: only a server starved 3 s would pass for a dead one.)
    inf = _informer(fake, seen, watch_timeout=(1, 1), read_margin=3.0)
    try:
        fault = fake.add_watch_fault("/configmaps$", "silent", count=1)
        fake.store.drop_watches()
        wait_for(lambda: fault.hits == 1, what="the silent watch")
        fake.store.create(cms, NS, _cm("meanwhile"))
        wait_for(lambda: "meanwhile" in seen.names(), what="the event, on a new watch")
        assert inf.dead_watches == 1
    finally:
        inf.stop()


def test_an_idle_kind_without_bookmarks_keeps_its_watch_until_the_server_ends_it():
    # An API server on etcd 3.4 sends no bookmarks, and nobody changes this kind: its watch
    # is silent from start to end. Taking silence for a dead connection (150 s against
    # watches of 5-10 min) replaced it 13 times in 13 minutes; here the windows are scaled
    # down 60-fold: watches of 5-6 s, and the silence a dead connection needed was 3 s (the
    # margin a server late to end its watch has, on a busy machine).
    with FakeKube(bookmark_interval=3600.0) as quiet:
        seen = _Seen()
        kube = _kube(quiet)
        inf = Informer(kube, kube.resource("v1", "ConfigMap"), [NS], seen,
                       watch_timeout=(5, 6), read_margin=3.0)
        inf.start()
        try:
            assert inf.wait_synced(HANG_GUARD)
            wait_for(lambda: len(quiet.reads("/configmaps$", watch=True)) >= 3,
                     what="three watches, each ended by the server")
            assert inf.dead_watches == 0
            assert seen.events == []
        finally:
            inf.stop()


def test_a_watch_is_read_past_its_timeout_by_default(fake):
    """The read deadline the shim sets on a watch, with its production windows: silence for as
    long as the watch lasts is a quiet kind, never a dead connection."""
    kube = _kube(fake)
    sent: list[tuple[int, float]] = []
    send = kube._send

    def spy(method, path, query, body, content_type, timeout):
        if query and query.get("watch") == "true":
            sent.append((int(query["timeoutSeconds"]), timeout[1]))
        return send(method, path, query, body, content_type, timeout)

    kube._send = spy  # type: ignore[method-assign]
    inf = Informer(kube, kube.resource("v1", "ConfigMap"), [NS], _Seen())
    inf.start()
    try:
        wait_for(lambda: sent, what="a watch")
        (timeout_seconds, read), *_ = sent
        assert 300 <= timeout_seconds <= 600
        assert read == timeout_seconds + 30
    finally:
        inf.stop()


def test_api_connections_are_kept_alive_as_client_go_keeps_them(fake, tmp_path):
    import socket

    from shim.config import Config
    from shim.main import api_client

    cfg = Config(kubeconfig=str(fake.write_kubeconfig(tmp_path / "kubeconfig")))
    kube = Kube(api_client(cfg), request_timeout=5.0)
    stream = kube.watch(kube.resource("v1", "ConfigMap"), NS, "0", 5)
    try:
        sock = stream._resp.connection.sock
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE) == 30
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL) == 15
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT) == 9
    finally:
        stream.close()
