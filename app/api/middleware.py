"""Pure ASGI middleware: request ids, access log, body-size limit, security headers."""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import re
import time
from collections.abc import Callable, Generator
from typing import Any

import orjson
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.core.logging import request_id_var
from app.core.metrics import UNMATCHED, Metrics

log = logging.getLogger("engram.access")
errors_log = logging.getLogger("engram.errors")
# An incoming X-Request-Id is echoed and logged only if it is short and plain; any other
# value (control characters, quotes, kilobytes) is replaced by an id of our own.
REQUEST_ID = re.compile(rb"[A-Za-z0-9._:\-]{1,128}")
# Request ids made here: 32 hex digits, a random prefix per process and a counter (unique
# without a uuid4 per request, which cost ~3% of a small request's time).
_ID_PREFIX = os.urandom(8).hex()
_ID_COUNTER = itertools.count(1)


def _new_id_prefix() -> None:
    global _ID_PREFIX
    _ID_PREFIX = os.urandom(8).hex()


os.register_at_fork(after_in_child=_new_id_prefix)
CLIENT_CLOSED = 499

SECURITY_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
]


class BodyTimeout(HTTPException):
    """The body did not arrive within the limit: a stalled or deliberately slow client."""

    def __init__(self, seconds: float) -> None:
        super().__init__(408, f"request body not received within {seconds:g} s")


class BodyTooLarge(HTTPException):
    """Raised while the body streams in; FastAPI passes HTTPExceptions through to the handler."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"request body over the limit of {limit} bytes")


def _error(status: int, error: str, detail: str, **extra: Any) -> tuple[dict[str, Any], bytes]:
    body = orjson.dumps({"error": error, "detail": detail, **extra})
    start = {
        "type": "http.response.start",
        "status": status,
        "headers": [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
        ],
    }
    return start, body


async def _receive_by(receive: Receive, deadline: float, seconds: float) -> Message:
    """receive(), cut off at the deadline (BodyTimeout). A message that is already there,
    as a small body usually is, is taken without arming a timer: asyncio's timeout costs
    ten times the read (about 5 us, once per request with a body)."""
    steps = receive().__await__()
    try:
        waiting_on = steps.send(None)
    except StopIteration as done:
        message: Message = done.value
        return message
    try:
        async with asyncio.timeout_at(deadline):
            return await _Rest(steps, waiting_on)
    except TimeoutError:
        raise BodyTimeout(seconds) from None


class _Rest:
    """The rest of an awaitable whose first step was taken by hand: it hands the task what
    that step waits on, then goes on as `yield from` would (values and exceptions)."""

    __slots__ = ("_steps", "_first")

    def __init__(self, steps: Generator[Any, Any, Message], first: Any) -> None:
        self._steps = steps
        self._first = first

    def __await__(self) -> Generator[Any, Any, Message]:
        steps, signal = self._steps, self._first
        while True:
            step: Callable[[Any], Any]
            try:
                value = yield signal
                step = steps.send
            except GeneratorExit:
                steps.close()
                raise
            except BaseException as exc:
                value, step = exc, steps.throw
            try:
                signal = step(value)
            except StopIteration as done:
                result: Message = done.value
                return result


class Load:
    """Writes being served right now: the in-process worker yields to them."""

    def __init__(self) -> None:
        self.writes_in_flight = 0

    def busy(self) -> bool:
        # Concurrent writes: one client waiting on its own requests is no load to yield to.
        return self.writes_in_flight >= 2


class EngramMiddleware:
    def __init__(
        self,
        app: ASGIApp,
        *,
        max_body_bytes: int,
        log_requests: bool,
        body_timeout_s: float = 30.0,
        load: Load | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.log_requests = log_requests
        self.body_timeout_s = body_timeout_s
        self.load = load or Load()
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        rid = None
        length = None
        for name, value in scope["headers"]:
            if name == b"x-request-id":
                rid = value.decode("ascii") if REQUEST_ID.fullmatch(value) else None
            elif name == b"content-length":
                length = value
        rid = rid or f"{_ID_PREFIX}{next(_ID_COUNTER):016x}"
        token = request_id_var.set(rid)
        status = 0
        limit = self.max_body_bytes

        async def send_wrapper(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = list(message.get("headers", []))
                headers.append((b"x-request-id", rid.encode("ascii")))
                headers.extend(SECURITY_HEADERS)
                message = {**message, "headers": headers}
            await send(message)

        received = 0
        body_done = False
        # The whole body must arrive by this time: a client that sends it a byte at a time
        # cannot hold a worker. After the body, receive() only waits for a disconnect (a
        # streamed export listens for one all along) and has no deadline.
        deadline = asyncio.get_running_loop().time() + self.body_timeout_s

        async def receive_wrapper() -> Message:
            nonlocal received, body_done
            if body_done:
                return await receive()
            message = await _receive_by(receive, deadline, self.body_timeout_s)
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLarge(limit)
                body_done = not message.get("more_body", False)
            return message

        write = scope["method"] not in ("GET", "HEAD")
        if write:
            self.load.writes_in_flight += 1
        stats = self.metrics.http if self.metrics is not None else None
        if stats is not None:
            stats.in_flight += 1
        try:
            if length is not None and length.isdigit() and int(length) > limit:
                await self._too_large(send_wrapper, limit)
            else:
                try:
                    await self.app(scope, receive_wrapper, send_wrapper)
                except BodyTooLarge:
                    if status == 0:
                        await self._too_large(send_wrapper, limit)
                except BodyTimeout as exc:
                    if status == 0:
                        start, body = _error(408, "RequestTimeout", str(exc.detail), field="body")
                        await send_wrapper(start)
                        await send_wrapper({"type": "http.response.body", "body": body})
                except ClientDisconnect:
                    # Gone before its body arrived: no one to answer, and no defect of ours.
                    # Counted and logged as 499, the status proxies use for it.
                    status = status or CLIENT_CLOSED
                except Exception:
                    if status != 0:
                        raise  # the answer has begun; the server closes the connection
                    # Answered here, inside the request's context, so the log line and the
                    # reply carry its id (Starlette's outer handler would see neither).
                    errors_log.exception("unhandled error")
                    start, body = _error(500, "InternalError", "internal error")
                    await send_wrapper(start)
                    await send_wrapper({"type": "http.response.body", "body": body})
        finally:
            if write:
                self.load.writes_in_flight -= 1
            seconds = time.perf_counter() - started
            route = getattr(scope.get("route"), "path", None) or UNMATCHED
            if stats is not None:
                stats.in_flight -= 1
                stats.observe(scope["method"], route, status, seconds)
            if self.log_requests:
                log.info(
                    "request",
                    extra={
                        "method": scope["method"],
                        "path": scope["path"],
                        "route": route,
                        "status": status,
                        "duration_ms": round(seconds * 1000, 2),
                    },
                )
            request_id_var.reset(token)

    async def _too_large(self, send: Send, limit: int) -> None:
        start, body = _error(
            413,
            "PayloadTooLarge",
            f"request body over the limit of {limit} bytes",
            field="body",
        )
        await send(start)
        await send({"type": "http.response.body", "body": body})
