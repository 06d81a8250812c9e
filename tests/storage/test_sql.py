"""Episode payloads as SQL rows (ENGRAM_BLOB_STORE=sql): written in the transaction of
their index row, so a failed write leaves neither, and read back through the same API."""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.core.config import Settings
from app.main import create_app
from app.repositories.episode_payloads import PAYLOADS
from app.storage.blobs import episode_chunk_key, episode_doc_key
from tests import test_restart
from tests.api import test_episodes
from tests.conftest import episode_body, running
from tests.server import EngramServer

# The episode API's tests and the restart's, run again with the payloads in SQL.
test_whole_episode_round_trip = test_episodes.test_whole_episode_round_trip
test_seed_minimal_form_is_a_one_step_episode = (
    test_episodes.test_seed_minimal_form_is_a_one_step_episode
)
test_open_episode_grows_then_completes = test_episodes.test_open_episode_grows_then_completes
test_concurrent_appends_keep_every_step_in_order = (
    test_episodes.test_concurrent_appends_keep_every_step_in_order
)
test_delete_removes_row_and_payload = test_episodes.test_delete_removes_row_and_payload
test_keyset_pagination_visits_every_episode_once = (
    test_episodes.test_keyset_pagination_visits_every_episode_once
)
test_episodes_survive_restart = test_restart.test_episodes_survive_restart


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"blob_store": "sql"})


async def _payload_rows(engine: AsyncEngine) -> list[tuple[str, str, str]]:
    async with engine.connect() as conn:
        rows = await conn.execute(
            select(PAYLOADS.c.namespace, PAYLOADS.c.episode_id, PAYLOADS.c.part).order_by(
                PAYLOADS.c.namespace, PAYLOADS.c.episode_id, PAYLOADS.c.part
            )
        )
        return [(ns, eid, part) for ns, eid, part in rows]


async def _insert_payloads(app: FastAPI, rows: list[dict[str, Any]]) -> None:
    """Payload rows as the store writes them (compressed), behind its back."""
    async with app.state.engram.transactions.write() as session:
        await session.execute(
            PAYLOADS.insert(), [{**row, "data": zlib.compress(row["data"])} for row in rows]
        )


async def test_payloads_are_rows_and_no_leveldb_is_opened(
    client: httpx.AsyncClient, app: FastAPI, settings: Settings
) -> None:
    body = {"task_id": "t", "steps": [{"action": "a"}, {"action": "b"}]}
    eid = (await client.post("/v1/episodes", json=body)).json()["id"]
    r = await client.post(f"/v1/episodes/{eid}/steps", json={"action": "more", "output": "x"})
    assert r.status_code == 200, r.text
    assert await _payload_rows(app.state.engram.engine) == [
        ("default", eid, "c000000"),
        ("default", eid, "c000002"),
        ("default", eid, "doc"),
    ]
    assert not settings.blob_dir.exists()
    ready = await client.get("/ready")
    assert ready.status_code == 200, ready.text

    assert (await client.delete(f"/v1/episodes/{eid}")).status_code == 204
    assert await _payload_rows(app.state.engram.engine) == []


async def test_a_failed_payload_write_leaves_the_row_as_it_was(
    client: httpx.AsyncClient, app: FastAPI
) -> None:
    """A payload row the append cannot insert (written behind the store's back) fails the
    whole write: the episode's row keeps its step count and its steps."""
    eid = (await client.post("/v1/episodes", json={"task_id": "t", "steps": []})).json()["id"]
    await client.post(f"/v1/episodes/{eid}/steps", json={"action": "first"})
    before = (await client.get(f"/v1/episodes/{eid}")).json()
    await _insert_payloads(
        app, [{"namespace": "default", "episode_id": eid, "part": "c000001", "data": b"[]"}]
    )

    r = await client.post(f"/v1/episodes/{eid}/steps", json={"action": "second"})
    assert r.status_code == 409, r.text
    assert (await client.get(f"/v1/episodes/{eid}")).json() == before
    assert before["step_count"] == 1


