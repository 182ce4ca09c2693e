"""The SDK's built-in samplers' decisions, without a SamplingResult per span.

The decider makes a span per RPC, thousands a second; under load the SDK's `should_sample`
(a result object, the parent looked up again) was a fifth of what a span cost the server. The
built-in samplers that OTEL_TRACES_SAMPLER names decide on two facts only: the parent's sampled
flag and the trace id. They are recognized here by their descriptions (the SDK's public
`get_description`); any other sampler is asked as usual.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from opentelemetry.sdk.trace.sampling import TraceIdRatioBased
from opentelemetry.trace import SpanContext

# A ParentBased sampler's description, less its root: the SDK's default children (a sampled
# parent samples, one not sampled does not, remote or local).
_PARENT_BASED = ("ParentBased{root:", ",remoteParentSampled:AlwaysOnSampler,"
                 "remoteParentNotSampled:AlwaysOffSampler,localParentSampled:AlwaysOnSampler,"
                 "localParentNotSampled:AlwaysOffSampler}")
_RATIO = ("TraceIdRatioBased{", "}")

# Decides from the parent span context (None for a root span) and the trace id.
QuickSampler = Callable[[SpanContext | None, int], bool]


def _root(description: str) -> Callable[[int], bool] | None:
    if description == "AlwaysOnSampler":
        return lambda trace_id: True
    if description == "AlwaysOffSampler":
        return lambda trace_id: False
    head, tail = _RATIO
    if description.startswith(head) and description.endswith(tail):
        try:
            rate = float(description[len(head):-len(tail)])
        except ValueError:
            return None
        bound = TraceIdRatioBased.get_bound_for_rate(rate)
        limit = TraceIdRatioBased.TRACE_ID_LIMIT
        return lambda trace_id: trace_id & limit < bound
    return None


def quick_sampler(sampler: Any) -> QuickSampler | None:
    """The decision `sampler` makes, as a plain function; None for a sampler not built in."""
    description = sampler.get_description()
    head, tail = _PARENT_BASED
    if description.startswith(head) and description.endswith(tail):
        root = _root(description[len(head):-len(tail)])
        if root is None:
            return None
        return lambda parent, trace_id: (parent.trace_flags.sampled if parent is not None
                                         else root(trace_id))
    plain = _root(description)
    if plain is None:
        return None
    return lambda parent, trace_id: plain(trace_id)
