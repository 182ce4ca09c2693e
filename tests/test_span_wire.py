"""Spans written as OTLP bytes (span_wire.py) and the quick sampling decision (sampling.py) are
exactly what the SDK would have made and decided."""

from __future__ import annotations

import random
import time

import pytest
from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, sampling
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import (
    NonRecordingSpan,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
    TraceState,
    set_span_in_context,
)

from decider.telemetry.facts import span_attributes
from decider_client import telemetry
from decider_client.sampling import quick_sampler
from decider_client.span_batch import WireBatchProcessor
from decider_client.span_encoding import SpanEncoder, encode_batch
from decider_client.span_wire import AttributeWriter, SpanWriter, export_request

RESOURCE = Resource.create({"service.name": "jobset-decider", "replica": 2})
SCOPE = InstrumentationScope("jobset-decider", "1.2.3")
REMOTE = SpanContext(0x0AF7651916CD43DD8448EB211C80319C, 0xB7AD6B7169203331, is_remote=True,
                     trace_flags=TraceFlags(1), trace_state=TraceState([("vendor", "x1")]))
LOCAL = SpanContext(0x1F, 0x2F, is_remote=False, trace_flags=TraceFlags(1))
ATTRIBUTES = {"rpc.system": "grpc", "rpc.grpc.status_code": 3, "negative": -7,
              "huge": 1 << 70, "ratio": 0.25, "ok": True, "one": 1, "text": "naïve ✓",
              "empty": "", "names": ["a", "b"]}


def _pair(parent: SpanContext | None, status: Status | None, attributes: dict,
          trace_state: TraceState | None = None) -> tuple[ReadableSpan, object]:
    """The same span as the SDK holds it and as written here."""
    ctx = SpanContext(0xABC, 0xDEF, is_remote=False, trace_flags=TraceFlags(1),
                      trace_state=trace_state)
    sdk_attributes = {k: str(v) if isinstance(v, int) and v >= 1 << 63 else v
                      for k, v in attributes.items()}
    readable = ReadableSpan("decider.v1.Decider/Decide", ctx, parent, RESOURCE, sdk_attributes,
                            kind=SpanKind.SERVER, status=status or Status(StatusCode.UNSET),
                            start_time=1_700_000_000_000_000_001,
                            end_time=1_700_000_000_000_900_000, instrumentation_scope=SCOPE)
    writer = SpanWriter(RESOURCE, SCOPE)
    wire = writer.span(trace_id=0xABC, span_id=0xDEF, parent=parent,
                       name="decider.v1.Decider/Decide", kind=SpanKind.SERVER.value,
                       start_ns=1_700_000_000_000_000_001, end_ns=1_700_000_000_000_900_000,
                       attributes=writer.attributes.fields(attributes),
                       status_code=status.status_code.name if status else "UNSET",
                       status_message=(status.description or "") if status else "",
                       trace_state=trace_state.to_header() if trace_state else "")
    return readable, wire


@pytest.mark.parametrize("parent", [None, REMOTE, LOCAL], ids=["root", "remote", "local"])
@pytest.mark.parametrize("status", [None, Status(StatusCode.OK),
                                    Status(StatusCode.ERROR, "INVALID_ARGUMENT: spec: bad")],
                         ids=["unset", "ok", "error"])
def test_a_written_span_is_the_sdks_encoding(parent: SpanContext | None,
                                             status: Status | None) -> None:
    readable, wire = _pair(parent, status, ATTRIBUTES,
                           parent.trace_state if parent is not None else None)
    written = ExportTraceServiceRequest.FromString(export_request([wire]))  # type: ignore[list-item]
    # A value past int64 is written as its decimal string (the SDK's encoder refuses it).
    assert written == encode_spans([readable])


def test_attributes_written_apart_concatenate() -> None:
    """The worker writes the decision's attributes, the server the RPC's: one span."""
    server, worker = AttributeWriter(), AttributeWriter()
    rpc = {"rpc.method": "Decide", "rpc.grpc.status_code": 0}
    decision = {"k8s.namespace.name": "default", "decider.actions.total": 2,
                "jobset.terminal_state": "", "decider.actions.CreateJob": True}
    readable, _ = _pair(None, None, {**rpc, "k8s.namespace.name": "default",
                                      "decider.actions.total": 2,
                                      "decider.actions.CreateJob": True})
    writer = SpanWriter(RESOURCE, SCOPE)
    wire = writer.span(trace_id=0xABC, span_id=0xDEF, parent=None,
                       name="decider.v1.Decider/Decide", kind=SpanKind.SERVER.value,
                       start_ns=1_700_000_000_000_000_001, end_ns=1_700_000_000_000_900_000,
                       attributes=server.fields(rpc) + worker.fields(span_attributes(decision)))
    assert ExportTraceServiceRequest.FromString(export_request([wire])) == \
        encode_spans([readable])


