"""Payloads a crash left behind never mix into an episode created later with the same id."""

from __future__ import annotations

import httpx
from fastapi import FastAPI
from sqlalchemy import delete

from app.models import Episode
from tests.conftest import episode_body


async def test_a_deleted_episodes_leftover_chunks_stay_out_of_its_successor(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    first = episode_body(steps=6) | {"id": "reused"}
    del first["outcome"], first["verdict"]
    assert (await client.post("/v1/episodes", json=first)).status_code == 201
    more = {"steps": [{"action": "old", "output": "stale"}] * 3}
    assert (await client.post("/v1/episodes/reused/steps", json=more)).status_code == 200
    # A crash after the delete committed and before the payload went leaves the old
    # chunks behind until the sweep reaches them; an episode may take the id meanwhile.
    async with app.state.engram.transactions.write() as session:
        await session.execute(delete(Episode).where(Episode.id == "reused"))
        await session.commit()
    r = await client.post("/v1/episodes", json=episode_body(steps=8) | {"id": "reused"})
    assert r.status_code == 201, r.text
    r = await client.get("/v1/episodes/reused")
    assert r.status_code == 200, r.text
    steps = r.json()["steps"]
    assert [s["seq"] for s in steps] == list(range(8))
    assert [s["action"] for s in steps] == [f"step_{i}" for i in range(8)]
