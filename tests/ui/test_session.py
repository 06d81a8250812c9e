"""The dashboard's sign-in over HTTP: what the cookie is and where it works, the refusals
of the sign-in, a revoked key, open mode, and the dataset download through the session."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
from fastapi import FastAPI

from tests.ui.conftest import Seeded

COOKIE = "engram_ui_key"


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
        assert f"{COOKIE}={key}" in cookie
        for attribute in ("HttpOnly", "Path=/ui", "SameSite=strict", "Secure"):
            assert attribute in cookie
        page = await client.get("/ui")
        assert page.status_code == 200
        assert '<strong class="namespace">gamma</strong>' in page.text
        # The JSON API takes keys in headers only: the cookie is no key there.
        assert (
            await client.get("/v1/episodes", headers={"Cookie": f"{COOKIE}={key}"})
        ).status_code == 401


async def test_a_revoked_key_sends_the_browser_to_sign_in_again(
    app: FastAPI, client: httpx.AsyncClient, make_key: Callable[..., Any]
) -> None:
    admin = await make_key("gamma", "admin")
    reader = await make_key("gamma", "reader")
    client.cookies.set(COOKIE, reader, path="/ui")
    assert (await client.get("/ui/skills")).status_code == 200
    keys = (await client.get("/v1/keys", headers={"Authorization": f"Bearer {admin}"})).json()
    reader_id = next(k["id"] for k in keys["items"] if k["role"] == "reader")
    r = await client.post(
        f"/v1/keys/{reader_id}/revoke", headers={"Authorization": f"Bearer {admin}"}
    )
    assert r.status_code == 200, r.text
    r = await client.get("/ui/skills")
    assert r.status_code == 303
    assert r.headers["location"] == "/ui/login?revoked=1"
    assert f'{COOKIE}=""' in _set_cookie(r)
    assert "Max-Age=0" in _set_cookie(r)
    login = await client.get("/ui/login?revoked=1")
    assert "That key is no longer valid" in login.text


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
        http.cookies.set(COOKIE, seeded.keys.reader, path="/ui")
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
