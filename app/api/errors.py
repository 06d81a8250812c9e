"""Exception handlers: every error leaves as {"error", "detail", ...}."""

from __future__ import annotations

import logging
import re
from typing import Any

import sqlalchemy.exc as sa_exc
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from app.api.metrics import count_store_error
from app.core.errors import AppError, StoreUnavailable
from app.db.errors import is_store_outage, outage_reason
from app.storage.blobs import BlobStoreError

log = logging.getLogger("engram.errors")

_HTTP_NAMES = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    408: "RequestTimeout",
    413: "PayloadTooLarge",
    415: "UnsupportedMediaType",
}


_UNION_TAG = re.compile(r"[A-Z][A-Za-z0-9]*|[a-z][a-z-]*\[.*\]")


def _field(loc: tuple[Any, ...]) -> str:
    parts = list(loc)
    if parts and parts[0] in ("body", "query", "path", "header"):
        source = parts.pop(0)
        if not parts:
            return str(source)
        if source == "header":
            return str(parts[0])
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif isinstance(part, str) and (part == "[key]" or _UNION_TAG.fullmatch(part)):
            continue  # union members ("StepsAppend", "list[StepCreate]") and key markers
        else:
            out += f".{part}" if out else str(part)
    return out or "body"


def _json(status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(body, status_code=status, headers=headers)


async def _app_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, AppError)
    if exc.status_code >= 500:
        log.error("request failed", extra={"error": type(exc).__name__, "detail": exc.message})
    return _json(exc.status_code, exc.body(), exc.headers or None)


async def _validation_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = []
    for err in exc.errors():
        field = _field(tuple(err.get("loc", ())))
        message = err.get("msg", "invalid")
        if err.get("type") == "json_invalid":
            field, message = "body", f"invalid JSON: {err.get('ctx', {}).get('error', message)}"
        errors.append({"field": field, "message": message})
    first = errors[0] if errors else {"field": "body", "message": "invalid request"}
    body = {
        "error": "ValidationError",
        "detail": f"{first['field']}: {first['message']}",
        "field": first["field"],
        "errors": errors,
    }
    return _json(422, body)


def _invalid_body(message: str) -> JSONResponse:
    errors = [{"field": "body", "message": message}]
    body = {"error": "ValidationError", "detail": f"body: {message}", "field": "body"}
    return _json(422, {**body, "errors": errors})


async def _http_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    cause = exc.__cause__
    if exc.status_code == 400 and isinstance(cause, ValueError):
        # FastAPI's answer to a body it cannot decode (not UTF-8, say): bad input, so a
        # 422 naming the body like every other invalid JSON.
        reason = "not UTF-8 text" if isinstance(cause, UnicodeDecodeError) else str(cause)
        return _invalid_body(f"invalid JSON: {reason}")
    name = _HTTP_NAMES.get(exc.status_code, "HTTPError")
    body = {"error": name, "detail": str(exc.detail)}
    headers = dict(exc.headers) if exc.headers else {}
    if exc.status_code in (408, 413):
        body["field"] = "body"
        # The rest of the body may still be on its way: this connection cannot be reused.
        headers["Connection"] = "close"
    return _json(exc.status_code, body, headers or None)


def _store_unavailable(message: str) -> JSONResponse:
    error = StoreUnavailable(message)
    return _json(error.status_code, error.body(), error.headers)


async def _unhandled(request: Request, exc: Exception) -> JSONResponse:
    if isinstance(exc, BlobStoreError):
        log.warning("payload store unavailable", extra={"reason": str(exc)})
        count_store_error(request, "leveldb")
        return _store_unavailable(f"payload store unavailable: {exc}")
    if is_store_outage(exc):
        reason = outage_reason(exc)
        log.warning(
            "database unavailable", extra={"exc_type": type(exc).__name__, "reason": reason}
        )
        count_store_error(request, "sql")
        return _store_unavailable(f"database unavailable: {reason}")
    log.exception("unhandled error")
    return _json(500, {"error": "InternalError", "detail": "internal error"})


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(AppError, _app_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    # Store failures are handled here rather than by the catch-all, which Starlette
    # re-raises after answering.
    for exc_type in (BlobStoreError, sa_exc.SQLAlchemyError, OSError):
        app.add_exception_handler(exc_type, _unhandled)
    app.add_exception_handler(Exception, _unhandled)