def test_the_attribute_cache_keeps_true_and_1_apart() -> None:
    cache = AttributeWriter()
    assert cache.field("x", True) != cache.field("x", 1)
    assert cache.field("x", 1) != cache.field("x", 1.0)
    assert cache.field("x", True) == cache.field("x", True)


def test_a_batch_mixes_written_and_sdk_spans_and_writers() -> None:
    readable, wire = _pair(REMOTE, None, {"a": 1})
    other = SpanWriter(Resource.create({"service.name": "other"}), SCOPE)
    wire2 = other.span(trace_id=1, span_id=2, parent=None, name="x", kind=0, start_ns=1,
                       end_ns=2, attributes=b"")
    batch = encode_batch(SpanEncoder(), [readable, wire, wire2])
    services = sorted(kv.value.string_value for rs in batch.resource_spans
                      for kv in rs.resource.attributes if kv.key == "service.name")
    assert services == ["jobset-decider", "jobset-decider", "other"]
    assert sum(len(ss.spans) for rs in batch.resource_spans for ss in rs.scope_spans) == 3


SAMPLERS = [sampling.ALWAYS_ON, sampling.ALWAYS_OFF, sampling.DEFAULT_ON, sampling.DEFAULT_OFF,
            sampling.TraceIdRatioBased(0.1), sampling.ParentBasedTraceIdRatio(0.3),
            sampling.TraceIdRatioBased(0.0), sampling.ParentBasedTraceIdRatio(1.0)]


@pytest.mark.parametrize("sampler", SAMPLERS, ids=lambda s: s.get_description()[:40])
def test_the_quick_decision_is_the_samplers(sampler: sampling.Sampler) -> None:
    quick = quick_sampler(sampler)
    assert quick is not None
    rng = random.Random(7)
    parents: list[SpanContext | None] = [None]
    for remote in (True, False):
        for flags in (0, 1):
            parents.append(SpanContext(rng.getrandbits(128) or 1, rng.getrandbits(64) or 1,
                                       is_remote=remote, trace_flags=TraceFlags(flags)))
    for _ in range(400):
        for parent in parents:
            trace_id = parent.trace_id if parent is not None else rng.getrandbits(128)
            context = set_span_in_context(NonRecordingSpan(parent)) if parent else Context()
            expected = sampler.should_sample(context, trace_id, "n").decision.is_sampled()
            assert quick(parent, trace_id) == expected


def test_a_sampler_not_built_in_is_asked() -> None:
    class Custom(sampling.Sampler):
        def should_sample(self, *args: object, **kwargs: object) -> sampling.SamplingResult:
            return sampling.SamplingResult(sampling.Decision.DROP)

        def get_description(self) -> str:
            return "Custom"

    assert quick_sampler(Custom()) is None
    assert quick_sampler(sampling.ParentBased(Custom())) is None


