"""The Decider service's methods: each request type, its answer type, and the contract function
that answers it. A transport (the gRPC server's workers, the CLI in-process, the webhook) looks a
method up here; the answers themselves live beside this module, one per method."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from google.protobuf.message import Message

from decider.contract import convert, gang, simulate, validate
from decider.contract.limits import Limits
from decider.core.errors import InvalidInput
from decider_api.v1 import decider_pb2 as pb


@dataclass(frozen=True, slots=True)
class Method:
    name: str
    request: type[Message]
    response: type[Message]
    answer: Callable[[Any, Limits], Message]


METHODS: dict[str, Method] = {m.name: m for m in (
    Method("Decide", pb.DecideRequest, pb.DecideResponse, convert.decide_response),
    Method("Validate", pb.ValidateRequest, pb.ValidateResponse, validate.validate_response),
    Method("PlanGang", pb.PlanGangRequest, pb.PlanGangResponse, gang.plan_gang_response),
    Method("PodSets", pb.PodSetsRequest, pb.PodSetsResponse, gang.pod_sets_response),
    Method("Simulate", pb.SimulateRequest, pb.SimulateResponse, simulate.simulate_response),
)}


def answer_message(method: str, request: Any, limits: Limits) -> Message:
    """The answer to a parsed request; raises InvalidInput or TooLarge."""
    try:
        return METHODS[method].answer(request, limits)
    except RecursionError:
        # json_input bounds nesting, so this would be a recursive step the bound does not
        # cover; still the input's fault, not the server's.
        raise InvalidInput.at("request", "objects are nested too deeply") from None
