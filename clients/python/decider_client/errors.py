"""Errors of the client side: what it could not read, with the field that was wrong.

ObservationError lives with the shared summarizer (decider_api.summarize), which raises it for
the client and the server alike; it is re-exported here, where clients have always found it.
"""

from __future__ import annotations

from decider_api.summarize import ObservationError

__all__ = ["ObservationError"]
