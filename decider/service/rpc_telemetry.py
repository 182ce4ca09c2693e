"""Each Decider RPC as a server span, metrics and, when asked, a decision-log line.

Spans are the OpenTelemetry SDK's, sampled by the sampler the environment names as they start,
and follow OpenTelemetry's RPC conventions (the attribute names the gRPC instrumentation emits:
rpc.system, rpc.service, rpc.method, integer rpc.grpc.status_code) plus what the decision was
about (decider/telemetry/facts.py), which the worker sends only for a span sampled in. They are
made here rather than by the stock interceptor: that one knows nothing of the decision. The
parent comes from the caller's W3C `traceparent` metadata.

Metrics are the SDK's instruments. Every counter series a dashboard reads exists at 0 from the
start (decider_telemetry/metrics.py says why): each method's outcomes, each action type, the
terminal states, the default restart, dropped log lines; a JobSet's restart rules from its
first decision on. The counters of a decision's facts are rows of decider/telemetry/counters.py.
"""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson
from opentelemetry import propagate
from opentelemetry.context import Context
from opentelemetry.metrics import Observation
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from decider.service.dispatch import (
    INVALID_ARGUMENT,
    METHODS,
    OK,
    STATUS_NAMES,
    WANT_FACTS,
    WANT_METRICS,
    WANT_RECORD,
    Reply,
)
from decider.service.pool import WorkerPool
from decider.telemetry import facts as f
from decider.telemetry.counters import DECISION_COUNTERS, increments
from decider.telemetry.decision_log import DecisionLog, record_line
from decider.version import VERSION
from decider_telemetry import MetricSpec, Telemetry

log = logging.getLogger("decider.rpc")

SERVICE = "decider.v1.Decider"
# Metadata keys the configured propagators read (W3C traceparent, tracestate, baggage...).
_TRACE_FIELDS = frozenset(propagate.get_global_textmap().fields)
_SPAN_NAMES = {method: f"{SERVICE}/{method}" for method in METHODS}
# A span without a caller's trace context starts a trace, whatever context is current.
_ROOT = Context()
OUTCOMES = ("ok", "invalid", "error")


def _span_name(method: str) -> str:
    return _SPAN_NAMES.get(method) or f"{SERVICE}/{method}"


# The metrics of the RPCs and of the server; with the decisions' counters, every metric the
# decider exports (docs/observability.md; the dashboard queries only these).
SERVER_METRICS = (
    MetricSpec("decider.decisions", "counter", "{decision}",
               "Decider RPCs answered, by rpc.method and outcome (ok, invalid, error)"),
    MetricSpec("decider.decision.duration", "histogram", "s",
               "Time to answer a Decider RPC, waiting for a worker included"),
    MetricSpec("decider.decision_log.dropped", "counter", "{record}",
               "Decision-log lines dropped: the writer fell behind or could not write"),
    MetricSpec("decider.workers.busy", "gauge", "{worker}", "Decision workers deciding now"),
    MetricSpec("decider.requests.waiting", "gauge", "{request}",
               "Requests waiting for a free decision worker"),
    MetricSpec("decider.workers.replaced", "observable_counter", "{worker}",
               "Workers killed (deadline, caller gone) or lost, and replaced"),
)
METRICS = (*SERVER_METRICS, *(counter.spec for counter in DECISION_COUNTERS))


def outcome(code: int) -> str:
    return "ok" if code == OK else "invalid" if code == INVALID_ARGUMENT else "error"


def _parent(context: Any) -> Context:
    """The caller's trace context from the RPC's metadata (W3C traceparent...); the root
    context when it sent none."""
    carrier = {k: v for k, v in context.invocation_metadata() or () if isinstance(v, str)}
    # Extracting costs ~15 µs even with nothing to find; most callers send no trace context.
    return propagate.extract(carrier) if carrier.keys() & _TRACE_FIELDS else _ROOT


def _peer(context: Any) -> tuple[str, int | None]:
    return _split_peer(context.peer() or "")


