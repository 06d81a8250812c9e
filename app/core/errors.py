"""One error hierarchy; every error leaves the service as {"error", "detail", ...}."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

_FIELD = (
    "The part of the request at fault: a body field's path (`steps[0].status`), a query "
    "parameter, a header (`Host`, `Content-Type`), or `body` for the body as a whole; "
    "absent when no one part is"
)


class FieldError(BaseModel):
    """One invalid part of a request."""

    field: str = Field(description=_FIELD.removesuffix("; absent when no one part is"))
    message: str = Field(description="Why the value was refused, for people to read")


class ErrorModel(BaseModel):
    """The one error shape: every 4xx and 5xx answer of the service has this body."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"error": "NotFound", "detail": "episode 'ep_1' not found"}]
        }
    )

    error: str = Field(
        description="The error's name, stable for programs to branch on (NotFound, Conflict, "
        "Unauthorized, Forbidden, PayloadTooLarge, UnsupportedMediaType, UntrustedHost, "
        "CrossOriginRefused, StoreUnavailable, ...)"
    )
    detail: str = Field(description="What went wrong, for people to read")
    field: str | None = Field(default=None, description=_FIELD)
    errors: list[FieldError] | None = Field(
        default=None, description="Every invalid part (422 answers only; absent otherwise)"
    )


class ValidationErrorModel(ErrorModel):
    """A 422: the request was read but a field is invalid; `field` is the first one."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "error": "ValidationError",
                    "detail": "steps[0].status: Input should be 'ok', 'error' or 'timeout'",
                    "field": "steps[0].status",
                    "errors": [
                        {
                            "field": "steps[0].status",
                            "message": "Input should be 'ok', 'error' or 'timeout'",
                        }
                    ],
                }
            ]
        }
    )

    error: str = Field(
        description="`ValidationError` (the request did not match its schema) or "
        "`InvalidInput` (a value the schema allows but the service refuses, e.g. a page size "
        "over the configured maximum)"
    )
    field: str = Field(description=_FIELD.removesuffix("; absent when no one part is"))
    errors: list[FieldError] = Field(
        description="Every invalid part found, the first of them in `field` and `detail`"
    )


class RateLimitedModel(ErrorModel):
    """A 429: over the key's request rate (or too many wrong keys from one address)."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "error": "RateLimited",
                    "detail": "rate limit of this API key exceeded (100 requests/s, bursts "
                    "of 200); retry after 1 s",
                    "retry_after_s": 1,
                }
            ]
        }
    )

    retry_after_s: int = Field(
        ge=1, description="Whole seconds to wait before retrying; also in `Retry-After`"
    )


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
        400: "Malformed request, or a `Host` this service does not serve (UntrustedHost)",
        401: "Missing or invalid API key",
        403: "The key's role does not allow this",
        404: "No such record in this namespace",
        409: "Conflicts with the stored state",
        413: "Over a configured limit",
        422: "Invalid field",
        429: "Over the key's request rate: retry after the Retry-After header's seconds",
        503: "A store is unavailable",
    }
    if 401 in codes:
        # Every authenticated route is rate limited per key (429), and reads its key from
        # the database (503 while that is unavailable).
        codes = (*codes, *(c for c in (429, 503) if c not in codes))
    models: dict[int, type[ErrorModel]] = {422: ValidationErrorModel, 429: RateLimitedModel}
    return {
        code: {
            "model": models.get(code, ErrorModel),
            "description": descriptions.get(code, "Error"),
        }
        for code in codes
    }
