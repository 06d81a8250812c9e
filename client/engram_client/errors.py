"""One error hierarchy: every failure a call can end in is an `EngramError`."""

from __future__ import annotations

from typing import Any

import httpx


class EngramError(Exception):
    """A call that failed: `status` (None when no answer came), the server's error name
    and detail, and its whole error body."""

    status: int | None = None

    def __init__(
        self,
        detail: str,
        *,
        status: int | None = None,
        error: str | None = None,
        body: dict[str, Any] | None = None,
        request_id: str | None = None,
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        if status is not None:
            self.status = status
        self.error = error or type(self).__name__
        self.body = body or {}
        self.request_id = request_id

    @property
    def field(self) -> str | None:
        """The field the server names (422s, some 409s), if any."""
        value = self.body.get("field")
        return value if isinstance(value, str) else None

    def __str__(self) -> str:
        prefix = f"{self.status} {self.error}" if self.status is not None else self.error
        return f"{prefix}: {self.detail}"


class ConnectionFailed(EngramError):
    """No answer: the server is down, unreachable, or hung up before answering."""


class TimedOut(EngramError):
    """A wait gave up: the server answered, but the job it waited on had not ended."""


class BadRequest(EngramError):
    status = 400


class Unauthorized(EngramError):
    status = 401


class Forbidden(EngramError):
    status = 403


class NotFound(EngramError):
    status = 404


class Conflict(EngramError):
    status = 409


class PayloadTooLarge(EngramError):
    status = 413


class InvalidInput(EngramError):
    status = 422

    @property
    def errors(self) -> list[dict[str, Any]]:
        """Every invalid field with its reason, as the server lists them."""
        value = self.body.get("errors")
        return value if isinstance(value, list) else []


class RateLimited(EngramError):
    status = 429


class Unavailable(EngramError):
    status = 503


class ServerError(EngramError):
    """Any other answer of 500 or above."""


_BY_STATUS: dict[int, type[EngramError]] = {
    cls.status: cls
    for cls in (
        BadRequest,
        Unauthorized,
        Forbidden,
        NotFound,
        Conflict,
        PayloadTooLarge,
        InvalidInput,
        RateLimited,
        Unavailable,
    )
}


def from_response(response: httpx.Response) -> EngramError:
    """The error an answer of 400 or above stands for, with the server's name and detail."""
    body: dict[str, Any] = {}
    try:
        parsed = response.json()
        if isinstance(parsed, dict):
            body = parsed
    except ValueError:
        pass
    detail = body.get("detail")
    if not isinstance(detail, str):
        detail = response.text[:200] or response.reason_phrase
    cls = _BY_STATUS.get(response.status_code)
    if cls is None:
        cls = ServerError if response.status_code >= 500 else EngramError
    error = body.get("error")
    return cls(
        detail,
        status=response.status_code,
        error=error if isinstance(error, str) else None,
        body=body,
        request_id=response.headers.get("x-request-id"),
    )


def from_transport(exc: httpx.TransportError, url: str) -> ConnectionFailed:
    """A request that got no answer."""
    reason = str(exc) or type(exc).__name__
    return ConnectionFailed(f"no answer from {url}: {reason}", error="ConnectionFailed")
