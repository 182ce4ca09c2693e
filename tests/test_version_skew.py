"""A client newer than its decider: what the older contract drops is said, not taken for "absent".

Proto3 drops unknown fields, and the contract reads an unset field as "absent": a decider that
predates PodSet.min_count (824891b) answers a Job with kueue.x-k8s.io/job-min-parallelism: "2"
exactly as one without it, and `decider podsets --server` printed that answer, exit 0, without
a word. The client now reads the server's contract over reflection and names what it lacks.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path

import grpc
import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, duration_pb2, timestamp_pb2
from grpc_reflection.v1alpha import reflection

from decider.contract.limits import DEFAULT
from decider.service import dispatch
from decider.service.server import BackgroundServer
from decider_api.v1 import decider_pb2 as pb
from decider_client import DeciderClient, skew
from support.cli_run import run_cli
from support.waiting import HANG_GUARD

pytestmark = pytest.mark.waits

ROOT = Path(__file__).resolve().parent.parent
# The last commit whose contract had neither PodSet.min_count nor the slice layers.
BEFORE_MIN_COUNT = "19a4247"

JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: pj
  namespace: default
  annotations:
    kueue.x-k8s.io/job-min-parallelism: "2"
spec:
  parallelism: 4
  completions: 4
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox
"""


def _older_contract(drop: dict[str, set[str]]) -> descriptor_pool.DescriptorPool:
    """decider.v1 as an older decider serves it: the named fields of each message removed."""
    file = descriptor_pb2.FileDescriptorProto()
    pb.DESCRIPTOR.CopyToProto(file)
    for message in file.message_type:
        for name in drop.get(message.name, ()):
            (field,) = [f for f in message.field if f.name == name]
            message.field.remove(field)
            if field.proto3_optional:  # its synthetic oneof goes with it
                del message.oneof_decl[field.oneof_index]
                for other in message.field:
                    if other.HasField("oneof_index") and other.oneof_index > field.oneof_index:
                        other.oneof_index -= 1
    pool = descriptor_pool.DescriptorPool()
    for dep in (duration_pb2, timestamp_pb2):
        dep_file = descriptor_pb2.FileDescriptorProto()
        dep.DESCRIPTOR.CopyToProto(dep_file)
        pool.Add(dep_file)
    pool.Add(file)
    return pool


def _serve(pool: descriptor_pool.DescriptorPool | None) -> tuple[grpc.Server, str]:
    """A decider that answers with today's code but announces `pool`'s contract."""
    def unary(name: str, request_type: type) -> grpc.RpcMethodHandler:
        return grpc.unary_unary_rpc_method_handler(
            lambda request, context: dispatch.answer_message(name, request, DEFAULT),
            request_deserializer=request_type.FromString,
            response_serializer=lambda m: m.SerializeToString())

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(skew.SERVICE, {
        "PodSets": unary("PodSets", pb.PodSetsRequest),
        "Decide": unary("Decide", pb.DecideRequest),
    }),))
    if pool is not None:
        reflection.enable_server_reflection((skew.SERVICE, reflection.SERVICE_NAME), server,
                                            pool=pool)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, f"127.0.0.1:{port}"


@pytest.fixture
def older() -> Iterator[str]:
    server, target = _serve(_older_contract({
        "PodSet": {"min_count"},
        "PodSetTopologyRequest": {"podset_slice_required_topology_constraints"},
        "DecideResponse": {"requeue_after"},
        "Options": {"gang_target"},
    }))
    yield target
    server.stop(None)


def test_podsets_from_an_older_decider_names_the_fields_it_never_fills(
        older: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(JOB)
    code, out, err = run_cli(capsys, "podsets", "-f", str(path), "--server", older)
    # The answer is printed as received and the exit code is the call's; the warning says that
    # minCount's absence is the decider's age, not the Job's.
    assert code == 0
    assert '"name": "main"' in out
    assert err == (f"decider: warning: {older} serves an older contract than this client: its "
                   "answer never carries PodSet.min_count, "
                   "PodSetTopologyRequest.podset_slice_required_topology_constraints\n")


def test_a_request_field_an_older_decider_would_drop_is_named(older: str) -> None:
    with DeciderClient(older) as client:
        request = pb.DecideRequest(options=pb.Options(gang_target="volcano",
                                                      feature_gates={"RestartJob": True}))
        gaps = client.contract_gaps("Decide", request)
        assert gaps is not None
        assert gaps.ignored == ("Options.gang_target",)
        assert gaps.answer == ("DecideResponse.requeue_after",)
        # Unset, the same field is nothing to warn about.
        assert client.contract_gaps("Decide", pb.DecideRequest()).ignored == ()


def test_a_decider_of_this_version_has_no_gaps(capsys: pytest.CaptureFixture[str],
                                               tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(JOB)
    with BackgroundServer() as server:
        with DeciderClient(server.target) as client:
            assert not client.contract_gaps("PodSets")
            assert client.contract_gaps("Simulate") == skew.Gaps()
        code, out, err = run_cli(capsys, "podsets", "-f", str(path), "--server", server.target)
    assert (code, err) == (0, "")
    assert '"minCount": 2' in out


def test_without_reflection_nothing_is_known_and_nothing_is_said(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    server, target = _serve(None)
    try:
        with DeciderClient(target) as client:
            assert client.contract_gaps("PodSets") is None
        path = tmp_path / "job.yaml"
        path.write_text(JOB)
        code, _, err = run_cli(capsys, "podsets", "-f", str(path), "--server", target)
        assert (code, err) == (0, "")
    finally:
        server.stop(None)


# ---- a real older decider, from the repository's history -----------------------------------

def _old_tree(tmp_path: Path, commit: str) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    known = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "-q", "--verify",
                            f"{commit}^{{commit}}"], capture_output=True)
    if known.returncode != 0:
        pytest.skip(f"commit {commit} is not in this clone (shallow?)")
    tree = tmp_path / commit
    tree.mkdir()
    # Read-only on the repository: an archive, not a worktree.
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "decider",
                              "clients/python", "proto"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    return tree


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_real_decider_from_before_min_count(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    tree = _old_tree(tmp_path, BEFORE_MIN_COUNT)
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": f"{tree}{os.pathsep}{tree / 'clients' / 'python'}"}
    proc = subprocess.Popen([sys.executable, "-m", "decider.cli", "serve", "--host",
                             "127.0.0.1", "--port", str(port), "--workers", "1"],
                            cwd=tree, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    target = f"127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + HANG_GUARD
        while True:
            try:
                grpc.channel_ready_future(grpc.insecure_channel(target)).result(timeout=0.5)
                break
            except grpc.FutureTimeoutError:
                assert proc.poll() is None and time.monotonic() < deadline, "old decider"
        path = tmp_path / "job.yaml"
        path.write_text(JOB)
        code, out, err = run_cli(capsys, "podsets", "-f", str(path), "--server", target)
        assert code == 0
        assert "\"minCount\": 2" not in out
        assert "never carries PodSet.min_count" in err
    finally:
        proc.terminate()
        proc.wait(10)
