"""Errors the core reports about its input.

The core never raises anything else on purpose: a caller maps InvalidInput to gRPC
INVALID_ARGUMENT or CLI exit code 2, and every message names the offending field.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class FieldError:
    """One problem with one field, in the shape admission reports it."""

    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}" if self.field else self.message


class InvalidInput(ValueError):
    """The input cannot be decided on; `errors` says which fields and why."""

    def __init__(self, errors: list[FieldError] | FieldError) -> None:
        self.errors = [errors] if isinstance(errors, FieldError) else list(errors)
        super().__init__("; ".join(str(e) for e in self.errors))

    @classmethod
    def at(cls, field: str, message: str) -> InvalidInput:
        return cls(FieldError(field, message))


class TooLarge(Exception):
    """The request, or the answer it would need, is larger than the caller's limits allow.

    Not an error in the input's meaning, so it is not InvalidInput: an adapter maps it to gRPC
    RESOURCE_EXHAUSTED. The core raises it (Options.max_plan_bytes) before building an oversized
    plan, so refusing costs nothing.
    """

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(f"{field}: {message}" if field else message)
