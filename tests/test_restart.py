"""Survival across restarts of the app on the same data directory, and the orphan sweep."""

from __future__ import annotations

import asyncio
import time

import plyvel
import pytest

from app.core.config import Settings
from app.main import create_app
from app.storage.blobs import BlobStoreError, episode_chunk_key, episode_doc_key, episode_prefix
from tests.conftest import episode_body, running


async def test_episodes_survive_restart(settings: Settings) -> None:
    async with running(create_app(settings)) as client:
        whole = (await client.post("/v1/episodes", json=episode_body(steps=5))).json()
        open_ = (await client.post("/v1/episodes", json={"task_id": "open"})).json()
        await client.post(f"/v1/episodes/{open_['id']}/steps", json={"action": "a", "output": "x"})
        before = [(await client.get(f"/v1/episodes/{e['id']}")).json() for e in (whole, open_)]

    async with running(create_app(settings)) as client:
        after = [(await client.get(f"/v1/episodes/{e['id']}")).json() for e in (whole, open_)]
        assert after == before
        # The open episode is still open and can be completed after the restart.
        r = await client.post(f"/v1/episodes/{open_['id']}/complete", json={"outcome": "success"})
        assert r.status_code == 200
        page = (await client.get("/v1/episodes")).json()
        assert {e["id"] for e in page["items"]} == {whole["id"], open_["id"]}


async def test_orphan_payloads_are_swept_on_start(settings: Settings) -> None:
    async with running(create_app(settings)) as client:
        kept = (await client.post("/v1/episodes", json=episode_body(steps=2))).json()["id"]

    # What a crash between the payload write and the SQL commit leaves behind.
    db = plyvel.DB(str(settings.blob_dir))
    db.put(episode_doc_key("default", "ghost"), b"{}")
    db.put(episode_chunk_key("default", "ghost", 0), b"[]")
    db.put(episode_chunk_key("default", kept, 2), b'[{"action": "never committed"}]')
    db.close()
    ghost = episode_prefix("default", "ghost")

    app = create_app(settings)
    async with running(app) as client:
        state = app.state.engram
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            async with state.transactions.read() as session:
                if not await state.blobs.get_prefix(ghost, session=session):
                    break
            await asyncio.sleep(0.05)
        full = (await client.get(f"/v1/episodes/{kept}")).json()
        assert [s["seq"] for s in full["steps"]] == [0, 1]
        async with state.transactions.read() as session:
            assert await state.blobs.get_prefix(ghost, session=session) == []
            chunk = episode_chunk_key("default", kept, 2)
            assert await state.blobs.get(chunk, session=session) is None
            kept_prefix = episode_prefix("default", kept)
            assert len(await state.blobs.get_prefix(kept_prefix, session=session)) == 2
        # A sweep now finds nothing more to remove.
        assert await state.writer.sweep() == 0


async def test_a_second_app_cannot_open_the_same_payload_directory(settings: Settings) -> None:
    async with running(create_app(settings)):
        with pytest.raises(BlobStoreError, match="another Engram process"):
            async with running(create_app(settings)):
                pass
