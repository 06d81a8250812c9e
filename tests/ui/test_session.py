"""The dashboard's sign-in over HTTP: what the cookie is (a session's token, never the
key) and where it works, the refusals of the sign-in, sign-out and a revoked key ending
the session, open mode, a TLS proxy, and the dataset download through the session."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
from fastapi import FastAPI

from app.core.config import Settings
from app.main import create_app
from app.services.access.auth import Role, create_key
from tests.conftest import running
from tests.ui.conftest import Seeded

COOKIE = "engram_ui_session"


def _set_cookie(r: httpx.Response) -> str:
    return "; ".join(r.headers.get_list("set-cookie"))


async def test_open_mode_shows_the_pages_without_a_key(client: httpx.AsyncClient) -> None:
    r = await client.get("/ui")
    assert r.status_code == 200
    assert "open mode" in r.text
    assert '<strong class="namespace">default</strong>' in r.text
    assert "Sign out" not in r.text  # nothing to sign out of
    assert "Content-Security-Policy" in r.headers
    assert "script-src 'self'" in r.headers["Content-Security-Policy"]
    login = await client.get("/ui/login")
    assert "the pages are open" in login.text
    assert (await client.get("/ui/")).headers["location"] == "/ui"


async def test_sign_in_over_https_sets_a_secure_strict_cookie_for_the_pages_only(
    app: FastAPI, make_key: Callable[..., Any]
) -> None:
    key = await make_key("gamma", "reader")
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="https://localhost") as client:
        assert (await client.get("/ui")).headers["location"] == "/ui/login"
        r = await client.post("/ui/login", json={"key": key})
        assert r.status_code == 204, r.text
        cookie = _set_cookie(r)
        token = client.cookies[COOKIE]
        assert key not in cookie  # a session's token, not the key
        assert len(token) >= 40
        for attribute in ("HttpOnly", "Path=/ui", "SameSite=strict", "Secure", "Max-Age=43200"):
            assert attribute in cookie
        page = await client.get("/ui")
        assert page.status_code == 200
        assert '<strong class="namespace">gamma</strong>' in page.text
        # The JSON API takes keys in headers only: the cookie is no key there.
        for sent in (token, key):
            r = await client.get("/v1/episodes", headers={"Cookie": f"{COOKIE}={sent}"})
            assert r.status_code == 401


async def test_signing_out_ends_the_session_not_only_the_cookie(
    client: httpx.AsyncClient, make_key: Callable[..., Any]
) -> None:
    key = await make_key("gamma", "reader")
    assert (await client.post("/ui/login", json={"key": key})).status_code == 204
    token = client.cookies[COOKIE]
    assert (await client.get("/ui/skills")).status_code == 200
    out = await client.post("/ui/logout")
    assert out.status_code == 204
    assert "Max-Age=0" in _set_cookie(out)
    # A copy of the cookie taken before (another tab, a stolen one) no longer works.
    client.cookies.set(COOKIE, token, path="/ui")
    r = await client.get("/ui/skills")
    assert (r.status_code, r.headers["location"]) == (303, "/ui/login?ended=1")


async def test_behind_a_trusted_tls_proxy_the_cookie_is_secure(settings: Settings) -> None:
    app = create_app(settings.model_copy(update={"trusted_proxies": ["127.0.0.1"]}))
    forwarded = {"X-Forwarded-Proto": "https", "X-Forwarded-For": "203.0.113.7"}
    async with running(app) as client:  # the test client is 127.0.0.1: the proxy
        async with app.state.engram.transactions.write() as session:
            _, key = await create_key(session, namespace="gamma", role=Role.READER, name=None)
        r = await client.post("/ui/login", json={"key": key}, headers=forwarded)
        assert r.status_code == 204, r.text
        assert "Secure" in _set_cookie(r)
        plain = await client.post("/ui/login", json={"key": key})
        assert "Secure" not in _set_cookie(plain)


async def test_a_revoked_key_sends_the_browser_to_sign_in_again(
    app: FastAPI, client: httpx.AsyncClient, make_key: Callable[..., Any]
) -> None:
    admin = await make_key("gamma", "admin")
    reader = await make_key("gamma", "reader")
    assert (await client.post("/ui/login", json={"key": reader})).status_code == 204
    assert (await client.get("/ui/skills")).status_code == 200
    keys = (await client.get("/v1/keys", headers={"Authorization": f"Bearer {admin}"})).json()
    reader_id = next(k["id"] for k in keys["items"] if k["role"] == "reader")
    r = await client.post(
        f"/v1/keys/{reader_id}/revoke", headers={"Authorization": f"Bearer {admin}"}
    )
    assert r.status_code == 200, r.text
    r = await client.get("/ui/skills")
    assert r.status_code == 303
    assert r.headers["location"] == "/ui/login?ended=1"
    assert f'{COOKIE}=""' in _set_cookie(r)
    assert "Max-Age=0" in _set_cookie(r)
    login = await client.get("/ui/login?ended=1")
    assert "Your session ended" in login.text


def test_sign_in_refusals(seeded: Seeded) -> None:
    with httpx.Client(base_url=seeded.server.url, timeout=10) as http:
        key = seeded.keys.reader
        foreign = http.post(
            "/ui/login", json={"key": key}, headers={"Origin": "https://evil.example"}
        )
        assert foreign.status_code == 403
        assert foreign.json()["field"] == "Origin"
        form = http.post("/ui/login", data={"key": key})
        assert form.status_code == 415
        wrong = http.post("/ui/login", json={"key": "egk_wrong"})
        assert wrong.status_code == 401
        assert wrong.json()["detail"] == "invalid or revoked API key"
        empty = http.post("/ui/login", json={"key": ""})
        assert empty.status_code == 422
        assert empty.json()["field"] == "key"
        for refused in (foreign, form, wrong, empty):
            assert COOKIE not in _set_cookie(refused)
        # Keys exist here: no page without one.
        assert http.get("/ui/dataset/download").headers["location"] == "/ui/login"


def test_the_dataset_downloads_through_the_session(seeded: Seeded) -> None:
    with httpx.Client(base_url=seeded.server.url, timeout=30) as http:
        assert http.post("/ui/login", json={"key": seeded.keys.reader}).status_code == 204
        r = http.get("/ui/dataset/download", params={"format": "ndjson"})
        assert r.status_code == 200
        assert (
            r.headers["content-disposition"] == 'attachment; filename="engram-transitions.ndjson"'
        )
        api = http.get("/v1/rl/dataset", headers={"Authorization": f"Bearer {seeded.keys.reader}"})
        assert r.text == api.text  # the same rows as the API's
        assert len(r.text.splitlines()) == 18
        parquet = http.get("/ui/dataset/download", params={"format": "parquet"})
        assert parquet.content[:4] == b"PAR1"
        bad = http.get("/ui/dataset/download", params={"format": "csv"})
        assert bad.status_code == 422
        assert bad.json()["field"] == "format"
