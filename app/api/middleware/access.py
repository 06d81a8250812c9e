"""How each request ended: its line in the access log and its metrics, under the status
the client got, and the count of writes in flight. A request the app raised on before
answering ends here too: with a 500 (or the 413 / 408 of a body limit it hit)."""

from __future__ import annotations

import logging
import time

from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.api.middleware.answers import send_error
from app.api.middleware.limits import BodyRefused, send_refusal
from app.core.metrics import UNMATCHED, Metrics

log = logging.getLogger("engram.access")
errors_log = logging.getLogger("engram.errors")
CLIENT_CLOSED = 499


class Load:
    """Writes being served right now: the in-process worker yields to them."""

    def __init__(self) -> None:
        self.writes_in_flight = 0

    def busy(self) -> bool:
        # Concurrent writes: one client waiting on its own requests is no load to yield to.
        return self.writes_in_flight >= 2


class AccessLog:
    """Inside RequestContext and SecurityHeaders, outside every other middleware: the log
    lines carry the request's id, and the 500 answered here, inside the request's context,
    carries the id and the headers (Starlette's outer handler would give neither).

    The answer of last resort is here rather than in a middleware of its own: both need
    to know whether an answer has begun, and each middleware that watches `send` adds
    its cost to every request (bench/middleware_overhead.py)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        log_requests: bool,
        load: Load | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        self.app = app
        self.log_requests = log_requests
        self.load = load or Load()
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 0

        async def send_noting_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        write = scope["method"] not in ("GET", "HEAD")
        if write:
            self.load.writes_in_flight += 1
        stats = self.metrics.http if self.metrics is not None else None
        if stats is not None:
            stats.in_flight += 1
        try:
            await self.app(scope, receive, send_noting_status)
        except BodyRefused as exc:
            # A body limit hit while the app read the body, and not answered by it; once
            # an answer has begun there is no other to give.
            if status == 0:
                await send_refusal(send_noting_status, exc)
        except ClientDisconnect:
            # Gone before its body arrived: no one to answer, and no defect of ours.
            # Counted and logged as 499, the status proxies use for it.
            status = status or CLIENT_CLOSED
        except Exception:
            if status != 0:
                raise  # the answer has begun; the server closes the connection
            errors_log.exception("unhandled error")
            await send_error(send_noting_status, 500, "InternalError", "internal error")
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