@pytest.fixture
async def refusing(app: FastAPI) -> AsyncIterator[None]:
    """The database refuses every new payload row (a trigger), until the test ends."""
    engine = app.state.engram.engine
    postgres = engine.dialect.name == "postgresql"
    create = (
        [
            "CREATE FUNCTION refuse_payload() RETURNS trigger LANGUAGE plpgsql AS "
            "$$ BEGIN RAISE EXCEPTION 'payload refused'; END $$",
            "CREATE TRIGGER refuse_payload BEFORE INSERT ON episode_payloads "
            "FOR EACH ROW EXECUTE FUNCTION refuse_payload()",
        ]
        if postgres
        else [
            "CREATE TRIGGER refuse_payload BEFORE INSERT ON episode_payloads "
            "BEGIN SELECT RAISE(FAIL, 'payload refused'); END"
        ]
    )
    drop = (
        ["DROP TRIGGER refuse_payload ON episode_payloads", "DROP FUNCTION refuse_payload()"]
        if postgres
        else ["DROP TRIGGER refuse_payload"]
    )
    # The app's write transactions: on libSQL two writers of one process would wait on
    # each other.
    async with app.state.engram.transactions.write() as session:
        for statement in create:
            await session.execute(text(statement))
    try:
        yield
    finally:
        async with app.state.engram.transactions.write() as session:
            for statement in drop:
                await session.execute(text(statement))


@pytest.mark.usefixtures("refusing")
async def test_a_refused_payload_write_stores_no_episode(
    client: httpx.AsyncClient, app: FastAPI
) -> None:
    r = await client.post("/v1/episodes", json=episode_body(id="refused"))
    # The database's error as it maps it: SQLite's a constraint (409), PostgreSQL's not.
    assert r.status_code in (409, 500), r.text
    assert (await client.get("/v1/episodes/refused")).status_code == 404
    assert (await client.get("/v1/episodes")).json()["items"] == []
    assert await _payload_rows(app.state.engram.engine) == []


async def test_a_chosen_id_deleted_then_used_again_has_only_its_own_steps(
    client: httpx.AsyncClient, app: FastAPI
) -> None:
    assert (await client.post("/v1/episodes", json=episode_body(id="again"))).status_code == 201
    assert (await client.delete("/v1/episodes/again")).status_code == 204
    r = await client.post("/v1/episodes", json=episode_body(id="again", steps=1))
    assert r.status_code == 201, r.text
    full = (await client.get("/v1/episodes/again")).json()
    assert [s["action"] for s in full["steps"]] == ["step_0"]
    assert await _payload_rows(app.state.engram.engine) == [
        ("default", "again", "c000000"),
        ("default", "again", "doc"),
    ]


async def test_two_services_share_one_database(settings: Settings, tmp_path: Path) -> None:
    """No payload directory to lock: a second service (a process of its own) on the same
    database starts, and each reads what the other wrote."""
    other = EngramServer(
        tmp_path / "other",
        database_url=settings.database_url,
        ENGRAM_BLOB_STORE="sql",
        ENGRAM_LOG_REQUESTS="false",
    )
    async with running(create_app(settings)) as one:
        # In a thread: the first service runs in this event loop, and a transaction it has
        # open when the loop stalls would hold the database's write lock meanwhile.
        await asyncio.to_thread(other.start)
        try:
            async with httpx.AsyncClient(base_url=other.url, timeout=10) as two:
                body = {"task_id": "a", "steps": [{"action": "x"}] * 2}
                a = (await one.post("/v1/episodes", json=body)).json()["id"]
                b = (await two.post("/v1/episodes", json=episode_body("b", steps=3))).json()["id"]
                r = await two.post(f"/v1/episodes/{a}/steps", json={"action": "x"})
                assert r.status_code == 200, r.text
                assert len((await one.get(f"/v1/episodes/{a}")).json()["steps"]) == 3
                assert len((await one.get(f"/v1/episodes/{b}")).json()["steps"]) == 3
                assert (await one.delete(f"/v1/episodes/{b}")).status_code == 204
                assert (await two.get(f"/v1/episodes/{b}")).status_code == 404
        finally:
            await asyncio.to_thread(other.stop)


def test_keys_map_to_rows_and_back() -> None:
    from app.storage.sql import _episode, _key, _part

    for key in (episode_doc_key("ns.1", "e:2"), episode_chunk_key("ns", "e-3", 12)):
        assert _key(_part(key)) == key
    assert _episode(b"ep/") is None
    assert _episode(b"ep/ns/e/") == ("ns", "e")
    with pytest.raises(ValueError, match="prefix"):
        _episode(b"ep/ns/e/doc")
