"""Keys, roles, namespaces and protected mode."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from pydantic import SecretStr
from sqlalchemy import text

from app.core.config import AuthMode, Settings
from app.core.errors import StartupRefused
from app.main import create_app
from app.services.access.auth import hash_key
from tests.conftest import auth, episode_body, running


async def test_open_mode_on_loopback_without_keys(client: httpx.AsyncClient) -> None:
    r = await client.post("/v1/episodes", json=episode_body())
    assert r.status_code == 201


async def test_keys_required_once_one_exists(
    client: httpx.AsyncClient, make_key: Callable[..., Any]
) -> None:
    key = await make_key("team-a")
    r = await client.get("/v1/episodes")
    assert r.status_code == 401
    assert r.json()["error"] == "Unauthorized"
    assert r.headers["www-authenticate"] == "Bearer"
    bad = await client.get("/v1/episodes", headers=auth("egk_not-a-key"))
    assert bad.status_code == 401
    ok = await client.get("/v1/episodes", headers=auth(key))
    assert ok.status_code == 200
    via_header = await client.get("/v1/episodes", headers={"X-API-Key": key})
    assert via_header.status_code == 200


async def test_namespace_isolation(client: httpx.AsyncClient, make_key: Callable[..., Any]) -> None:
    a, b = await make_key("ns-a"), await make_key("ns-b")
    ea = (await client.post("/v1/episodes", json=episode_body("ta"), headers=auth(a))).json()["id"]
    eb = (await client.post("/v1/episodes", json={"task_id": "tb"}, headers=auth(b))).json()["id"]
    # A sees only its own, and B's records are 404 (never 403) for A.
    listed = (await client.get("/v1/episodes", headers=auth(a))).json()["items"]
    assert [e["id"] for e in listed] == [ea]
    for r in (
        await client.get(f"/v1/episodes/{eb}", headers=auth(a)),
        await client.post(f"/v1/episodes/{eb}/steps", json={"action": "x"}, headers=auth(a)),
        await client.post(
            f"/v1/episodes/{eb}/complete", json={"outcome": "success"}, headers=auth(a)
        ),
        await client.delete(f"/v1/episodes/{eb}", headers=auth(a)),
    ):
        assert r.status_code == 404, r.text
        assert r.json()["error"] == "NotFound"
    assert (await client.get(f"/v1/episodes/{eb}", headers=auth(b))).json()["step_count"] == 0
    # The same client-chosen id in two namespaces is two episodes, not a conflict.
    for key in (a, b):
        r = await client.post("/v1/episodes", json=episode_body(id="shared-id"), headers=auth(key))
        assert r.status_code == 201
    assert (await client.get("/v1/episodes/shared-id", headers=auth(b))).json()[
        "task_id"
    ] == "task_1"
    # Idempotency keys are per namespace too.
    h = {"Idempotency-Key": "k1"}
    ra = await client.post("/v1/episodes", json={"task_id": "x"}, headers=auth(a) | h)
    rb = await client.post("/v1/episodes", json={"task_id": "y"}, headers=auth(b) | h)
    assert ra.status_code == rb.status_code == 201
    assert ra.json()["id"] != rb.json()["id"]


async def test_reader_cannot_write(client: httpx.AsyncClient, make_key: Callable[..., Any]) -> None:
    agent, reader = await make_key("ns", "agent"), await make_key("ns", "reader")
    eid = (await client.post("/v1/episodes", json=episode_body(), headers=auth(agent))).json()["id"]
    r = await client.post("/v1/episodes", json=episode_body(), headers=auth(reader))
    assert r.status_code == 403
    assert r.json()["error"] == "Forbidden"
    assert (await client.delete(f"/v1/episodes/{eid}", headers=auth(reader))).status_code == 403
    assert (await client.get(f"/v1/episodes/{eid}", headers=auth(reader))).status_code == 200


async def test_keys_are_stored_hashed(
    client: httpx.AsyncClient, app: FastAPI, make_key: Callable[..., Any]
) -> None:
    key = await make_key("ns")
    async with app.state.engram.transactions.read_sessions() as session:
        rows = (await session.execute(text("SELECT key_hash, prefix FROM api_keys"))).all()
    assert len(rows) == 1
    assert key not in rows[0][0]
    assert len(rows[0][0]) == 64
    assert key.startswith(rows[0][1])


async def test_revoked_key_is_refused(
    client: httpx.AsyncClient, app: FastAPI, make_key: Callable[..., Any]
) -> None:
    keep, drop = await make_key("ns", "admin"), await make_key("ns")
    async with app.state.engram.transactions.write() as session:
        await session.execute(
            text("UPDATE api_keys SET revoked_at = created_at WHERE key_hash != :h"),
            {"h": hash_key(keep)},
        )
        await session.commit()
    assert (await client.get("/v1/episodes", headers=auth(drop))).status_code == 401
    assert (await client.get("/v1/episodes", headers=auth(keep))).status_code == 200


async def test_protected_mode_refuses_open_service_on_public_address(settings: Settings) -> None:
    public = settings.model_copy(update={"host": "0.0.0.0"})
    with pytest.raises(StartupRefused, match="ENGRAM_PROTECTED_MODE"):
        async with running(create_app(public)):
            pass
    # Explicit override: serves open, as asked.
    override = public.model_copy(update={"protected_mode": False})
    async with running(create_app(override)) as client:
        assert (await client.post("/v1/episodes", json=episode_body())).status_code == 201


async def test_protected_mode_allows_public_address_with_keys(settings: Settings) -> None:
    public = settings.model_copy(
        update={
            "host": "0.0.0.0",
            "bootstrap_key": SecretStr("egk_bootstrap-key-for-tests-0123456789"),
        }
    )
    async with running(create_app(public)) as client:
        assert (await client.get("/v1/episodes")).status_code == 401
        r = await client.get("/v1/episodes", headers=auth("egk_bootstrap-key-for-tests-0123456789"))
        assert r.status_code == 200


async def test_auth_mode_keys_never_runs_open(settings: Settings) -> None:
    strict = settings.model_copy(update={"auth_mode": AuthMode.KEYS})
    async with running(create_app(strict)) as client:
        assert (await client.get("/v1/episodes")).status_code == 401
        assert (await client.get("/health")).status_code == 200


async def test_the_services_address_points_a_person_to_the_dashboard_and_the_docs(
    settings: Settings,
) -> None:
    strict = settings.model_copy(update={"auth_mode": AuthMode.KEYS})
    async with running(create_app(strict)) as client:  # no key needed to be told where to go
        r = await client.get("/")
        assert r.status_code == 200, r.text
        assert (r.json()["dashboard"], r.json()["api_docs"]) == ("/ui", "/docs")
        for path in (r.json()["health"], r.json()["openapi"]):
            assert (await client.get(path)).status_code == 200
