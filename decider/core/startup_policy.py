"""InOrder startup policy (KEP-104): one replicated Job at a time, each after the previous started.

"Started" means every replica is ready, succeeded or failed; a replicated Job with zero replicas
has started trivially.
"""

from __future__ import annotations

from typing import Any

from decider.core import conditions
from decider.core import constants as c
from decider.core.state import PassState


def all_replicas_started(replicas: int, status: dict[str, Any]) -> bool:
    return replicas == status["failed"] + status["ready"] + status["succeeded"]


def set_in_progress(st: PassState) -> None:
    conditions.set_condition(st, c.STARTUP_IN_PROGRESS, "True", c.REASON_IN_ORDER_IN_PROGRESS,
                             c.MSG_IN_ORDER_IN_PROGRESS, c.NORMAL)


def set_completed(st: PassState) -> None:
    conditions.set_condition(st, c.STARTUP_COMPLETED, "True", c.REASON_IN_ORDER_COMPLETED,
                             c.MSG_IN_ORDER_COMPLETED, c.NORMAL)
