"""The dashboard's sign-in: an API key checked by the Authenticator once, then a session.

The cookie holds a random token whose hash names a row of `dashboard_sessions` (never the
key itself): the session ends when it expires (ENGRAM_UI_SESSION_HOURS), at sign-out, and
when its key is revoked. The cookie is HttpOnly (no script reads it), SameSite=Strict (no
other site's page, link or form sends it), limited to /ui (the JSON API never takes it:
its callers send the key in a header) and Secure over https (behind a TLS proxy, list the
proxy in ENGRAM_TRUSTED_PROXIES so that its X-Forwarded-Proto is believed). Signing in and
out are JSON POSTs: a page elsewhere cannot send JSON here without a CORS preflight, and
RequestGuard refuses a request whose Origin is another site's before any route runs.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from app.api.deps import AppState, client_address
from app.core.errors import Unauthorized
from app.services.access.auth import Principal
from app.services.access.dashboard_sessions import DashboardSessions

COOKIE = "engram_ui_session"
PATH = "/ui"
ENDED = "Your session ended (signed out elsewhere, expired, or its key was revoked): sign in again."


def _sessions(state: AppState) -> DashboardSessions:
    return DashboardSessions(state.transactions, hours=state.settings.ui_session_hours)


class LoginRequest(BaseModel):
    """The API key to sign in with."""

    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [{"key": "egk_0123456789abcdef"}]}
    )

    key: str = Field(
        min_length=1,
        max_length=512,
        description="An API key of any role; the pages show its namespace, read-only",
    )


class SignInNeeded(Exception):
    """No valid key in the cookie and no open mode: the page sends the browser to sign in."""

    def __init__(self, message: str | None) -> None:
        super().__init__(message or "")
        self.message = message


async def signed_in(request: Request) -> Principal:
    """The principal of the cookie's session (or open mode's, when there is none)."""
    state: AppState = request.app.state.engram
    token = request.cookies.get(COOKIE) or None
    if token is None:
        try:
            return await state.auth.authenticate(None, client=client_address(request))
        except Unauthorized as exc:
            raise SignInNeeded(None) from exc
    principal = await _sessions(state).principal_of(token)
    if principal is None:
        raise SignInNeeded(ENDED)
    return principal


async def is_open_mode(request: Request) -> bool:
    """Whether the pages are shown without a key (no key configured, loopback)."""
    state: AppState = request.app.state.engram
    try:
        principal = await state.auth.authenticate(None, client=client_address(request))
    except Unauthorized:
        return False
    return principal.key_id is None


async def sign_in(request: Request, response: Response, body: LoginRequest) -> Principal:
    """Check the key (401 if invalid, 429 past a burst of wrong keys), open a session and
    set its cookie."""
    state: AppState = request.app.state.engram
    principal = await state.auth.authenticate(body.key, client=client_address(request))
    sessions = _sessions(state)
    token = await sessions.open(principal)
    response.set_cookie(
        COOKIE,
        token,
        max_age=int(sessions.lasts.total_seconds()),
        path=PATH,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return principal


async def sign_out(request: Request, response: Response) -> None:
    """End the cookie's session (on the server: the cookie is worth nothing after) and
    clear the cookie."""
    token = request.cookies.get(COOKIE)
    if token:
        await _sessions(request.app.state.engram).close(token)
    response.delete_cookie(
        COOKIE, path=PATH, httponly=True, samesite="strict", secure=request.url.scheme == "https"
    )


UIPrincipal = Annotated[Principal, Depends(signed_in)]