def test_setup_writes_spans_only_where_every_exporter_is_otlp(monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    otlp = telemetry.setup("t", env={"OTEL_TRACES_EXPORTER": "otlp"})
    both = telemetry.setup("t", env={"OTEL_TRACES_EXPORTER": "otlp,console"})
    try:
        assert otlp.writes_wire and not both.writes_wire
        assert otlp._quick_sample is not None
    finally:
        otlp.shutdown()
        both.shutdown()



class _Exporter:
    def __init__(self) -> None:
        self.batches: list[list] = []
        self.stopped = False

    def export(self, batch: list) -> None:
        self.batches.append(batch)

    def shutdown(self) -> None:
        self.stopped = True


def _written(n: int) -> list:
    writer = SpanWriter(RESOURCE, SCOPE)
    return [writer.span(trace_id=i + 1, span_id=i + 1, parent=None, name="s", kind=0,
                        start_ns=1, end_ns=2, attributes=b"") for i in range(n)]


def _until(predicate: object, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not predicate() and time.monotonic() < deadline:  # type: ignore[operator]
        time.sleep(0.01)


def test_the_batch_processor_keeps_the_sdks_settings() -> None:
    exporter = _Exporter()
    processor = WireBatchProcessor(exporter, env={"OTEL_BSP_SCHEDULE_DELAY": "60000",
                                                  "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "4",
                                                  "OTEL_BSP_MAX_QUEUE_SIZE": "10"})
    spans = _written(20)
    for span in spans[:3]:
        processor.on_end(span)
    time.sleep(0.2)
    assert exporter.batches == []  # not a whole batch: waits for the (minute-long) timer
    processor.on_end(spans[3])
    _until(lambda: exporter.batches)
    assert exporter.batches == [spans[:4]]  # a whole batch leaves at once
    for span in spans[4:]:
        processor.on_end(span)
    # The queue holds 10; the newest beyond that are dropped and counted.
    assert processor.force_flush(5000)
    exported = [s for batch in exporter.batches for s in batch]
    assert len(exported) + processor.dropped == 20
    assert exported == spans[:len(exported)]
    assert all(len(batch) <= 4 for batch in exporter.batches)
    processor.on_end(_written(1)[0])
    processor.shutdown()
    assert exporter.stopped
    assert sum(len(b) for b in exporter.batches) == len(exported) + 1  # flushed at shutdown
    processor.on_end(_written(1)[0])  # after shutdown: ignored
    assert sum(len(b) for b in exporter.batches) == len(exported) + 1


def test_a_full_queue_drops_the_newest() -> None:
    exporter = _Exporter()
    processor = WireBatchProcessor(exporter, env={"OTEL_BSP_SCHEDULE_DELAY": "60000",
                                                  "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "100",
                                                  "OTEL_BSP_MAX_QUEUE_SIZE": "5"})
    spans = _written(8)
    for span in spans:
        processor.on_end(span)
    assert processor.dropped == 3
    processor.shutdown()
    assert [s for batch in exporter.batches for s in batch] == spans[:5]


def test_the_batch_processor_exports_on_its_timer_and_reads_bad_settings_as_defaults() -> None:
    exporter = _Exporter()
    processor = WireBatchProcessor(exporter, env={"OTEL_BSP_SCHEDULE_DELAY": "50",
                                                  "OTEL_BSP_MAX_QUEUE_SIZE": "-3"})
    assert processor.max_queue == 2048 and processor.max_batch == 512
    span = _written(1)[0]
    processor.on_end(span)
    _until(lambda: exporter.batches)
    assert exporter.batches == [[span]]
    processor.shutdown()


def test_a_lone_surrogate_is_replaced_not_fatal() -> None:
    written = AttributeWriter().fields({"jobset.name": "a\udc80b", "k\ud800": "v"})
    span = SpanWriter(RESOURCE, SCOPE).span(trace_id=1, span_id=2, parent=None, name="n\udc80",
                                           kind=1, start_ns=1, end_ns=2, attributes=written,
                                           status_code="ERROR", status_message="x\udc80")
    [rs] = ExportTraceServiceRequest.FromString(export_request([span])).resource_spans
    [got] = rs.scope_spans[0].spans
    assert got.name == "n?" and got.status.message == "x?"
    assert {kv.key: kv.value.string_value for kv in got.attributes} == {"jobset.name": "a?b",
                                                                       "k?": "v"}


def test_a_failure_writing_telemetry_costs_the_facts_not_the_answer(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from decider.contract.limits import Limits
    from decider.service import dispatch
    from decider_api.v1 import decider_pb2 as pb
    from decider_client import observe
    from support.builders import NOW

    payload = observe.build_decide_request(
        {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
         "metadata": {"name": "t", "namespace": "default", "uid": "u"},
         "spec": {"replicatedJobs": [{"name": "w", "replicas": 1, "template": {"spec": {
             "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}}}]}},
        [], NOW).SerializeToString()
    want = dispatch.WANT_FACTS | dispatch.WANT_SPAN
    assert dispatch.answer("Decide", payload, Limits(), want).span

    def broken(facts: dict) -> bytes:
        raise RuntimeError("a bug")

    monkeypatch.setattr(dispatch, "_span_attributes", broken)
    reply = dispatch.answer("Decide", payload, Limits(), want)
    assert reply.code == dispatch.OK and pb.DecideResponse.FromString(reply.body).actions
    assert (reply.facts, reply.span) == (b"", b"")
