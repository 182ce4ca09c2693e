"""The fast OTLP span encoding gives exactly the messages the SDK's encoder gives."""

from __future__ import annotations

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import (
    Link,
    NonRecordingSpan,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
    TraceState,
    set_span_in_context,
)

from decider_client.span_encoding import SpanEncoder

REMOTE = SpanContext(trace_id=0x0AF7651916CD43DD8448EB211C80319C, span_id=0xB7AD6B7169203331,
                     is_remote=True, trace_flags=TraceFlags(1),
                     trace_state=TraceState([("vendor", "x1")]))


def _spans() -> list:
    out = InMemorySpanExporter()
    for service in ("jobset-decider", "decider-shim"):
        provider = TracerProvider(resource=Resource.create({"service.name": service}),
                                  shutdown_on_exit=False)
        provider.add_span_processor(SimpleSpanProcessor(out))
        for scope in ("jobset-decider", "other"):
            tracer = provider.get_tracer(scope, "1.2.3")
            attrs = {"rpc.system": "grpc", "rpc.grpc.status_code": 3, "ratio": 0.5,
                     "ok": True, "names": ["a", "b"], "counts": [1, 2]}
            root = tracer.start_span("decider.v1.Decider/Decide", kind=SpanKind.SERVER,
                                     context=set_span_in_context(NonRecordingSpan(REMOTE)),
                                     attributes=attrs)
            root.add_event("retry", {"attempt": 2})
            root.set_status(Status(StatusCode.ERROR, "INVALID_ARGUMENT: spec: bad"))
            child = tracer.start_span("create jobs", kind=SpanKind.CLIENT,
                                      context=set_span_in_context(root),
                                      links=[Link(REMOTE, {"why": "batch"})])
            child.set_status(Status(StatusCode.OK))
            child.end()
            root.end()
            bare = tracer.start_span("internal")
            bare.end()
    return list(out.get_finished_spans())


def test_the_encoding_is_the_sdks() -> None:
    spans = _spans()
    assert len(spans) == 12
    encoder = SpanEncoder()
    assert encoder.encode(spans) == encode_spans(spans)
    # Again, now from the cache of attribute pairs.
    assert encoder.encode(spans) == encode_spans(spans)
    assert encoder.encode(spans).SerializeToString(deterministic=True) == \
        encode_spans(spans).SerializeToString(deterministic=True)
