"""The request's context: its id, which every log line written while it is served carries.

An incoming X-Request-Id is kept if it is short and plain; any other value (control
characters, quotes, kilobytes) is replaced by an id of our own. The answer carries the
id too (headers.py reads it from here).
"""

from __future__ import annotations

import itertools
import os
import re

from starlette.types import ASGIApp, Receive, Scope, Send

from app.core.logging import request_id_var

REQUEST_ID = re.compile(rb"[A-Za-z0-9._:\-]{1,128}")
# Request ids made here: 32 hex digits, a random prefix per process and a counter (unique
# without a uuid4 per request, a noticeable share of a small request's time).
_ID_PREFIX = os.urandom(8).hex()
_ID_COUNTER = itertools.count(1)


def _new_id_prefix() -> None:
    global _ID_PREFIX
    _ID_PREFIX = os.urandom(8).hex()


os.register_at_fork(after_in_child=_new_id_prefix)


class RequestContext:
    """Outermost: the id is set before any other middleware runs and reset after the last
    one (the access log) has written its line."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rid = None
        for name, value in scope["headers"]:
            if name == b"x-request-id":
                rid = value.decode("ascii") if REQUEST_ID.fullmatch(value) else None
        token = request_id_var.set(rid or f"{_ID_PREFIX}{next(_ID_COUNTER):016x}")
        try:
            await self.app(scope, receive, send)
        finally:
            request_id_var.reset(token)
