"""Every error class in the one JSON shape; never a 500, never a half-written episode."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from app.core.config import Limits, Settings
from app.main import create_app
from tests.conftest import episode_body, running


def assert_error(r: httpx.Response, status: int, error: str, field: str | None = None) -> None:
    assert r.status_code == status, r.text
    body = r.json()
    assert body["error"] == error
    assert isinstance(body["detail"], str)
    assert body["detail"]
    if field is not None:
        assert body["field"] == field, body


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"action": "x"}, "task_id"),
        ({"task_id": "t", "steps": [{"action": "a", "status": "maybe"}]}, "steps[0].status"),
        ({"task_id": "t", "steps": [{"action": "a", "latency_ms": -1}]}, "steps[0].latency_ms"),
        ({"task_id": "t", "outcome": "won"}, "outcome"),
        ({"task_id": "t", "colour": "red"}, "colour"),
        ({"task_id": "t", "id": "has/slash"}, "id"),
        ({"task_id": "t", "action": "a", "steps": [{"action": "b"}]}, "body"),
        ({"task_id": "t", "started_at": "2026-01-01T10:00:00"}, "started_at"),
        ({"task_id": "t", "progress": 0.5}, "body"),
    ],
)
async def test_invalid_fields_are_422_naming_the_field(
    client: httpx.AsyncClient, body: dict[str, object], field: str
) -> None:
    r = await client.post("/v1/episodes", json=body)
    assert_error(r, 422, "ValidationError", field)
    assert (await client.get("/v1/episodes")).json()["items"] == []


async def test_malformed_json_is_422(client: httpx.AsyncClient) -> None:
    r = await client.post(
        "/v1/episodes", content=b'{"task_id": ', headers={"content-type": "application/json"}
    )
    assert_error(r, 422, "ValidationError", "body")
    assert "JSON" in r.json()["detail"]


async def test_not_found_and_unknown_routes(client: httpx.AsyncClient) -> None:
    assert_error(await client.get("/v1/episodes/nope"), 404, "NotFound")
    assert_error(await client.get("/v1/episodes/%2E%2E"), 404, "NotFound")
    assert_error(
        await client.post("/v1/episodes/nope/steps", json={"action": "a"}), 404, "NotFound"
    )
    assert_error(
        await client.post("/v1/episodes/nope/complete", json={"outcome": "success"}),
        404,
        "NotFound",
    )
    assert_error(await client.get("/v1/nothing"), 404, "NotFound")
    assert_error(await client.put("/v1/episodes"), 405, "MethodNotAllowed")


async def test_bad_cursor_and_page_size(client: httpx.AsyncClient) -> None:
    assert_error(
        await client.get("/v1/episodes", params={"cursor": "garbage"}),
        422,
        "InvalidInput",
        "cursor",
    )
    assert_error(
        await client.get("/v1/episodes", params={"limit": "5000"}), 422, "InvalidInput", "limit"
    )
    assert_error(
        await client.get("/v1/episodes", params={"limit": "0"}), 422, "ValidationError", "limit"
    )
    r = await client.get(
        "/v1/episodes", params={"since": "2026-01-02T00:00:00Z", "until": "2026-01-01T00:00:00Z"}
    )
    assert_error(r, 422, "InvalidInput", "until")


@pytest.fixture
async def small(settings: Settings) -> httpx.AsyncClient:
    limited = settings.model_copy(
        update={
            "limits": Limits(
                max_body_bytes=4096, max_steps=5, max_text_chars=100, max_step_bytes=512
            )
        }
    )
    async with running(create_app(limited)) as c:
        yield c


async def test_limits_are_413_naming_the_field(small: httpx.AsyncClient) -> None:
    r = await small.post("/v1/episodes", json={"task_id": "t", "metadata": {"x": "y" * 5000}})
    assert_error(r, 413, "PayloadTooLarge", "body")
    r = await small.post("/v1/episodes", json={"task_id": "t", "steps": [{"action": "a"}] * 6})
    assert_error(r, 413, "PayloadTooLarge", "steps")
    r = await small.post("/v1/episodes", json={"task_id": "t", "description": "d" * 101})
    assert_error(r, 413, "PayloadTooLarge", "description")
    r = await small.post("/v1/episodes", json={"task_id": "t" * 257})
    assert_error(r, 413, "PayloadTooLarge", "task_id")
    r = await small.post(
        "/v1/episodes", json={"task_id": "t", "steps": [{"action": "a", "output": "o" * 600}]}
    )
    assert_error(r, 413, "PayloadTooLarge", "steps[0]")
    assert (await small.get("/v1/episodes")).json()["items"] == []

    eid = (
        await small.post("/v1/episodes", json={"task_id": "t", "steps": [{"action": "a"}] * 4})
    ).json()["id"]
    r = await small.post(f"/v1/episodes/{eid}/steps", json={"steps": [{"action": "b"}] * 2})
    assert_error(r, 413, "PayloadTooLarge", "steps")
    assert (await small.get(f"/v1/episodes/{eid}")).json()["step_count"] == 4


async def test_chunked_body_over_limit_is_413(small: httpx.AsyncClient) -> None:
    async def chunks():  # type: ignore[no-untyped-def]
        yield b'{"task_id": "t", "description": "'
        for _ in range(10):
            yield b"x" * 1000
        yield b'"}'

    r = await small.post(
        "/v1/episodes", content=chunks(), headers={"content-type": "application/json"}
    )
    assert_error(r, 413, "PayloadTooLarge", "body")


async def test_blob_store_down_is_503_and_nothing_is_written(
    client: httpx.AsyncClient, app: FastAPI
) -> None:
    eid = (await client.post("/v1/episodes", json=episode_body())).json()["id"]
    app.state.engram.blobs.close()
    r = await client.post("/v1/episodes", json=episode_body("after"))
    assert_error(r, 503, "StoreUnavailable")
    assert "payload store" in r.json()["detail"]
    assert_error(await client.get(f"/v1/episodes/{eid}"), 503, "StoreUnavailable")
    ready = await client.get("/ready")
    assert ready.status_code == 503
    assert ready.json()["stores"]["sql"] == "ok"
    assert ready.json()["stores"]["blobs"] != "ok"
    # The failed create left no row behind.
    listed = (await client.get("/v1/episodes")).json()["items"]
    assert [e["task_id"] for e in listed] == ["task_1"]


async def test_database_gone_is_503_and_recovers_without_restart(
    settings: Settings, tmp_path: Path
) -> None:
    if not settings.database_url.startswith("sqlite"):
        pytest.skip("moves the SQLite file away; the PostgreSQL server is shared by the run")
    db_dir = tmp_path / "db"
    db_dir.mkdir()
    local = settings.model_copy(update={"database_url": f"sqlite+aiosqlite:///{db_dir}/e.db"})
    app = create_app(local)
    async with running(app) as client:
        eid = (await client.post("/v1/episodes", json=episode_body())).json()["id"]
        db_dir.rename(tmp_path / "db-away")
        await app.state.engram.engine.dispose()  # drop pooled connections to the old file
        r = await client.post("/v1/episodes", json=episode_body("during"))
        assert_error(r, 503, "StoreUnavailable")
        assert "database" in r.json()["detail"]
        assert_error(await client.get(f"/v1/episodes/{eid}"), 503, "StoreUnavailable")
        ready = await client.get("/ready")
        assert ready.status_code == 503
        assert ready.json()["stores"]["blobs"] == "ok"
        assert ready.json()["stores"]["sql"] != "ok"

        (tmp_path / "db-away").rename(db_dir)
        assert (await client.get("/ready")).status_code == 200
        assert (await client.get(f"/v1/episodes/{eid}")).status_code == 200
        r = await client.post("/v1/episodes", json=episode_body("after"))
        assert r.status_code == 201
        tasks = [e["task_id"] for e in (await client.get("/v1/episodes")).json()["items"]]
        assert tasks == ["after", "task_1"]


async def test_unreachable_database_fails_startup(tmp_path: Path) -> None:
    dead = Settings(
        database_url="postgresql+asyncpg://engram:x@127.0.0.1:9/engram",
        blob_dir=tmp_path / "blobs",
        log_requests=False,
    )
    with pytest.raises(OSError, match="Connect call failed|connection refused|9"):
        async with running(create_app(dead)):
            pass
