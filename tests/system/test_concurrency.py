"""Races over real sockets: 50 clients at once against the real server subprocess (200
under the `slow` marker).

The in-process tests (tests/api) race coroutines of one event loop; here every request
is its own connection to `engram serve`, as agents that retry would make them.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from app.core.config import Settings
from tests.conftest import episode_body
from tests.server import EngramServer


@pytest.fixture(params=[50, pytest.param(200, marks=pytest.mark.slow)])
def n(request: pytest.FixtureRequest) -> int:
    """Clients at once."""
    clients: int = request.param
    return clients


@pytest.fixture
async def server(settings: Settings, tmp_path: Path, n: int) -> AsyncIterator[httpx.AsyncClient]:
    srv = EngramServer(
        tmp_path / "srv", database_url=settings.database_url, ENGRAM_LOG_REQUESTS="false"
    ).start()
    try:
        limits = httpx.Limits(max_connections=n, max_keepalive_connections=0)
        async with httpx.AsyncClient(base_url=srv.url, timeout=30, limits=limits) as client:
            yield client
    finally:
        srv.stop()


async def test_rewards_for_one_recall_apply_once(server: httpx.AsyncClient, n: int) -> None:
    memory = await server.post(
        "/v1/memories", json={"type": "fact", "content": "Pin the toolchain version."}
    )
    mid = memory.json()["id"]
    rid = (
        await server.post("/v1/recall", json={"task": "toolchain version", "token_budget": 100})
    ).json()["recall_id"]
    same = {"recall_id": rid, "signals": {"task_success": True}}
    results = await asyncio.gather(
        *[server.post("/v1/rewards", json=same) for _ in range(n // 2)],
        *[server.post("/v1/rewards", json={"recall_id": rid, "value": i}) for i in range(n // 2)],
    )
    codes = [r.status_code for r in results]
    assert codes.count(201) == 1, codes
    first = next(r for r in results if r.status_code == 201)
    winner = first.json()
    # A repeat of the winning reward is a 200 with it; any other reward is a 409.
    for r in results:
        if r.request.content == first.request.content:
            assert r.status_code in (200, 201), r.text
            assert r.json()["id"] == winner["id"]
        else:
            assert r.status_code == 409, r.text
    rewards = (await server.get("/v1/rewards", params={"recall_id": rid})).json()["items"]
    assert [r["id"] for r in rewards] == [winner["id"]]
    transition = (await server.get("/v1/rl/transitions")).json()["items"][0]
    assert transition["status"] == "completed"
    assert transition["reward_id"] == winner["id"]
    m = (await server.get(f"/v1/memories/{mid}")).json()
    assert m["reward_count"] == 1


async def test_supersedes_of_one_memory_one_wins(server: httpx.AsyncClient, n: int) -> None:
    mid = (await server.post("/v1/memories", json={"type": "fact", "content": "v0"})).json()["id"]
    results = await asyncio.gather(
        *(
            server.post(f"/v1/memories/{mid}/supersede", json={"content": f"v{i + 1}"})
            for i in range(n)
        )
    )
    codes = sorted(r.status_code for r in results)
    assert codes == [201] + [409] * (n - 1), codes
    active = (await server.get("/v1/memories", params={"status": "active"})).json()["items"]
    winner = next(r.json() for r in results if r.status_code == 201)
    assert [m["id"] for m in active] == [winner["id"]]
    assert active[0]["previous_id"] == mid
    old = (await server.get(f"/v1/memories/{mid}")).json()
    assert old["status"] == "superseded"
    every = (await server.get("/v1/memories", params={"limit": "200"})).json()["items"]
    assert len(every) == 2  # the losers wrote nothing


async def test_idempotent_episode_posts_make_one_episode(server: httpx.AsyncClient, n: int) -> None:
    headers = {"Idempotency-Key": "agent-7-attempt-1"}
    body = episode_body(steps=5)
    results = await asyncio.gather(
        *(server.post("/v1/episodes", json=body, headers=headers) for _ in range(n))
    )
    assert {r.status_code for r in results} == {201}
    assert len({r.json()["id"] for r in results}) == 1
    assert sum(r.headers.get("idempotent-replayed") == "true" for r in results) == n - 1
    chosen = await asyncio.gather(
        *(server.post("/v1/episodes", json=episode_body(id="run-42")) for _ in range(n))
    )
    assert {r.status_code for r in chosen} == {201}
    listed = (await server.get("/v1/episodes", params={"limit": "200"})).json()["items"]
    assert sorted(e["id"] for e in listed) == sorted({results[0].json()["id"], "run-42"})
    steps = (await server.get("/v1/episodes/run-42")).json()["steps"]
    assert len(steps) == 3
