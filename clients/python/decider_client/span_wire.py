"""Finished spans written straight to OTLP's protobuf wire format.

A decider RPC's span is known whole when the RPC ends. Made as an SDK span, it is built as
Python objects (context, status, attributes), queued, and then encoded attribute by attribute
on the exporter's thread; under load that cost ~150 µs of the server's CPU per RPC, most of a
Decide's own cost at small sizes (bench/telemetry_bench.py). Written here as bytes once (the
key-value pairs that repeat, like the RPC's method or an action count, from a cache of their
encodings), a span costs a few microseconds, and a batch is framed by concatenation.

The bytes are the messages of opentelemetry-proto (`trace/v1/trace.proto`); the exporters in
span_encoding.py send them. tests/test_span_wire.py checks them against the SDK's encoder.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.proto.common.v1.common_pb2 import InstrumentationScope, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource as PbResource
from opentelemetry.trace import SpanContext, TraceFlags

_MAX_CACHED = 8192
_FIXED64 = struct.Struct("<Q")
_DOUBLE = struct.Struct("<d")
# What the SDK's batch processor reads of an item before queueing it: that it is sampled.
_SAMPLED = SpanContext(trace_id=1, span_id=1, is_remote=False,
                       trace_flags=TraceFlags(TraceFlags.SAMPLED))
# OTLP span flags: the parent's remoteness is known; and it is remote.
_HAS_IS_REMOTE = 0x100
_IS_REMOTE = 0x200
# Status codes in OTLP's numbering (UNSET 0, OK 1, ERROR 2), from the API's StatusCode names.
_STATUS_CODES = {"UNSET": 0, "OK": 1, "ERROR": 2}


_SMALL = [bytes((n,)) for n in range(128)]


def _varint(n: int) -> bytes:
    if n < 128:
        return _SMALL[n]
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _len_field(number: int, data: bytes) -> bytes:
    """A length-delimited field: a string, bytes or an embedded message."""
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def _utf8(text: str) -> bytes:
    """OTLP strings are UTF-8; a lone surrogate (Python strings may hold one) is replaced
    rather than failing the span, or the worker writing it."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace")


def _string_field(number: int, text: str) -> bytes:
    return _len_field(number, _utf8(text)) if text else b""


def _any_value(v: Any) -> bytes | None:
    """AnyValue of a scalar; None for a type left to the protobuf library."""
    if isinstance(v, bool):
        return b"\x10" + (b"\x01" if v else b"\x00")
    if isinstance(v, int):
        if not -(1 << 63) <= v < (1 << 63):
            # Past int64 (a restart count read from a hostile status, say): said in words,
            # rather than failing the span or its whole batch.
            return _len_field(1, str(v).encode())
        return b"\x18" + _varint(v & 0xFFFFFFFFFFFFFFFF)  # int64: two's complement
    if isinstance(v, float):
        return b"\x21" + _DOUBLE.pack(v)
    if isinstance(v, str):
        return _len_field(1, _utf8(v))
    return None


def _attribute(key: str, value: Any) -> bytes:
    """One KeyValue, as the `attributes` field (9 in Span and Event, 1 in Resource)'s content."""
    encoded = _any_value(value)
    if encoded is None:
        from decider_client.span_encoding import _value

        return KeyValue(key=key, value=_value(value)).SerializeToString()
    return _string_field(1, key) + _len_field(2, encoded)


class AttributeWriter:
    """A span's `attributes` fields (9), each key-value pair written once and then taken from a
    bounded cache by (key, type, value): most repeat from span to span."""

    def __init__(self) -> None:
        self._pairs: dict[tuple[str, type, Any], bytes] = {}

    def field(self, key: str, value: Any) -> bytes:
        cache_key = (key, type(value), value)
        try:
            hit = self._pairs.get(cache_key)
        except TypeError:  # an unhashable value (a list): not cached
            return _len_field(9, _attribute(key, value))
        if hit is None:
            hit = _len_field(9, _attribute(key, value))
            if len(self._pairs) >= _MAX_CACHED:
                self._pairs.clear()
            self._pairs[cache_key] = hit
        return hit

    def fields(self, attributes: Mapping[str, Any]) -> bytes:
        field = self.field
        return b"".join([field(k, v) for k, v in attributes.items()])


