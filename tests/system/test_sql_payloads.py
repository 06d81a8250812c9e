"""Payloads in SQL under kill -9: every acknowledged write is whole after a restart, and
the database holds no payload without its row and no row without its payload (nothing
for a sweep to find), while agents create episodes and append steps to them."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
from sqlalchemy import select

from app.core.config import Settings
from app.db.backends import create_engine
from app.repositories.episode_payloads import PAYLOADS
from app.repositories.episodes import EPISODES
from tests.server import EngramServer

AGENTS, KILL_AT = 8, 150


async def _stores(settings: Settings) -> tuple[dict[tuple[str, str], int], set[tuple[str, ...]]]:
    engine = create_engine(settings)
    try:
        async with engine.connect() as conn:
            rows = await conn.execute(
                select(EPISODES.c.namespace, EPISODES.c.id, EPISODES.c.step_count)
            )
            counts = {(ns, eid): n for ns, eid, n in rows}
            parts = await conn.execute(
                select(PAYLOADS.c.namespace, PAYLOADS.c.episode_id, PAYLOADS.c.part)
            )
            return counts, {tuple(p) for p in parts}
    finally:
        await engine.dispose()


async def test_a_kill_leaves_every_row_with_its_payload_and_no_other(
    settings: Settings, tmp_path: Path
) -> None:
    server = EngramServer(
        tmp_path / "srv",
        database_url=settings.database_url,
        ENGRAM_BLOB_STORE="sql",
        ENGRAM_LOG_REQUESTS="false",
    ).start()
    steps: dict[str, int] = {}  # acknowledged steps of each episode
    acks = 0
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=10) as client:

            async def agent(n: int) -> None:
                nonlocal acks
                while True:
                    r = await client.post(
                        "/v1/episodes",
                        json={"task_id": f"t{n}", "steps": [{"action": "a", "output": "x" * 300}]},
                    )
                    assert r.status_code == 201, r.text
                    eid = r.json()["id"]
                    steps[eid] = 1
                    acks += 1
                    for i in range(4):
                        r = await client.post(
                            f"/v1/episodes/{eid}/steps",
                            json={"action": f"s{i}", "output": "y" * 300},
                        )
                        assert r.status_code == 200, r.text
                        steps[eid] = r.json()["step_count"]
                        acks += 1

            agents = [asyncio.create_task(agent(n)) for n in range(AGENTS)]
            deadline = asyncio.get_running_loop().time() + 60
            while acks < KILL_AT:
                assert asyncio.get_running_loop().time() < deadline, "the server stopped answering"
                assert not all(a.done() for a in agents), [a.exception() for a in agents]
                await asyncio.sleep(0.001)
            server.kill()
            await asyncio.gather(*agents, return_exceptions=True)
    finally:
        server.kill()
    acknowledged = dict(steps)

    counts, parts = await _stores(settings)
    docs = {(ns, eid) for ns, eid, part in parts if part == "doc"}
    assert docs == set(counts)  # a row with its document, a document with its row
    for ns, eid, part in parts:
        if part != "doc":
            assert int(part[1:]) < counts[(ns, eid)], (eid, part)  # no chunk past the row's steps

    server.start()
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=10) as client:
            for eid, n in acknowledged.items():
                r = await client.get(f"/v1/episodes/{eid}")
                assert r.status_code == 200, (eid, r.text)
                got = r.json()["steps"]
                assert len(got) >= n
                assert [s["seq"] for s in got] == list(range(len(got)))
    finally:
        server.stop()
