"""The JSON error answers the middleware sends itself, in the service's error shape."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.types import Send


async def send_error(send: Send, status: int, error: str, detail: str, **extra: Any) -> None:
    """`{"error", "detail", ...}`, closing the connection: a body sent too slowly or too
    large may still be on its way, and after an unhandled error none is worth reusing."""
    body = orjson.dumps({"error": error, "detail": detail, **extra})
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
