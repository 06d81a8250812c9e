"""The dashboard's sign-in: an API key checked by the Authenticator, kept in a cookie.

The cookie is HttpOnly (no script reads it), SameSite=Strict (no other site's page, link
or form sends it), limited to /ui (the JSON API never takes it: its callers send the key
in a header) and Secure over https. Signing in and out are JSON POSTs: a page elsewhere
cannot send JSON here without a CORS preflight, and RequestGuard refuses a request whose
Origin is another site's before any route runs.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from app.api.deps import AppState, client_address
from app.core.errors import Unauthorized
from app.services.access.auth import Principal

COOKIE = "engram_ui_key"
PATH = "/ui"


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
    """The principal of the cookie's key (or open mode's, when it has none)."""
    state: AppState = request.app.state.engram
    token = request.cookies.get(COOKIE) or None
    try:
        return await state.auth.authenticate(token, client=client_address(request))
    except Unauthorized as exc:
        # A revoked key's cookie says why; a missing one needs no message.
        raise SignInNeeded(exc.message if token else None) from exc


async def is_open_mode(request: Request) -> bool:
    """Whether the pages are shown without a key (no key configured, loopback)."""
    state: AppState = request.app.state.engram
    try:
        principal = await state.auth.authenticate(None, client=client_address(request))
    except Unauthorized:
        return False
    return principal.key_id is None


async def sign_in(request: Request, response: Response, body: LoginRequest) -> Principal:
    """Check the key (401 if invalid, 429 past a burst of wrong keys) and set the cookie."""
    state: AppState = request.app.state.engram
    principal = await state.auth.authenticate(body.key, client=client_address(request))
    response.set_cookie(
        COOKIE,
        body.key,
        path=PATH,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return principal


def sign_out(request: Request, response: Response) -> None:
    response.delete_cookie(
        COOKIE, path=PATH, httponly=True, samesite="strict", secure=request.url.scheme == "https"
    )


UIPrincipal = Annotated[Principal, Depends(signed_in)]
