"""The shim's traces and metrics: a reconcile of one JobSet is a span, the parent of a client
span for its Decide call (OpenTelemetry's gRPC client conventions), whose child is the decider's
server span (W3C `traceparent` in the gRPC metadata), and of a span per Kubernetes API call.

Configured like the decider's (decider_telemetry: the standard OTEL_* environment and
`--metrics-port`). Metrics: shim.reconcile.duration, shim.queue.depth, shim.api.requests
(verb, resource, code), shim.api.request.duration, shim.decider.errors (code).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

import grpc
from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.trace import SpanKind, Status, StatusCode

from decider_telemetry import MetricSpec, Telemetry, disabled

DECIDER_SERVICE = "decider.v1.Decider"
# Every status a Decide call can end with but OK: shim.decider.errors has each at 0 from the
# start, so a dashboard's rate() sees the first error.
ERROR_CODES = tuple(code.name for code in grpc.StatusCode if code != grpc.StatusCode.OK)

# Every metric the shim exports (docs/observability.md; the dashboard queries only these).
METRICS = (
    MetricSpec("shim.reconcile.duration", "histogram", "s",
               "One observe, decide, apply pass of a JobSet, by result"),
    MetricSpec("shim.queue.depth", "gauge", "{jobset}", "JobSets waiting for a reconcile pass"),
    MetricSpec("shim.api.requests", "counter", "{request}",
               "Kubernetes API requests (watches excepted), by verb, resource and code"),
    MetricSpec("shim.api.request.duration", "histogram", "s",
               "Kubernetes API request time, Retry-After waits included"),
    MetricSpec("shim.decider.errors", "counter", "{error}",
               "Decide calls that failed, by rpc.grpc.status_code"),
)


def server_address(address: str) -> tuple[str, int | None]:
    """(host, port) of the decider's address as the shim dials it: `host:port`,
    `dns:///host:port`, `[::1]:port`."""
    target = address.split("///", 1)[-1].split("://", 1)[-1]
    for scheme in ("dns:", "ipv4:", "ipv6:"):
        target = target.removeprefix(scheme)
    host, sep, port = target.rpartition(":")
    if not sep or not port.isdigit() or (host.count(":") and not host.startswith("[")):
        return target.strip("[]"), None
    return host.strip("[]"), int(port)


def api_verb(method: str, name: str) -> str:
    """Kubernetes' verb for an HTTP call: a GET of a collection is a list."""
    if method == "GET":
        return "get" if name else "list"
    return {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(
        method, method.lower())


def parse_path(path: str) -> tuple[str, str, str, str]:
    """(namespace, resource, name, subresource) of a REST path such as
    /apis/batch/v1/namespaces/ns/jobs/name/status."""
    parts = [p for p in path.split("?", 1)[0].split("/") if p]
    # Skip "api/<version>" or "apis/<group>/<version>".
    rest = parts[2:] if parts[:1] == ["api"] else parts[3:]
    namespace = ""
    if len(rest) >= 2 and rest[0] == "namespaces" and len(rest) != 2:
        namespace, rest = rest[1], rest[2:]
    elif len(rest) == 2 and rest[0] == "namespaces":
        return "", "namespaces", rest[1], ""
    resource = rest[0] if rest else ""
    name = rest[1] if len(rest) > 1 else ""
    sub = rest[2] if len(rest) > 2 else ""
    return namespace, resource, name, sub


class ShimTelemetry:
    def __init__(self, telemetry: Telemetry | None = None,
                 queue_depth: Callable[[], int] = lambda: 0) -> None:
        self.telemetry = telemetry or disabled()
        meter = self.telemetry.meter
        self.tracer = self.telemetry.tracer

        def depth(options: CallbackOptions) -> list[Observation]:
            return [Observation(queue_depth())]

        made = {spec.name: spec.create(meter, depth if spec.kind == "gauge" else None)
                for spec in METRICS}
        self.reconcile_duration = made["shim.reconcile.duration"]
        self.api_requests = made["shim.api.requests"]
        self.api_duration = made["shim.api.request.duration"]
        self.decider_errors = made["shim.decider.errors"]
        for code in ERROR_CODES:
            self.decider_errors.add(0, {"rpc.grpc.status_code": code})

    @contextlib.contextmanager
    def reconcile(self, namespace: str, name: str) -> Iterator[Any]:
        """The span of one pass; its result attribute is set by the caller (`set_result`)."""
        started = time.monotonic()
        span = self.tracer.start_span("shim.reconcile", kind=SpanKind.INTERNAL, attributes={
            "k8s.namespace.name": namespace, "jobset.name": name})
        token = otel_context.attach(trace.set_span_in_context(span))
        result = ["ok"]
        try:
            yield result
        except BaseException as exc:
            if result[0] == "ok":
                result[0] = type(exc).__name__
            span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
            raise
        finally:
            span.set_attribute("shim.reconcile.result", result[0])
            span.end()
            otel_context.detach(token)
            self.reconcile_duration.record(time.monotonic() - started, {"result": result[0]})

    @contextlib.contextmanager
    def decider_call(self, method: str, address: str) -> Iterator[list[tuple[str, str]]]:
        """A client span of one call to the decider, as OpenTelemetry's gRPC instrumentation
        writes it (name service/method, rpc.system, rpc.service, rpc.method and the integer
        rpc.grpc.status_code): a child of the current span (the reconcile) and the parent of
        the decider's server span, through the `traceparent` (and `tracestate`) metadata it
        yields for the call."""
        if not self.telemetry.tracing:
            yield []
            return
        host, port = server_address(address)
        attributes: dict[str, Any] = {"rpc.system": "grpc", "rpc.service": DECIDER_SERVICE,
                                      "rpc.method": method, "server.address": host}
        if port is not None:
            attributes["server.port"] = port
        span = self.tracer.start_span(f"{DECIDER_SERVICE}/{method}", kind=SpanKind.CLIENT,
                                      attributes=attributes)
        carrier: dict[str, str] = {}
        propagate.inject(carrier, context=trace.set_span_in_context(span))
        code = grpc.StatusCode.OK
        try:
            yield list(carrier.items())
        except grpc.RpcError as exc:
            code = exc.code() if isinstance(exc, grpc.Call) else grpc.StatusCode.UNKNOWN
            span.set_status(Status(StatusCode.ERROR, f"{code.name}: "
                                   f"{exc.details() if isinstance(exc, grpc.Call) else exc}"))
            raise
        except BaseException as exc:
            code = grpc.StatusCode.UNKNOWN
            span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
            raise
        finally:
            span.set_attribute("rpc.grpc.status_code", code.value[0])
            span.end()

    def decider_error(self, code: str) -> None:
        self.decider_errors.add(1, {"rpc.grpc.status_code": code})

    @contextlib.contextmanager
    def api_call(self, method: str, path: str) -> Iterator[list[int]]:
        """Metrics for every API call; a span only inside a reconcile (lease renewals and
        informer lists would otherwise each be a trace of their own)."""
        _, resource, name, sub = parse_path(path)
        verb = api_verb(method, name)
        full = f"{resource}/{sub}" if sub else resource
        span = None
        if self.telemetry.tracing and trace.get_current_span().get_span_context().is_valid:
            span = self.tracer.start_span(f"{verb} {full}", kind=SpanKind.CLIENT, attributes={
                "k8s.verb": verb, "k8s.resource": full, "http.request.method": method,
                "url.path": path.split("?", 1)[0]})
        status = [0]
        started = time.monotonic()
        try:
            yield status
        finally:
            code = str(status[0]) if status[0] else "error"
            attributes = {"verb": verb, "resource": full, "code": code}
            self.api_requests.add(1, attributes)
            self.api_duration.record(time.monotonic() - started, attributes)
            if span is not None:
                if status[0]:
                    span.set_attribute("http.response.status_code", status[0])
                if not status[0] or status[0] >= 400:
                    span.set_status(Status(StatusCode.ERROR, f"HTTP {code}"))
                span.end()
