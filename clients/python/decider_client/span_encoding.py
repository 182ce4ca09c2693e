"""The OTLP span exporters (gRPC and HTTP): spans already written (span_wire.py) are framed
as they are; SDK spans are encoded faster than the SDK does.

The SDK's encoder builds each attribute through several generic layers: ~55 µs a span of
twenty attributes here, more than the span itself costs to make. This one builds the same
protobuf messages directly, reusing the KeyValue of an attribute seen before (most are: the
RPC's service and method, the namespace, the action counts), ~20 µs a span. Its output is
checked against the SDK's encoder in tests/test_span_encoding.py.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
    OTLPSpanExporter as HTTPSpanExporter,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import (
    AnyValue,
    ArrayValue,
    InstrumentationScope,
    KeyValue,
    KeyValueList,
)
from opentelemetry.proto.resource.v1.resource_pb2 import Resource as PbResource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans
from opentelemetry.proto.trace.v1.trace_pb2 import Span as PbSpan
from opentelemetry.proto.trace.v1.trace_pb2 import Status as PbStatus
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.trace import StatusCode

from decider_client.span_wire import WireSpan, export_request

_log = logging.getLogger("opentelemetry.exporter.otlp.proto.http.trace_exporter")

_MAX_CACHED = 8192
_STATUS = {StatusCode.UNSET: PbStatus.STATUS_CODE_UNSET, StatusCode.OK: PbStatus.STATUS_CODE_OK,
           StatusCode.ERROR: PbStatus.STATUS_CODE_ERROR}


def _value(v: Any) -> AnyValue:
    if v is None:
        return AnyValue()
    if isinstance(v, bool):
        return AnyValue(bool_value=v)
    if isinstance(v, int):
        return AnyValue(int_value=v)
    if isinstance(v, float):
        return AnyValue(double_value=v)
    if isinstance(v, str):
        return AnyValue(string_value=v)
    if isinstance(v, bytes):
        return AnyValue(bytes_value=v)
    if isinstance(v, Sequence):
        return AnyValue(array_value=ArrayValue(values=[_value(x) for x in v]))
    if isinstance(v, Mapping):
        return AnyValue(kvlist_value=KeyValueList(
            values=[KeyValue(key=str(k), value=_value(x)) for k, x in v.items()]))
    raise TypeError(f"attribute value of type {type(v).__name__}: {v!r}")


def _flags(parent: Any) -> int:
    """OTLP's span flags: whether the parent's remoteness is known (always), and whether it is
    remote."""
    return 0x100 | (0x200 if parent is not None and parent.is_remote else 0)


class SpanEncoder:
    def __init__(self) -> None:
        self._pairs: dict[tuple[str, Any], KeyValue] = {}

    def _kv(self, key: str, value: Any) -> KeyValue:
        cacheable = isinstance(value, str | int | float | bool)
        if cacheable:
            hit = self._pairs.get((key, value))
            if hit is not None:
                return hit
        kv = KeyValue(key=key, value=_value(value))
        if cacheable:
            if len(self._pairs) >= _MAX_CACHED:
                self._pairs.clear()
            self._pairs[(key, value)] = kv
        return kv

    def _attributes(self, attributes: Any) -> list[KeyValue]:
        return [self._kv(k, v) for k, v in (attributes or {}).items()]

    def _span(self, span: ReadableSpan) -> PbSpan:
        ctx = span.get_span_context()
        out = PbSpan(
            trace_id=ctx.trace_id.to_bytes(16, "big"),
            span_id=ctx.span_id.to_bytes(8, "big"),
            name=span.name,
            kind=span.kind.value + 1,  # OTLP numbers kinds from 1 (UNSPECIFIED is 0)
            start_time_unix_nano=span.start_time or 0,
            end_time_unix_nano=span.end_time or 0,
            attributes=self._attributes(span.attributes),
            dropped_attributes_count=span.dropped_attributes,
            dropped_events_count=span.dropped_events,
            dropped_links_count=span.dropped_links,
            flags=_flags(span.parent),
        )
        if ctx.trace_state:
            out.trace_state = ctx.trace_state.to_header()
        if span.parent is not None:
            out.parent_span_id = span.parent.span_id.to_bytes(8, "big")
        if span.status is not None:
            out.status.CopyFrom(PbStatus(code=_STATUS[span.status.status_code],
                                         message=span.status.description or ""))
        for event in span.events:
            out.events.add(time_unix_nano=event.timestamp, name=event.name,
                           attributes=self._attributes(event.attributes),
                           dropped_attributes_count=event.dropped_attributes)
        for link in span.links:
            lctx = link.context
            out.links.add(trace_id=lctx.trace_id.to_bytes(16, "big"),
                          span_id=lctx.span_id.to_bytes(8, "big"),
                          attributes=self._attributes(link.attributes),
                          dropped_attributes_count=link.dropped_attributes,
                          flags=_flags(lctx))
        return out

    def encode(self, spans: Sequence[ReadableSpan]) -> ExportTraceServiceRequest:
        """Spans grouped by resource, then by instrumentation scope, as the SDK groups them."""
        groups: dict[int, tuple[Any, dict[Any, tuple[Any, list[PbSpan]]]]] = {}
        for span in spans:
            resource = span.resource
            scopes = groups.setdefault(id(resource), (resource, {}))[1]
            scope = span.instrumentation_scope
            key = (scope.name, scope.version, scope.schema_url) if scope else None
            scopes.setdefault(key, (scope, []))[1].append(self._span(span))
        out = ExportTraceServiceRequest()
        for resource, scopes in groups.values():
            rs = ResourceSpans(resource=PbResource(attributes=self._attributes(
                resource.attributes)), schema_url=resource.schema_url or "")
            for scope, pb_spans in scopes.values():
                ss = ScopeSpans(spans=pb_spans, scope=InstrumentationScope())
                if scope is not None:
                    ss.scope.CopyFrom(InstrumentationScope(
                        name=scope.name, version=scope.version or "",
                        attributes=self._attributes(getattr(scope, "attributes", None))))
                    ss.schema_url = scope.schema_url or ""
                rs.scope_spans.append(ss)
            out.resource_spans.append(rs)
        return out


def encode_batch(encoder: SpanEncoder, spans: Sequence[Any]) -> ExportTraceServiceRequest:
    """A batch of ReadableSpans, spans already written (span_wire.WireSpan), or both."""
    written = [s for s in spans if isinstance(s, WireSpan)]
    if not written:
        return encoder.encode(spans)
    out = encoder.encode([s for s in spans if not isinstance(s, WireSpan)])
    out.MergeFromString(export_request(written))
    return out


class FastOTLPSpanExporter(OTLPSpanExporter):
    """The SDK's OTLP/gRPC span exporter (its channel, retries, headers and timeouts) with the
    encoding above, which also takes spans already written (span_wire.py)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._encoder = SpanEncoder()

    def _translate_data(self, data: Sequence[Any]) -> ExportTraceServiceRequest:
        return encode_batch(self._encoder, data)


class FastHTTPSpanExporter(HTTPSpanExporter):
    """The SDK's OTLP/HTTP (protobuf) span exporter (its session, retries, headers, size limit
    and compression) with the encoding above."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._encoder = SpanEncoder()

    def export(self, spans: Sequence[Any]) -> SpanExportResult:
        if not any(isinstance(s, WireSpan) for s in spans):
            return super().export(spans)
        # The SDK's export, less its encoder (opentelemetry-exporter-otlp-proto-http 1.45).
        if self._shutdown:
            return SpanExportResult.FAILURE
        data = encode_batch(self._encoder, spans).SerializeToString()
        if 0 < self._max_request_size < len(data):
            _log.warning("Dropping span batch: serialized size %d bytes exceeds "
                         "max_request_size %d bytes.", len(data), self._max_request_size)
            return SpanExportResult.FAILURE
        result = self._client.export(data)
        return SpanExportResult.SUCCESS if result.success else SpanExportResult.FAILURE
