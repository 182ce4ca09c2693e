"""The control plane tool itself: a second control plane beside the session's, on ports of
its own, started again on others when a port it was given is taken before it binds, and gone
without a trace when brought down."""

from __future__ import annotations

import shutil
import socket
import tempfile
from pathlib import Path

import pytest

from tools.controlplane import cluster as cp
from tools.controlplane import processes

pytestmark = [pytest.mark.e2e, pytest.mark.waits]


def test_a_second_control_plane_takes_other_ports_when_one_is_taken(e2e, monkeypatch):
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    stolen = taken.getsockname()[1]
    handed: list[list[int]] = []

    def ports(count: int) -> list[int]:
        # The first set names a port someone else holds (here: this test) as the API server's.
        got = processes.free_ports(count)
        if not handed and count == 6:
            got[2] = stolen
        handed.append(got)
        return got

    monkeypatch.setattr(cp, "free_ports", ports)
    directory = Path(tempfile.mkdtemp(prefix="jobset-decider-e2e-second-"))
    second = None
    try:
        second = cp.up(directory, e2e.cluster.version, nodes=1)
        assert len(handed) == 2, handed
        assert second.state.data["ports"]["apiserver"] != stolen
        # The first attempt's logs are kept beside the second's, naming why it was retried.
        first = (directory / "logs" / "kube-apiserver.attempt0").read_text()
        assert "address already in use" in first
        assert second.request("GET", "/version")["gitVersion"] == e2e.cluster.version
        mine = set(second.state.data["ports"].values())
        assert not mine & set(e2e.cluster.state.data["ports"].values())
        records = list(second.state.processes)
    finally:
        taken.close()
        left = second.down() if second is not None else []
        shutil.rmtree(directory, ignore_errors=True)
    assert left == []
    assert processes.leftovers_of(records) == []
    # The session's control plane was not touched.
    assert e2e.cluster.request("GET", "/version")["gitVersion"] == e2e.cluster.version
