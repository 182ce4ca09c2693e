"""Each Decider RPC as a server span, metrics and, when asked, a decision-log line.

Spans follow OpenTelemetry's RPC conventions (the attribute names the gRPC instrumentation emits:
rpc.system, rpc.service, rpc.method, integer rpc.grpc.status_code) plus what the decision was about
(decider/telemetry/facts.py). They are made here rather than by the stock interceptor: that one cost
~40% of throughput and knows nothing of the decision. The parent comes from the caller's W3C
`traceparent` metadata.
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
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.trace import SpanKind, Status, StatusCode

from decider.service.dispatch import (
    INVALID_ARGUMENT,
    METHODS,
    OK,
    STATUS_NAMES,
    WANT_FACTS,
    WANT_METRICS,
    WANT_RECORD,
    WANT_SPAN,
    Reply,
)
from decider.service.pool import WorkerPool
from decider.telemetry import facts as f
from decider.telemetry.decision_log import DecisionLog, record_line
from decider.version import VERSION
from decider_client.telemetry import Sampled, Telemetry
from decider_client.telemetry_metrics import MetricSpec

log = logging.getLogger("decider.rpc")

SERVICE = "decider.v1.Decider"
# Metadata keys the configured propagators read (W3C traceparent, tracestate, baggage...).
_TRACE_FIELDS = frozenset(propagate.get_global_textmap().fields)
_SPAN_NAMES = {method: f"{SERVICE}/{method}" for method in METHODS}


def _span_name(method: str) -> str:
    return _SPAN_NAMES.get(method) or f"{SERVICE}/{method}"

# Every metric the decider exports (README "Observability"; the dashboard queries only these).
METRICS = (
    MetricSpec("decider.decisions", "observable_counter", "{decision}",
               "Decider RPCs answered, by rpc.method and outcome (ok, invalid, error)"),
    MetricSpec("decider.decision.duration", "histogram", "s",
               "Time to answer a Decider RPC, waiting for a worker included"),
    MetricSpec("decider.actions", "observable_counter", "{action}",
               "Actions planned, by action.type"),
    MetricSpec("decider.restarts", "observable_counter", "{restart}",
               "JobSet restarts decided, by failure_policy.action and failure_policy.rule"),
    MetricSpec("decider.jobsets.finished", "observable_counter", "{jobset}",
               "JobSets decided to have finished, by terminal_state"),
    # Upstream's metric of KEP-1186 (#1320), by its name and labels.
    MetricSpec("jobset.active_deadline_exceeded", "observable_counter", "{jobset}",
               "JobSets decided to fail for their activeDeadlineSeconds, by jobset_name and "
               "namespace"),
    MetricSpec("decider.decision_log.dropped", "observable_counter", "{record}",
               "Decision-log lines dropped: the writer fell behind or could not write"),
    MetricSpec("decider.workers.busy", "gauge", "{worker}", "Decision workers deciding now"),
    MetricSpec("decider.requests.waiting", "gauge", "{request}",
               "Requests waiting for a free decision worker"),
    MetricSpec("decider.workers.replaced", "observable_counter", "{worker}",
               "Workers killed (deadline, caller gone) or lost, and replaced"),
)


def outcome(code: int) -> str:
    return "ok" if code == OK else "invalid" if code == INVALID_ARGUMENT else "error"


def _parent(context: Any) -> Context | None:
    """The caller's trace context from the RPC's metadata (W3C traceparent...); None when it
    sent none (a root span)."""
    carrier = {k: v for k, v in context.invocation_metadata() or () if isinstance(v, str)}
    # Extracting costs ~15 µs even with nothing to find; most callers send no trace context.
    return propagate.extract(carrier) if carrier.keys() & _TRACE_FIELDS else None


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
    # The span's trace, decided as the RPC starts; None: no span (off or sampled out).
    sampled: Sampled | None = None


class _Tally:
    """Counts by attribute set, read by observable counters at export time: an increment here
    costs a dictionary update, where a synchronous SDK counter costs microseconds per call."""

    def __init__(self, keys: tuple[str, ...]) -> None:
        self.keys = keys
        self.counts: dict[tuple[str, ...], int] = {}

    def add(self, amount: int, *values: str) -> None:
        self.counts[values] = self.counts.get(values, 0) + amount

    def observe(self, options: CallbackOptions) -> list[Observation]:
        return [Observation(n, dict(zip(self.keys, values, strict=True)))
                for values, n in list(self.counts.items())]


class RpcTelemetry:
    def __init__(self, telemetry: Telemetry, pool: WorkerPool,
                 decision_log: DecisionLog | None = None) -> None:
        self.telemetry = telemetry
        self.decision_log = decision_log
        # Whole facts (JSON) for the decision log, a debug line per RPC and spans the SDK
        # builds; for the counters alone, only theirs (WANT_METRICS), which _count caches by
        # their bytes. Spans written as OTLP bytes (span_wire.py) take the facts as attributes
        # the worker wrote (WANT_SPAN), asked per RPC and only for a span sampled in (start).
        self.wire = telemetry.tracing and telemetry.writes_wire
        self.whole_facts = decision_log is not None or log.isEnabledFor(logging.DEBUG) or (
            telemetry.tracing and not self.wire)
        self.want = (WANT_FACTS if self.whole_facts else 0) | (
            WANT_METRICS if telemetry.metering else 0) | (
            WANT_RECORD if decision_log is not None else 0)
        # The counters' facts, as the worker wrote them -> the increments they make.
        self._counted: dict[bytes, tuple[tuple[_Tally, int, tuple[str, ...]], ...]] = {}
        self.decisions = _Tally(("rpc.method", "outcome"))
        self.actions = _Tally(("action.type",))
        self.restarts = _Tally(("failure_policy.action", "failure_policy.rule"))
        self.finished = _Tally(("terminal_state",))
        self.deadlines = _Tally(("jobset_name", "namespace"))
        self.dropped = _Tally(())
        meter = telemetry.meter
        callbacks: dict[str, Any] = {
            "decider.decisions": self.decisions.observe,
            "decider.actions": self.actions.observe,
            "decider.restarts": self.restarts.observe,
            "decider.jobsets.finished": self.finished.observe,
            "jobset.active_deadline_exceeded": self.deadlines.observe,
            "decider.decision_log.dropped": self.dropped.observe,
            "decider.workers.busy": lambda options: [Observation(pool.busy)],
            "decider.requests.waiting": lambda options: [Observation(pool.waiting)],
            "decider.workers.replaced": lambda options: [Observation(pool.replaced)],
        }
        for spec in METRICS:
            if spec.kind == "histogram":
                # Recorded on every RPC: aggregated here where the readers allow.
                self.duration = telemetry.histogram(spec, ("rpc.method", "outcome"))
            else:
                spec.create(meter, callbacks.get(spec.name))
        if decision_log is not None:
            decision_log._on_drop = lambda: self.dropped.add(1)
        # (method, status code, peer) -> those span attributes, written (_fields).
        self._written: dict[tuple[str, int, str], bytes] = {}

    def start(self, method: str, context: Any) -> Call:
        call = Call(method, time.monotonic(), time.time_ns(), context, self.want)
        if self.telemetry.tracing:
            # Sampled as the span starts, as a tracer does: a span sampled out asks the worker
            # for nothing, and the sampler sees the attributes known at the start.
            call.sampled = self.telemetry.sample(
                _span_name(method), SpanKind.SERVER, _parent(context),
                {"rpc.system": "grpc", "rpc.service": SERVICE, "rpc.method": method})
            if call.sampled is not None and self.wire:
                call.want |= WANT_SPAN
        return call

    def finish(self, call: Call, code: int, message: str, reply: Reply | None,
               payload: bytes) -> None:
        elapsed = time.monotonic() - call.started
        facts: dict[str, Any] = {}
        if reply is not None and reply.facts:
            if self.whole_facts:
                facts = orjson.loads(reply.facts)
                self._add(self._increments(facts))
            else:
                self._count(reply.facts)
        result = outcome(code)
        self.decisions.add(1, call.method, result)
        if self.telemetry.metering:
            self.duration.record(elapsed, call.method, result)
        trace_id = ""
        if call.sampled is not None:
            trace_id = self._span(call, code, message, facts, reply.span if reply else b"")
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

    def _span(self, call: Call, code: int, message: str, facts: dict[str, Any],
              written: bytes) -> str:
        """The RPC's span, made once its outcome is known: one set of attributes instead of
        several updates of a live span. Returns the trace id."""
        assert call.sampled is not None
        attributes = {"rpc.system": "grpc", "rpc.service": SERVICE, "rpc.method": call.method,
                      "rpc.grpc.status_code": code}
        status = None
        if code != OK:
            status = Status(StatusCode.ERROR, f"{STATUS_NAMES.get(code, code)}: {message}")
        name = _span_name(call.method)
        if self.telemetry.writes_wire:
            # Every attribute as OTLP bytes: the RPC's and the peer's from caches here, the
            # decision's as the worker wrote them (dispatch.WANT_SPAN).
            fields = self._fields(attributes, call.context.peer() or "") + written
            trace_id = self.telemetry.record_span(call.sampled, name, SpanKind.SERVER,
                                                  attributes, call.started_ns, time.time_ns(),
                                                  status, written=fields)
        else:
            def more() -> dict[str, Any]:
                return {**_peer_attributes(call.context.peer() or ""),
                        **f.span_attributes(facts)}

            trace_id = self.telemetry.record_span(call.sampled, name, SpanKind.SERVER,
                                                  attributes, call.started_ns, time.time_ns(),
                                                  status, more)
        return format(trace_id, "032x")

    def _fields(self, attributes: dict[str, Any], peer: str) -> bytes:
        """The RPC's and the peer's span attributes, written: both repeat from RPC to RPC (a
        method and a status; a client's connection)."""
        key = (attributes["rpc.method"], attributes["rpc.grpc.status_code"], peer)
        hit = self._written.get(key)
        if hit is None:
            hit = self.telemetry.write_attributes({**attributes, **_peer_attributes(peer)})
            if len(self._written) >= 4096:
                self._written.clear()
            self._written[key] = hit
        return hit

    def _count(self, written: bytes) -> None:
        increments = self._counted.get(written)
        if increments is None:
            increments = self._increments(orjson.loads(written))
            if len(self._counted) >= 1024:
                self._counted.clear()
            self._counted[written] = increments
        self._add(increments)

    @staticmethod
    def _add(increments: tuple[tuple[_Tally, int, tuple[str, ...]], ...]) -> None:
        for tally, amount, values in increments:
            tally.add(amount, *values)

    def _increments(self, facts: dict[str, Any]) -> tuple[tuple[_Tally, int, tuple[str, ...]],
                                                          ...]:
        """What a decision's facts add to the counters."""
        out: list[tuple[_Tally, int, tuple[str, ...]]] = []
        for key, count in facts.items():
            if key.startswith(f.ACTION_COUNT) and key != f.ACTIONS_TOTAL:
                out.append((self.actions, count, (key[len(f.ACTION_COUNT):],)))
        added = facts.get(f.RESTARTS_AFTER, 0) - facts.get(f.RESTARTS_BEFORE, 0)
        if added > 0:
            out.append((self.restarts, added, (facts.get(f.FAILURE_ACTION, ""),
                                               facts.get(f.FAILURE_RULE, ""))))
        if facts.get(f.TERMINAL_STATE) and not facts.get(f.TERMINAL_BEFORE):
            out.append((self.finished, 1, (facts[f.TERMINAL_STATE],)))
        if facts.get(f.DEADLINE_EXCEEDED):
            out.append((self.deadlines, 1, (str(facts.get(f.JOBSET_NAME, "")),
                                            str(facts.get(f.NAMESPACE, "")))))
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
