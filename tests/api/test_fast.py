"""fast_post: a route declared with it authenticates for its role, parses its body once,
answers what its function returns, and is documented as any other route."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import orjson
import pytest
from fastapi import APIRouter, FastAPI
from pydantic import BaseModel

from app.api.body import BODY_MODELS
from app.api.deps import AppState
from app.api.fast import Answer, fast_post
from app.core.errors import error_responses
from app.services.access.auth import Principal, Role
from tests.conftest import auth


class EchoBody(BaseModel):
    text: str


class EchoRead(BaseModel):
    text: str
    namespace: str


@pytest.fixture
def echo(app: FastAPI, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str | None]]:
    """POST /v1/echo for agents; the calls its function got, as (text, key)."""
    monkeypatch.setitem(BODY_MODELS, "EchoBody", EchoBody)  # removed again afterwards
    calls: list[tuple[str, str | None]] = []
    router = APIRouter(prefix="/v1")

    @fast_post(
        router,
        "/echo",
        role=Role.AGENT,
        body=EchoBody,
        status_code=201,
        response_model=EchoRead,
        summary="Echo",
        responses=error_responses(401, 403, 422),
    )
    async def echo(
        state: AppState, principal: Principal, body: EchoBody, key: str | None
    ) -> Answer:
        """Say it back."""
        assert isinstance(state, AppState)
        calls.append((body.text, key))
        data = orjson.dumps({"text": body.text, "namespace": principal.namespace})
        return Answer(data, location="/v1/echo/1", replayed=key == "again")

    app.include_router(router)
    return calls


async def test_the_answer_is_the_functions(
    client: httpx.AsyncClient, echo: list[tuple[str, str | None]]
) -> None:
    r = await client.post("/v1/echo", json={"text": "hi"})
    assert r.status_code == 201
    assert r.json() == {"text": "hi", "namespace": "default"}
    assert r.headers["content-type"] == "application/json"
    assert r.headers["location"] == "/v1/echo/1"
    assert "idempotent-replayed" not in r.headers
    r = await client.post("/v1/echo", json={"text": "hi"}, headers={"Idempotency-Key": "again"})
    assert r.headers["idempotent-replayed"] == "true"
    assert echo == [("hi", None), ("hi", "again")]


async def test_an_invalid_body_never_reaches_the_function(
    client: httpx.AsyncClient, echo: list[tuple[str, str | None]]
) -> None:
    r = await client.post("/v1/echo", json={"txt": "hi"})
    assert (r.status_code, r.json()["field"]) == (422, "text")
    r = await client.post(
        "/v1/echo", content=b'{"text": "a\\u0000b"}', headers={"Content-Type": "application/json"}
    )
    assert (r.status_code, r.json()["field"]) == (422, "text")
    assert echo == []


async def test_the_role_is_required(
    client: httpx.AsyncClient, make_key: Callable[..., Any], echo: list[tuple[str, str | None]]
) -> None:
    reader = await make_key("tenant_a", "reader")
    agent = await make_key("tenant_a", "agent")
    assert (await client.post("/v1/echo", json={"text": "hi"})).status_code == 401
    r = await client.post("/v1/echo", json={"text": "hi"}, headers=auth(reader))
    assert r.status_code == 403
    r = await client.post("/v1/echo", json={"text": "hi"}, headers=auth(agent))
    assert (r.status_code, r.json()["namespace"]) == (201, "tenant_a")
    assert echo == [("hi", None)]


async def test_it_is_documented_as_any_route(
    client: httpx.AsyncClient, echo: list[tuple[str, str | None]]
) -> None:
    doc = (await client.get("/openapi.json")).json()
    op = doc["paths"]["/v1/echo"]["post"]
    assert op["operationId"] == "echo_v1_echo_post"
    assert (op["summary"], op["description"]) == ("Echo", "Say it back.")
    body = op["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/EchoBody"}
    assert "EchoBody" in doc["components"]["schemas"]
    assert [p["name"] for p in op["parameters"]] == ["Idempotency-Key"]
    assert op["responses"]["201"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/EchoRead"
    }
    assert {"401", "403", "422"} <= set(op["responses"])
