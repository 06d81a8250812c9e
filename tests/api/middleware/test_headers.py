"""Every answer carries the request's id and the security headers, once each: a route's,
a refusal, a 413, a 422, a 500."""

from __future__ import annotations

from typing import Any

import httpx
from fastapi import FastAPI

from app.api.middleware import SecurityHeaders
from app.api.middleware.headers import SECURITY_HEADERS
from tests.api.middleware.conftest import add_broken_route
from tests.conftest import asgi_request

EXPECTED = {name.decode(): value.decode() for name, value in SECURITY_HEADERS}


def _carries_them(r: httpx.Response, rid: str) -> None:
    assert r.headers.get_list("x-request-id") == [rid], r.headers
    for name, value in EXPECTED.items():
        assert r.headers.get_list(name) == [value], name


async def test_every_answer_carries_the_id_and_the_security_headers(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    add_broken_route(app, "nothing secret")
    over_limit = app.state.engram.settings.limits.max_body_bytes + 1
    answers = {
        200: await client.get("/health", headers={"X-Request-Id": "r200"}),
        201: await client.post(
            "/v1/memories", json={"type": "fact", "content": "c"}, headers={"X-Request-Id": "r201"}
        ),
        404: await client.get("/v1/nothing", headers={"X-Request-Id": "r404"}),
        422: await client.post("/v1/recall", json={}, headers={"X-Request-Id": "r422"}),
        500: await client.get("/v1/broken", headers={"X-Request-Id": "r500"}),
        403: await client.post(
            "/v1/memories",
            json={},
            headers={"Origin": "https://evil.example", "X-Request-Id": "r403"},
        ),
        413: await client.post(
            "/v1/recall",
            content=b"{" + b" " * over_limit + b"}",
            headers={"Content-Type": "application/json", "X-Request-Id": "r413"},
        ),
    }
    for status, r in answers.items():
        assert r.status_code == status, r.text
        _carries_them(r, f"r{status}")


async def test_without_a_request_context_only_the_security_headers_are_added() -> None:
    async def inner(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 204, "headers": [(b"a", b"1")]})
        await send({"type": "http.response.body", "body": b""})

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    sent = await asgi_request(SecurityHeaders(inner), "GET", "/", [], receive)
    assert sent[0]["headers"] == [(b"a", b"1"), *SECURITY_HEADERS]
    assert sent[1] == {"type": "http.response.body", "body": b""}
