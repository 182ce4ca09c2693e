"""A small typed client over the generated stubs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import grpc

from decider.v1 import decider_pb2 as pb
from decider.v1 import decider_pb2_grpc as pb_grpc

DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024


class DeciderClient:
    """Blocking client of the Decider service.

    `target` is a gRPC target ("localhost:50051", "dns:///decider.svc:50051"); pass
    `credentials` (grpc.ssl_channel_credentials(...)) for TLS, otherwise the channel is plaintext.
    """

    def __init__(self, target: str, *, timeout: float = 5.0,
                 credentials: grpc.ChannelCredentials | None = None,
                 max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
                 options: Sequence[tuple[str, Any]] = ()) -> None:
        opts = [("grpc.max_receive_message_length", max_message_bytes),
                ("grpc.max_send_message_length", max_message_bytes), *options]
        self._channel = (grpc.secure_channel(target, credentials, opts) if credentials
                         else grpc.insecure_channel(target, opts))
        self._stub = pb_grpc.DeciderStub(self._channel)
        self.timeout = timeout

    def _timeout(self, timeout: float | None) -> float:
        # None is "the client's default"; 0 is a deadline already past, as gRPC means it (an
        # `or` here turned it into the default 5 s).
        return self.timeout if timeout is None else timeout

    def decide(self, request: pb.DecideRequest, *, timeout: float | None = None,
               metadata: Sequence[tuple[str, str]] | None = None) -> pb.DecideResponse:
        return self._stub.Decide(request, timeout=self._timeout(timeout), metadata=metadata)

    def validate(self, request: pb.ValidateRequest, *, timeout: float | None = None,
                 metadata: Sequence[tuple[str, str]] | None = None) -> pb.ValidateResponse:
        return self._stub.Validate(request, timeout=self._timeout(timeout), metadata=metadata)

    def plan_gang(self, request: pb.PlanGangRequest, *, timeout: float | None = None,
                  metadata: Sequence[tuple[str, str]] | None = None) -> pb.PlanGangResponse:
        return self._stub.PlanGang(request, timeout=self._timeout(timeout), metadata=metadata)

    def pod_sets(self, request: pb.PodSetsRequest, *, timeout: float | None = None,
                 metadata: Sequence[tuple[str, str]] | None = None) -> pb.PodSetsResponse:
        return self._stub.PodSets(request, timeout=self._timeout(timeout), metadata=metadata)

    def simulate(self, request: pb.SimulateRequest, *, timeout: float | None = None,
                 metadata: Sequence[tuple[str, str]] | None = None) -> pb.SimulateResponse:
        return self._stub.Simulate(request, timeout=self._timeout(timeout), metadata=metadata)

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> DeciderClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
