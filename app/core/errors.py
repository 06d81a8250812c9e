"""One error hierarchy; every error leaves the service as {"error", "detail", ...}."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


class FieldError(BaseModel):
    field: str
    message: str


class ErrorModel(BaseModel):
    """The one error shape (a 422 always lists its errors)."""

    error: str
    detail: str
    field: str | None = None
    errors: list[FieldError] | None = None


class AppError(Exception):
    status_code = 500

    def __init__(self, message: str, *, status_code: int | None = None, **extra: Any) -> None:
        super().__init__(message)
        self.message = message
        if status_code is not None:
            self.status_code = status_code
        self.extra = extra
        self.headers: dict[str, str] = {}

    def body(self) -> dict[str, Any]:
        return {"error": type(self).__name__, "detail": self.message, **self.extra}


class BadRequest(AppError):
    status_code = 400


class Unauthorized(AppError):
    status_code = 401

    def __init__(self, message: str, **extra: Any) -> None:
        super().__init__(message, **extra)
        self.headers = {"WWW-Authenticate": "Bearer"}


class Forbidden(AppError):
    status_code = 403


class NotFound(AppError):
    status_code = 404


class Conflict(AppError):
    status_code = 409


class PayloadTooLarge(AppError):
    status_code = 413


class InvalidInput(AppError):
    status_code = 422

    def body(self) -> dict[str, Any]:
        # Every 422 lists its errors, as a request's validation errors do.
        body = super().body()
        field = body.setdefault("field", "body")
        message = self.message.removeprefix(f"{field}: ")
        body.setdefault("errors", [{"field": field, "message": message}])
        return body


class StoreUnavailable(AppError):
    status_code = 503

    def __init__(self, message: str, **extra: Any) -> None:
        super().__init__(message, **extra)
        # A failing store is mostly back within seconds (a lock released, room on disk).
        self.headers = {"Retry-After": "1"}


class StartupRefused(RuntimeError):
    """Raised before serving when the configuration is unsafe (protected mode)."""


def error_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses=` entries for the given status codes, all in the one error shape."""
    descriptions = {
        400: "Malformed request",
        401: "Missing or invalid API key",
        403: "The key's role does not allow this",
        404: "No such record in this namespace",
        409: "Conflicts with the stored state",
        413: "Over a configured limit",
        422: "Invalid field",
        429: "Over the key's request rate: retry after the Retry-After header's seconds",
        503: "A store is unavailable",
    }
    if 401 in codes and 429 not in codes:
        codes = (*codes, 429)  # every authenticated route is rate limited per key
    return {
        code: {"model": ErrorModel, "description": descriptions.get(code, "Error")}
        for code in codes
    }
