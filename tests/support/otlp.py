"""Real OTLP receivers for telemetry tests: gRPC (opentelemetry-proto's collector services) and
HTTP (/v1/traces, /v1/metrics, /v1/logs), collecting what arrives over the wire."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import grpc
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2, metrics_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc


class Received:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.traces: list[trace_service_pb2.ExportTraceServiceRequest] = []
        self.metrics: list[metrics_service_pb2.ExportMetricsServiceRequest] = []
        self.logs: list[logs_service_pb2.ExportLogsServiceRequest] = []

    def spans(self) -> list[tuple[str, Any]]:
        """(service.name, span) for every span received."""
        out = []
        with self.lock:
            for req in self.traces:
                for rs in req.resource_spans:
                    service = next((a.value.string_value for a in rs.resource.attributes
                                    if a.key == "service.name"), "")
                    for ss in rs.scope_spans:
                        out.extend((service, span) for span in ss.spans)
        return out

    def metric_names(self) -> set[str]:
        with self.lock:
            return {m.name for req in self.metrics for rm in req.resource_metrics
                    for sm in rm.scope_metrics for m in sm.metrics}

    def data_points(self, name: str) -> list[Any]:
        with self.lock:
            out = []
            for req in self.metrics:
                for rm in req.resource_metrics:
                    for sm in rm.scope_metrics:
                        for m in sm.metrics:
                            if m.name == name:
                                kind = m.WhichOneof("data")
                                out.extend(getattr(m, kind).data_points)
            return out

    def wait(self, predicate: Callable[[], bool], timeout: float = 60.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return True
            time.sleep(0.05)
        return predicate()


class GrpcReceiver:
    """An OTLP/gRPC endpoint on a free loopback port."""

    def __init__(self) -> None:
        self.received = Received()
        received = self.received

        class Traces(trace_service_pb2_grpc.TraceServiceServicer):
            def Export(self, request: Any, context: Any) -> Any:  # noqa: N802
                with received.lock:
                    received.traces.append(request)
                return trace_service_pb2.ExportTraceServiceResponse()

        class Metrics(metrics_service_pb2_grpc.MetricsServiceServicer):
            def Export(self, request: Any, context: Any) -> Any:  # noqa: N802
                with received.lock:
                    received.metrics.append(request)
                return metrics_service_pb2.ExportMetricsServiceResponse()

        class Logs(logs_service_pb2_grpc.LogsServiceServicer):
            def Export(self, request: Any, context: Any) -> Any:  # noqa: N802
                with received.lock:
                    received.logs.append(request)
                return logs_service_pb2.ExportLogsServiceResponse()

        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4),
                                  options=[("grpc.so_reuseport", 0)])
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Traces(), self.server)
        metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server(Metrics(), self.server)
        logs_service_pb2_grpc.add_LogsServiceServicer_to_server(Logs(), self.server)
        self.port = self.server.add_insecure_port("127.0.0.1:0")

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> GrpcReceiver:
        self.server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.stop(None)


class HttpReceiver:
    """An OTLP/HTTP (protobuf) endpoint on a free loopback port."""

    def __init__(self) -> None:
        self.received = Received()
        self.paths: list[str] = []
        received, paths = self.received, self.paths

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                paths.append(self.path)
                kinds: dict[str, tuple[Any, list[Any]]] = {
                    "/v1/traces": (trace_service_pb2.ExportTraceServiceRequest, received.traces),
                    "/v1/metrics": (metrics_service_pb2.ExportMetricsServiceRequest,
                                    received.metrics),
                    "/v1/logs": (logs_service_pb2.ExportLogsServiceRequest, received.logs)}
                if self.path in kinds:
                    message_type, into = kinds[self.path]
                    message = message_type()
                    message.ParseFromString(body)
                    with received.lock:
                        into.append(message)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> HttpReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
