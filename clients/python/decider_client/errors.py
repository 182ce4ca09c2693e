"""Errors of the client side: what it could not read, with the field that was wrong."""

from __future__ import annotations


class ObservationError(ValueError):
    """An object could not be turned into a request; `field` names where."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}" if field else message)
