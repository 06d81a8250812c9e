"""How each request ended: one access log line and its metrics under the status the
client got (the middleware's own answers too), no line carrying a key, the writes in
flight counted, and an answer when the app raised before giving one."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from app.api.middleware import AccessLog, Load
from app.core.config import Settings
from app.core.logging import JsonFormatter
from tests.api.middleware.conftest import Logs, access_lines, add_broken_route
from tests.conftest import asgi_request, auth, episode_body


@pytest.fixture
def settings(settings: Settings) -> Settings:
    settings.log_requests = True
    return settings


async def test_no_log_line_contains_a_key(
    app: FastAPI,
    client: httpx.AsyncClient,
    make_key: Callable[..., Any],
    raw_logs: io.StringIO,
    logs: Logs,
) -> None:
    agent = await make_key("tenant_a", "agent")
    reader = await make_key("tenant_a", "reader")
    add_broken_route(app, agent)
    r = await client.post("/v1/episodes", json=episode_body(), headers=auth(agent))
    eid = r.json()["id"]
    await client.get(f"/v1/episodes/{eid}", headers={"X-Api-Key": reader})
    await client.get("/v1/episodes", params={"api_key": agent}, headers=auth(agent))
    await client.post("/v1/episodes", json=episode_body("t2"), headers=auth(reader))  # 403
    await client.get("/v1/episodes", headers=auth(agent + "x"))  # 401
    await client.get("/v1/episodes", headers={**auth(agent), "X-Request-Id": agent})
    assert (await client.get("/v1/broken", headers=auth(agent))).status_code == 500
    app.state.engram.blobs.close()
    r = await client.post("/v1/episodes", json=episode_body("t3"), headers=auth(agent))
    assert r.status_code == 503

    text = raw_logs.getvalue()
    assert len(access_lines(logs)) == 8
    assert "a defect that mentions egk_[redacted]" in text  # the traceback was written, masked
    for key in (agent, reader):
        assert key not in text
        assert key[4:] not in text
    assert "Bearer" not in text
    assert "authorization" not in text.lower()


def test_a_key_in_a_message_is_masked() -> None:
    record = logging.LogRecord(
        "engram", logging.WARNING, __file__, 1, "saw %s", ("egk_AbC-123_xyz",), None
    )
    line = json.loads(JsonFormatter().format(record))
    assert line["msg"] == "saw egk_[redacted]"


async def test_a_client_gone_before_its_body_is_a_499_not_an_error(
    app: FastAPI, client: httpx.AsyncClient, logs: Logs
) -> None:
    async def receive() -> dict[str, Any]:
        return {"type": "http.disconnect"}  # what the server reports once the client is gone

    headers = [
        (b"host", b"localhost"),
        (b"content-type", b"application/json"),
        (b"x-request-id", b"gone-1"),
    ]
    sent = await asgi_request(app, "POST", "/v1/episodes", headers, receive)
    assert sent == []
    lines = logs()
    assert [line["msg"] for line in lines if line["level"] == "error"] == []
    (access,) = access_lines(logs)
    assert (access["status"], access["route"], access["request_id"]) == (
        499,
        "/v1/episodes",
        "gone-1",
    )
    scraped = (await client.get("/metrics")).text
    assert 'engram_http_requests_total{method="POST",route="/v1/episodes",status="499"} 1.0' in (
        scraped
    )


async def test_the_middlewares_own_answers_are_logged_and_counted(
    app: FastAPI, client: httpx.AsyncClient, logs: Logs
) -> None:
    cross_site = {"Origin": "https://evil.example", "X-Request-Id": "refused-1"}
    assert (await client.post("/v1/memories", json={}, headers=cross_site)).status_code == 403
    too_large = {"Content-Type": "application/json", "X-Request-Id": "large-1"}
    big = b'{"task": "' + b"x" * app.state.engram.settings.limits.max_body_bytes + b'"}'
    assert (await client.post("/v1/recall", content=big, headers=too_large)).status_code == 413
    untrusted = {"Host": "evil.example", "X-Request-Id": "host-1"}
    assert (await client.get("/health", headers=untrusted)).status_code == 400

    access = access_lines(logs)
    assert [(a["request_id"], a["status"]) for a in access] == [
        ("refused-1", 403),
        ("large-1", 413),
        ("host-1", 400),
    ]
    scraped = (await client.get("/metrics")).text
    for line in [
        'engram_http_requests_total{method="POST",route="unmatched",status="403"} 1.0',
        'engram_http_requests_total{method="POST",route="unmatched",status="413"} 1.0',
        'engram_http_requests_total{method="GET",route="unmatched",status="400"} 1.0',
    ]:
        assert line in scraped


async def _call(app: Any, method: str) -> list[dict[str, Any]]:
    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    return await asgi_request(app, method, "/x", [(b"host", b"localhost")], receive)


async def test_writes_in_flight_are_counted_while_they_are_served() -> None:
    load = Load()
    seen: list[int] = []
    release = asyncio.Event()

    async def inner(scope: Any, receive: Any, send: Any) -> None:
        seen.append(load.writes_in_flight)
        if scope["method"] == "PUT":
            await release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    app = AccessLog(inner, log_requests=False, load=load)
    await _call(app, "POST")
    await _call(app, "GET")
    await _call(app, "HEAD")
    assert seen == [1, 0, 0]
    assert not load.busy()

    # Two writes at once are load the background worker yields to; one is not.
    first = asyncio.create_task(_call(app, "PUT"))
    second = asyncio.create_task(_call(app, "PUT"))
    while load.writes_in_flight < 2:
        await asyncio.sleep(0)
    assert load.busy()
    release.set()
    await asyncio.gather(first, second)
    assert load.writes_in_flight == 0
    assert not load.busy()


async def test_an_error_before_the_answer_is_a_500_and_after_it_is_raised() -> None:
    load = Load()

    async def fails_first(scope: Any, receive: Any, send: Any) -> None:
        raise RuntimeError("a defect")

    async def fails_after(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        raise RuntimeError("a defect mid-answer")

    sent = await _call(AccessLog(fails_first, log_requests=False, load=load), "POST")
    assert [m.get("status") for m in sent] == [500, None]
    assert json.loads(sent[1]["body"]) == {"error": "InternalError", "detail": "internal error"}
    assert (b"connection", b"close") in sent[0]["headers"]
    with pytest.raises(RuntimeError, match="mid-answer"):
        await _call(AccessLog(fails_after, log_requests=False, load=load), "POST")
    assert load.writes_in_flight == 0
