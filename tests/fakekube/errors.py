"""The API server's error answers: an exception carrying the metav1.Status it is sent as, and
the NotFound, Conflict and Invalid statuses the store words as kube-apiserver does.

Apart from the store because every layer of the fake raises them: selectors, per-kind
validation, the store, the HTTP handler, injected faults and the Job simulator.
"""

from __future__ import annotations

from typing import Any

from .resources import ResourceType


class ApiError(Exception):
    """An error the API server answers with a metav1.Status."""

    def __init__(
        self, code: int, reason: str, message: str, details: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details or {}

    def status(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details:
            out["details"] = self.details
        return out


def not_found(rt: ResourceType, name: str) -> ApiError:
    return ApiError(
        404,
        "NotFound",
        f'{rt.resource_label} "{name}" not found',
        {"name": name, "group": rt.group, "kind": rt.plural},
    )


def conflict(rt: ResourceType, name: str, message: str) -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {rt.resource_label} "{name}": {message}',
        {"name": name, "group": rt.group, "kind": rt.plural},
    )


def invalid(rt: ResourceType, name: str, causes: list[tuple[str, str]]) -> ApiError:
    text = ", ".join(f"{field}: {msg}" for field, msg in causes)
    return ApiError(
        422,
        "Invalid",
        f'{rt.kind}.{rt.group or "core"} "{name}" is invalid: {text}',
        {
            "name": name,
            "group": rt.group,
            "kind": rt.kind,
            "causes": [
                {"reason": "FieldValueInvalid", "message": msg, "field": field}
                for field, msg in causes
            ],
        },
    )
