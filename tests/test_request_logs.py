"""JSON logs while serving requests: every line carries the request's id, no line carries a key."""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from app.core.config import Settings
from app.core.logging import JsonFormatter
from tests.conftest import asgi_request, auth, episode_body

Logs = Callable[[], list[dict[str, Any]]]
HEX_ID = re.compile(r"[0-9a-f]{32}")


@pytest.fixture
def settings(settings: Settings) -> Settings:
    settings.log_requests = True
    return settings


@pytest.fixture
def raw_logs() -> Iterator[io.StringIO]:
    """What the service writes to its log stream, formatted as in production."""
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(JsonFormatter())
    # The test's own HTTP client logs too; only the service's lines are under test.
    handler.addFilter(lambda record: not record.name.startswith(("httpx", "httpcore")))
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    yield out
    root.removeHandler(handler)
    root.setLevel(level)


@pytest.fixture
def logs(raw_logs: io.StringIO) -> Logs:
    return lambda: [json.loads(line) for line in raw_logs.getvalue().splitlines()]


def add_broken_route(app: FastAPI, secret: str) -> None:
    async def broken() -> None:
        raise RuntimeError(f"a defect that mentions {secret}")

    app.add_api_route("/v1/broken", broken)


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
    lines = logs()
    assert len([x for x in lines if x["logger"] == "engram.access"]) == 8
    assert "a defect that mentions egk_[redacted]" in text  # the traceback was written, masked
    for key in (agent, reader):
        assert key not in text
        assert key[4:] not in text
    assert "Bearer" not in text
    assert "authorization" not in text.lower()


async def test_every_line_of_a_request_carries_its_id(
    app: FastAPI, client: httpx.AsyncClient, logs: Logs
) -> None:
    add_broken_route(app, "nothing secret")
    eid = (await client.post("/v1/episodes", json=episode_body())).json()["id"]
    r = await client.get("/v1/broken", headers={"X-Request-Id": "req-broken"})
    assert r.status_code == 500
    assert r.headers["x-request-id"] == "req-broken"
    app.state.engram.blobs.close()
    r = await client.post(
        "/v1/episodes", json=episode_body("t2"), headers={"X-Request-Id": "req-store"}
    )
    assert r.status_code == 503
    r = await client.delete(f"/v1/episodes/{eid}", headers={"X-Request-Id": "req-delete"})
    assert r.status_code == 204

    lines = logs()
    by_msg = {line["msg"].split(";")[0]: line for line in lines}
    unhandled = by_msg["unhandled error"]
    assert unhandled["request_id"] == "req-broken"
    assert "RuntimeError" in unhandled["exc"]
    assert by_msg["request failed"]["request_id"] == "req-store"
    # The writer serves batches: its lines name the requests of the batch.
    assert "req-delete" in by_msg["payload delete failed"]["request_ids"]
    access = [line for line in lines if line["logger"] == "engram.access"]
    assert [(a["route"], a["status"]) for a in access] == [
        ("/v1/episodes", 201),
        ("/v1/broken", 500),
        ("/v1/episodes", 503),
        ("/v1/episodes/{episode_id}", 204),
    ]
    assert all(a["request_id"] for a in access)
    assert [a["request_id"] for a in access[1:]] == ["req-broken", "req-store", "req-delete"]
    assert HEX_ID.fullmatch(access[0]["request_id"])


@pytest.mark.parametrize(
    "sent",
    [
        "x" * 129,
        "two words",
        'quote"d',
        "{json: 1}",
        "caf\u00e9",
        "tab\there",
        "",
    ],
)
async def test_an_unsafe_request_id_is_replaced(
    client: httpx.AsyncClient, logs: Logs, sent: str
) -> None:
    r = await client.get("/health", headers={"X-Request-Id": sent.encode("latin-1")})
    assert r.status_code == 200
    rid = r.headers["x-request-id"]
    assert HEX_ID.fullmatch(rid)
    (access,) = [line for line in logs() if line["logger"] == "engram.access"]
    assert access["request_id"] == rid


@pytest.mark.parametrize(
    "sent", ["abc", "0190c2a4-7b1e-7cc0-9f5a-3d2e1b0a9c8d", "trace:42.a_b", "x" * 128]
)
async def test_a_plain_request_id_is_kept(client: httpx.AsyncClient, logs: Logs, sent: str) -> None:
    r = await client.get("/health", headers={"X-Request-Id": sent})
    assert r.headers["x-request-id"] == sent
    (access,) = [line for line in logs() if line["logger"] == "engram.access"]
    assert access["request_id"] == sent


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

    headers = [(b"content-type", b"application/json"), (b"x-request-id", b"gone-1")]
    sent = await asgi_request(app, "POST", "/v1/episodes", headers, receive)
    assert sent == []
    lines = logs()
    assert [line["msg"] for line in lines if line["level"] == "error"] == []
    (access,) = [line for line in lines if line["logger"] == "engram.access"]
    assert (access["status"], access["route"], access["request_id"]) == (
        499,
        "/v1/episodes",
        "gone-1",
    )
    scraped = (await client.get("/metrics")).text
    assert 'engram_http_requests_total{method="POST",route="/v1/episodes",status="499"} 1.0' in (
        scraped
    )
