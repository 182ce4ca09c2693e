"""A small typed client over the generated stubs."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import grpc

from decider_api.tls_files import TLSPaths
from decider_api.v1 import decider_pb2 as pb
from decider_api.v1 import decider_pb2_grpc as pb_grpc
from decider_client import skew
from decider_client.retry import DEFAULT, RetryPolicy
from decider_client.tls_channel import Channels

DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024


class DeciderClient:
    """Blocking client of the Decider service.

    `target` is a gRPC target ("localhost:50051", "dns:///decider.svc:50051"). For TLS pass
    `tls` (TLSPaths: the CA, certificate and key files, read again when they change, for new
    connections) or `credentials` (grpc.ssl_channel_credentials(...), fixed); otherwise the
    channel is plaintext.

    A call that ends UNAVAILABLE or RESOURCE_EXHAUSTED is sent again as `retry` says (the policy
    every client ships, decider_client.retry: the server's pushback honoured, 5 attempts, all
    within the call's timeout); `retries` counts the calls sent again. `retry=NO_RETRY` sends
    each call once.
    """

    def __init__(self, target: str, *, timeout: float = 5.0,
                 credentials: grpc.ChannelCredentials | None = None,
                 max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
                 options: Sequence[tuple[str, Any]] = (), tls: TLSPaths | None = None,
                 tls_check_seconds: float | None = None,
                 retry: RetryPolicy = DEFAULT) -> None:
        opts = [("grpc.max_receive_message_length", max_message_bytes),
                ("grpc.max_send_message_length", max_message_bytes), *options]
        self._channels = Channels(target, pb_grpc.DeciderStub, options=opts,
                                  credentials=credentials, tls=tls,
                                  check_seconds=tls_check_seconds)
        self.timeout = timeout
        self.retry = retry
        self._retries = 0
        self._count_lock = threading.Lock()
        self._server_fields: dict[str, set[int]] | None = None

    @property
    def retries(self) -> int:
        """Calls sent again since the client was made (each retry once)."""
        return self._retries

    def contract_gaps(self, method: str, request: Any = None, *,
                      timeout: float | None = None) -> skew.Gaps | None:
        """What the server does not know of RPC `method` ("Decide", "PodSets", ...) as this
        client has it: the answer's fields it never fills and, given the request, the fields
        it would ignore. Empty when it knows them all; None when it serves no reflection. A
        decider older than this client answers in its older contract, where a field it never
        fills reads as "absent", not "not known" (decider_client/skew.py). The server's contract
        is read once per client."""
        if self._server_fields is None:
            with self._channels.stub():
                self._server_fields = skew.server_fields(self._channels.channel,
                                                         self._timeout(timeout))
        if self._server_fields is None:
            return None
        return skew.gaps(self._server_fields, method, request)

    def _timeout(self, timeout: float | None) -> float:
        # None is "the client's default"; 0 is a deadline already past, as gRPC means it (an
        # `or` here turned it into the default 5 s).
        return self.timeout if timeout is None else timeout

    def _call(self, method: str, request: Any, timeout: float | None,
              metadata: Sequence[tuple[str, str]] | None) -> Any:
        """One RPC under the retry policy. Every attempt runs within the call's one deadline; a
        retry that could only start after it is not waited for: the last attempt's error is
        raised, the server's status, message and trailers intact."""
        budget = self._timeout(timeout)
        deadline = time.monotonic() + budget
        backoffs = 0
        attempt = 1
        while True:
            try:
                with self._channels.stub() as stub:
                    call: Callable[..., Any] = getattr(stub, method)
                    return call(request, timeout=budget, metadata=metadata)
            except grpc.RpcError as exc:
                if attempt >= self.retry.max_attempts:
                    raise
                wait = self.retry.delay(exc.code(), exc.trailing_metadata(),  # type: ignore[attr-defined]
                                        backoffs)
                if wait is None:
                    raise
                seconds, pushed = wait
                backoffs = 0 if pushed else backoffs + 1
                budget = deadline - time.monotonic() - seconds
                if budget <= 0:
                    raise
                time.sleep(seconds)
                with self._count_lock:
                    self._retries += 1
                attempt += 1

    def decide(self, request: pb.DecideRequest, *, timeout: float | None = None,
               metadata: Sequence[tuple[str, str]] | None = None) -> pb.DecideResponse:
        response: pb.DecideResponse = self._call("Decide", request, timeout, metadata)
        return response

    def validate(self, request: pb.ValidateRequest, *, timeout: float | None = None,
                 metadata: Sequence[tuple[str, str]] | None = None) -> pb.ValidateResponse:
        response: pb.ValidateResponse = self._call("Validate", request, timeout, metadata)
        return response

    def plan_gang(self, request: pb.PlanGangRequest, *, timeout: float | None = None,
                  metadata: Sequence[tuple[str, str]] | None = None) -> pb.PlanGangResponse:
        response: pb.PlanGangResponse = self._call("PlanGang", request, timeout, metadata)
        return response

    def pod_sets(self, request: pb.PodSetsRequest, *, timeout: float | None = None,
                 metadata: Sequence[tuple[str, str]] | None = None) -> pb.PodSetsResponse:
        response: pb.PodSetsResponse = self._call("PodSets", request, timeout, metadata)
        return response

    def simulate(self, request: pb.SimulateRequest, *, timeout: float | None = None,
                 metadata: Sequence[tuple[str, str]] | None = None) -> pb.SimulateResponse:
        response: pb.SimulateResponse = self._call("Simulate", request, timeout, metadata)
        return response

    def close(self) -> None:
        self._channels.close()

    def __enter__(self) -> DeciderClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