def _split_peer(peer: str) -> tuple[str, int | None]:
    """"ipv4:127.0.0.1:5555" -> ("127.0.0.1", 5555)."""
    kind, _, rest = peer.partition(":")
    if kind in ("ipv4", "ipv6"):
        host, _, port = rest.rpartition(":")
        return host.strip("[]").replace("%5B", "").replace("%5D", ""), int(port) \
            if port.isdigit() else None
    return peer, None


def _peer_attributes(peer: str) -> dict[str, Any]:
    host, port = _split_peer(peer)
    out: dict[str, Any] = {"network.peer.address": host}
    if port is not None:
        out["network.peer.port"] = port
    return out


@dataclass(slots=True)
class Call:
    """One RPC being observed."""

    method: str
    started: float
    started_ns: int
    context: Any
    # What to ask the worker for beside the answer (dispatch.WANT_*).
    want: int = 0
    # The RPC's span, when it is sampled in (None: tracing off or sampled out).
    span: Span | None = None


# What a decision adds, resolved: (the SDK counter, amount, attributes).
_Added = tuple[tuple[Any, int, dict[str, str]], ...]
_CACHE = 1024


class RpcTelemetry:
    def __init__(self, telemetry: Telemetry, pool: WorkerPool,
                 decision_log: DecisionLog | None = None) -> None:
        self.telemetry = telemetry
        self.decision_log = decision_log
        self.tracer = telemetry.tracer
        self.metering = telemetry.metering
        # Whole facts (JSON) for the decision log and a debug line per RPC; a span sampled in
        # asks for them too (start). For the counters alone, only what a decision adds to them
        # (WANT_METRICS), cached here by its bytes.
        self.whole_facts = decision_log is not None or log.isEnabledFor(logging.DEBUG)
        self.want = (WANT_FACTS if self.whole_facts else 0) | (
            WANT_METRICS if telemetry.metering else 0) | (
            WANT_RECORD if decision_log is not None else 0)
        meter = telemetry.meter
        specs = {spec.name: spec for spec in SERVER_METRICS}
        self.decisions = specs["decider.decisions"].counter(
            meter, ("rpc.method", "outcome"), [(m, o) for m in METHODS for o in OUTCOMES])
        self.duration = specs["decider.decision.duration"].create(meter)
        self.dropped = specs["decider.decision_log.dropped"].counter(meter)
        specs["decider.workers.busy"].create(
            meter, lambda options: [Observation(pool.busy)])
        specs["decider.requests.waiting"].create(
            meter, lambda options: [Observation(pool.waiting)])
        specs["decider.workers.replaced"].create(
            meter, lambda options: [Observation(pool.replaced)])
        # Counters of the decisions' facts, by name: (the SDK counter, its label names).
        self._counters = {c.spec.name: (c.spec.counter(meter, c.labels, c.known), c.labels)
                          for c in DECISION_COUNTERS}
        # What a decision adds, as the worker wrote it -> resolved; series made at 0.
        self._counted: dict[bytes, _Added] = {}
        self._zeroed: set[tuple[str, tuple[str, ...]]] = set()
        self._rpc_attributes = {(m, o): {"rpc.method": m, "outcome": o}
                                for m in METHODS for o in OUTCOMES}
        if decision_log is not None:
            decision_log._on_drop = lambda: self.dropped.add(1)

    def start(self, method: str, context: Any) -> Call:
        call = Call(method, time.monotonic(), time.time_ns(), context, self.want)
        if self.telemetry.tracing:
            # Sampled as the span starts: the sampler sees the attributes known then, and a
            # span sampled out asks the worker for nothing.
            span = self.tracer.start_span(
                _span_name(method), context=_parent(context), kind=SpanKind.SERVER,
                attributes={"rpc.system": "grpc", "rpc.service": SERVICE, "rpc.method": method},
                start_time=call.started_ns)
            if span.is_recording():
                call.span = span
                call.want |= WANT_FACTS
        return call

    def finish(self, call: Call, code: int, message: str, reply: Reply | None,
               payload: bytes) -> None:
        elapsed = time.monotonic() - call.started
        facts: dict[str, Any] = {}
        result = outcome(code)
        if self.metering:
            if reply is not None and reply.facts:
                if call.want & WANT_FACTS:
                    facts = orjson.loads(reply.facts)
                    self._add(self._resolve(increments(facts)))
                else:
                    self._count(reply.facts)
            attributes = self._rpc_attributes.get((call.method, result)) or {
                "rpc.method": call.method, "outcome": result}
            self.decisions.add(1, attributes)
            self.duration.record(elapsed, attributes)
        elif reply is not None and reply.facts:
            facts = orjson.loads(reply.facts)
        trace_id = ""
        if call.span is not None:
            trace_id = self._end_span(call, code, message, facts)
        if code != OK:
            log.info("%s from %s: %s: %s", call.method, _peer(call.context)[0],
                     STATUS_NAMES.get(code, str(code)), message)
        elif log.isEnabledFor(logging.DEBUG):
            log.debug("%s %s/%s decision %s: %d actions in %.1f ms", call.method,
                      facts.get(f.NAMESPACE, ""), facts.get(f.JOBSET_NAME, ""),
                      facts.get(f.DECISION_ID, ""), facts.get(f.ACTIONS_TOTAL, 0),
                      elapsed * 1000)
        if self.decision_log is not None:
            self._log_line(call, code, facts, reply, payload, elapsed, trace_id)

    def _end_span(self, call: Call, code: int, message: str, facts: dict[str, Any]) -> str:
        """The RPC's outcome and the decision's facts on its span, which then ends. Returns
        the trace id."""
        span = call.span
        assert span is not None
        span.set_attributes({"rpc.grpc.status_code": code,
                             **_peer_attributes(call.context.peer() or ""),
                             **f.span_attributes(facts)})
        if code != OK:
            span.set_status(Status(StatusCode.ERROR,
                                   f"{STATUS_NAMES.get(code, code)}: {message}"))
        span.end()
        return format(span.get_span_context().trace_id, "032x")

    def _count(self, written: bytes) -> None:
        added = self._counted.get(written)
        if added is None:
            added = self._resolve(orjson.loads(written))
            if len(self._counted) >= _CACHE:
                self._counted.clear()
            self._counted[written] = added
        self._add(added)

    @staticmethod
    def _add(added: _Added) -> None:
        for counter, amount, attributes in added:
            counter.add(amount, attributes)

    def _resolve(self, adds: dict[str, list[list[Any]]]) -> _Added:
        """What counters.increments wrote, as SDK counters and attributes. A series announced
        at 0 is made at once, and only once."""
        out: list[tuple[Any, int, dict[str, str]]] = []
        for name, rows in adds.items():
            entry = self._counters.get(name)
            if entry is None:
                continue
            counter, labels = entry
            for amount, values in rows:
                if len(values) != len(labels):
                    continue
                attributes = dict(zip(labels, values, strict=True))
                if amount:
                    out.append((counter, amount, attributes))
                elif (name, key := tuple(values)) not in self._zeroed:
                    if len(self._zeroed) >= 16 * _CACHE:
                        self._zeroed.clear()  # adding 0 again is harmless
                    self._zeroed.add((name, key))
                    counter.add(0, attributes)
        return tuple(out)

    def _log_line(self, call: Call, code: int, facts: dict[str, Any], reply: Reply | None,
                  payload: bytes, elapsed: float, trace_id: str) -> None:
        assert self.decision_log is not None
        envelope = {
            "time": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "decision_id": facts.get(f.DECISION_ID, ""),
            "trace_id": trace_id,
            "method": call.method,
            "code": STATUS_NAMES.get(code, str(code)),
            "jobset": {"namespace": facts.get(f.NAMESPACE, ""),
                       "name": facts.get(f.JOBSET_NAME, ""), "uid": facts.get(f.JOBSET_UID, "")},
            "input_digest": "sha256:" + hashlib.sha256(payload).hexdigest(),
            "version": VERSION,
            "latency_seconds": round(elapsed, 6),
        }
        self.decision_log.submit(record_line(envelope, reply.record if reply else b""))