class SpanWriter:
    """Writes the spans of one resource and instrumentation scope (one process's tracer)."""

    def __init__(self, resource: Any, scope: Any) -> None:
        self.attributes = AttributeWriter()
        self._names: dict[str, bytes] = {}
        resource_msg = PbResource()
        for key, value in (resource.attributes or {}).items():
            resource_msg.attributes.add().MergeFromString(_attribute(key, value))
        # ResourceSpans, less its scope_spans: resource (1) and schema_url (3).
        self._resource = _len_field(1, resource_msg.SerializeToString())
        self._resource_schema = _string_field(3, resource.schema_url or "")
        scope_msg = InstrumentationScope(name=scope.name, version=scope.version or "")
        for key, value in (getattr(scope, "attributes", None) or {}).items():
            scope_msg.attributes.add().MergeFromString(_attribute(key, value))
        # ScopeSpans, less its spans: scope (1) and schema_url (3).
        self._scope = _len_field(1, scope_msg.SerializeToString())
        self._scope_schema = _string_field(3, scope.schema_url or "")

    def _name(self, name: str) -> bytes:
        """The `name` field (5); span names are few (one per method)."""
        hit = self._names.get(name)
        if hit is None:
            hit = _string_field(5, name)
            if len(self._names) < 256:
                self._names[name] = hit
        return hit

    def span(self, *, trace_id: int, span_id: int, parent: SpanContext | None, name: str,
             kind: int, start_ns: int, end_ns: int, attributes: bytes,
             status_code: str = "UNSET", status_message: str = "",
             trace_state: str = "") -> WireSpan:
        """A finished span without events or links. kind: the API's SpanKind value;
        attributes: written by AttributeWriter.fields (perhaps by several, in several
        processes: the fields concatenate)."""
        parts = [b"\x0a\x10", trace_id.to_bytes(16, "big"), b"\x12\x08", span_id.to_bytes(8, "big")]
        if trace_state:
            parts.append(_string_field(3, trace_state))
        if parent is not None:
            parts += (b"\x22\x08", parent.span_id.to_bytes(8, "big"))
        parts += (self._name(name), b"\x30", _varint(kind + 1),  # OTLP kinds count from 1
                  b"\x39", _FIXED64.pack(start_ns), b"\x41", _FIXED64.pack(end_ns))
        parts.append(attributes)
        code = _STATUS_CODES[status_code]
        if code or status_message:
            status = _string_field(2, status_message) + (b"\x18" + _varint(code) if code else b"")
            parts.append(_len_field(15, status))
        else:
            parts.append(b"\x7a\x00")  # an empty status (UNSET), present as the SDK writes it
        # flags (16): fixed32.
        flags = _HAS_IS_REMOTE | (_IS_REMOTE if parent is not None and parent.is_remote else 0)
        parts += (b"\x85\x01", flags.to_bytes(4, "little"))
        return WireSpan(b"".join(parts), self)

    def frame(self, spans: Sequence[bytes]) -> bytes:
        """One ResourceSpans field (1) of an ExportTraceServiceRequest holding `spans`."""
        scope_spans = self._scope + b"".join(_len_field(2, s) for s in spans) + \
            self._scope_schema
        return _len_field(1, self._resource + _len_field(2, scope_spans) + self._resource_schema)


class WireSpan:
    """A span already written: what the SDK's batch span processor queues and hands to an
    exporter of span_encoding.py in place of a ReadableSpan."""

    __slots__ = ("data", "writer")
    context = _SAMPLED

    def __init__(self, data: bytes, writer: SpanWriter) -> None:
        self.data = data
        self.writer = writer


def export_request(spans: Sequence[WireSpan]) -> bytes:
    """ExportTraceServiceRequest bytes for written spans, grouped by their writer."""
    groups: dict[SpanWriter, list[bytes]] = {}
    for span in spans:
        groups.setdefault(span.writer, []).append(span.data)
    return b"".join(writer.frame(datas) for writer, datas in groups.items())
