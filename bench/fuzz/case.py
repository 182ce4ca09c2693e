"""What one fuzz call is: the RPC it goes to, its bytes, its deadline, the seed it came from.

The record the generators hand to the served run, the in-process run and the findings; its own
module so that sending and saving a case need nothing of how it was made.
"""

from __future__ import annotations

from dataclasses import dataclass, field

METHODS = ("Decide", "Simulate", "Validate", "PlanGang", "PodSets")
WEBHOOK = ("Webhook/mutate", "Webhook/validate")
LONG_TIMEOUT = 120.0  # a call still unanswered after this is a hang


@dataclass
class Case:
    method: str
    payload: bytes
    timeout: float
    note: str
    gates: dict[str, bool] = field(default_factory=dict)
