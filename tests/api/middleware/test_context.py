"""The request's context: every log line written while a request is served carries its id,
and so does its answer."""

from __future__ import annotations

import re

import httpx
import pytest
from fastapi import FastAPI

from app.core.config import Settings
from app.core.logging import request_id_var
from tests.api.middleware.conftest import Logs, access_lines, add_broken_route
from tests.conftest import episode_body

HEX_ID = re.compile(r"[0-9a-f]{32}")


@pytest.fixture
def settings(settings: Settings) -> Settings:
    settings.log_requests = True
    return settings


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
    access = access_lines(logs)
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
    (access,) = access_lines(logs)
    assert access["request_id"] == rid


@pytest.mark.parametrize(
    "sent", ["abc", "0190c2a4-7b1e-7cc0-9f5a-3d2e1b0a9c8d", "trace:42.a_b", "x" * 128]
)
async def test_a_plain_request_id_is_kept(client: httpx.AsyncClient, logs: Logs, sent: str) -> None:
    r = await client.get("/health", headers={"X-Request-Id": sent})
    assert r.headers["x-request-id"] == sent
    (access,) = access_lines(logs)
    assert access["request_id"] == sent


async def test_ids_made_here_differ_and_end_with_the_request(client: httpx.AsyncClient) -> None:
    ids = [(await client.get("/health")).headers["x-request-id"] for _ in range(3)]
    assert len(set(ids)) == 3
    assert all(HEX_ID.fullmatch(rid) for rid in ids)
    # The client runs the app in this task: the id does not outlive its request.
    assert request_id_var.get() is None
