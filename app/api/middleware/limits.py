"""Body limits: a body over the size limit is a 413, one not received in time a 408.

A Content-Length over the limit is answered before the app runs; a body that grows over
it (chunked, or a false length) or stalls raises from `receive`, while the app reads it.
FastAPI's handlers answer those (they are HTTPExceptions); one that escapes the app
before an answer began is answered by AccessLog.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Generator
from typing import Any, ClassVar

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.api.middleware.answers import send_error


class BodyRefused(HTTPException):
    """A body refused while it streams in; `error` names it in the error shape."""

    error: ClassVar[str]


class BodyTimeout(BodyRefused):
    """The body did not arrive within the limit: a stalled or deliberately slow client."""

    error = "RequestTimeout"

    def __init__(self, seconds: float) -> None:
        super().__init__(408, f"request body not received within {seconds:g} s")


class BodyTooLarge(BodyRefused):
    """Raised while the body streams in; FastAPI passes HTTPExceptions through to the handler."""

    error = "PayloadTooLarge"

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"request body over the limit of {limit} bytes")


async def send_refusal(send: Send, exc: BodyRefused) -> None:
    await send_error(send, exc.status_code, exc.error, str(exc.detail), field="body")


async def _receive_by(receive: Receive, deadline: float, seconds: float) -> Message:
    """receive(), cut off at the deadline (BodyTimeout). A message that is already there,
    as a small body usually is, is taken without arming a timer: asyncio's timeout costs
    many times the read, once per request with a body."""
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


class BodyLimits:
    def __init__(self, app: ASGIApp, *, max_body_bytes: int, body_timeout_s: float = 30.0) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.body_timeout_s = body_timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.max_body_bytes
        length = None
        for name, value in scope["headers"]:
            if name == b"content-length":
                length = value
        if length is not None and length.isdigit() and int(length) > limit:
            await send_refusal(send, BodyTooLarge(limit))
            return
        seconds = self.body_timeout_s
        received = 0
        body_done = False
        # The whole body must arrive by this time: a client that sends it a byte at a time
        # cannot hold a worker. After the body, receive() only waits for a disconnect (a
        # streamed export listens for one all along) and has no deadline.
        deadline = asyncio.get_running_loop().time() + seconds

        async def receive_within_limits() -> Message:
            nonlocal received, body_done
            if body_done:
                return await receive()
            message = await _receive_by(receive, deadline, seconds)
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLarge(limit)
                body_done = not message.get("more_body", False)
            return message

        await self.app(scope, receive_within_limits, send)
