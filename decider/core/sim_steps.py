"""What a simulation is made of: the hypothetical events it applies and the passes it records.

Apart from simulate.py, which runs the passes, and sim_outcome.py, which reads the recorded passes
into an outcome, so that each of the two can name them without importing the other.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from decider.core.model import Plan


@dataclass(frozen=True, slots=True)
class SimEvent:
    """One hypothetical event, `at_seconds` after the simulation's start."""

    type: str
    at_seconds: int = 0
    job: str = ""
    # JobFailed: the Job's failure reason ("" reads as BackoffLimitExceeded) and message.
    reason: str = ""
    message: str = ""


@dataclass(slots=True)
class Step:
    number: int
    time: datetime
    at_seconds: int
    # Applied just before this pass.
    events: list[SimEvent]
    plan: Plan
