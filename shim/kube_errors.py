"""What the API server's refusals say: the error of one request, on one line, and the
message and reason of the Status it answered with; and the kind no API server serves.

Apart from the client (kube.py) because the apply step and the informers read the reason and
message of a refusal they caught, and raise the same error for a watch's ERROR event.
"""

from __future__ import annotations

import json
from typing import Any

from kubernetes.client.exceptions import ApiException


class ResourceNotServed(Exception):
    """The API server does not serve this apiVersion/kind."""


class KubeError(ApiException):
    """The API server's error answer to one request. Said on one line, naming the request and
    the server's own message: the client's ApiException prints the response's headers and body
    over several lines, which is what every retry warning of the shim would have logged."""

    def __init__(self, method: str, path: str, http_resp: Any = None, body: str | None = None,
                 status: int | None = None, reason: str | None = None) -> None:
        super().__init__(status=status, reason=reason, http_resp=http_resp, body=body)
        self.method = method
        self.path = path

    def __str__(self) -> str:
        head = f"{self.method} {self.path}: " if self.method else ""
        text = f"{head}{self.status} {self.reason or ''}".rstrip()
        message = status_message(self)
        return f"{text}: {message}" if message and message != self.reason else text


def status_message(exc: ApiException) -> str:
    """The message of the Status the API server answered with (or the start of a body that is
    not one), on one line."""
    body = exc.body or ""
    try:
        decoded = json.loads(body)
    except ValueError:
        decoded = None
    if isinstance(decoded, dict):
        body = str(decoded.get("message") or "")
    line = " ".join(body.split())
    return line if len(line) <= _MAX_MESSAGE else line[:_MAX_MESSAGE] + "..."


_MAX_MESSAGE = 300


def status_reason(exc: ApiException) -> str:
    try:
        return str(json.loads(exc.body or "{}").get("reason", ""))
    except (ValueError, AttributeError):
        return ""
