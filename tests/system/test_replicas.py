"""A shared deployment on one PostgreSQL database: two API processes (payloads in SQL, no
worker of their own) and two `engram worker` processes. Clients write episodes and
memories to both APIs and read each through the other; one worker is killed with SIGKILL
in the middle of a batch. At the end every acknowledged write is readable from both
APIs, no job is left running, and learning equals one process's on the same episodes.
A key revoked through one API is refused by the other within its key cache's lifetime.
60 episodes by default, 600 under the `slow` marker."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.core.config import Settings
from app.db.backends import create_engine
from tests.conftest import ON_POSTGRES
from tests.server import EngramServer, EngramWorker, reset_database
from tests.system.shared_db import (
    WORKER_ENV,
    episodes,
    learned_alone,
    learning_state,
    logs,
    patterns_held,
    wait_drained,
    wait_held,
)

pytestmark = pytest.mark.skipif(not ON_POSTGRES, reason="several processes share PostgreSQL")

API_ENV = {
    "ENGRAM_BLOB_STORE": "sql",
    "ENGRAM_LEARNING__WORKER": "false",
    "ENGRAM_LOG_REQUESTS": "false",
}
OPERATOR = "egk_replicas-test-operator-key-0123456789abcdef"


def apis(tmp_path: Path, url: str, **env: str) -> list[EngramServer]:
    return [
        EngramServer(tmp_path / name, database_url=url, **API_ENV, **env).start()
        for name in ("api-a", "api-b")
    ]


def actions(steps: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(s["action"], s["status"]) for s in steps]


class Writer:
    """A client that writes to one API and reads each write back through the other."""

    def __init__(self, via: httpx.AsyncClient, other: httpx.AsyncClient) -> None:
        self.via, self.other = via, other
        self.episodes: dict[str, dict[str, Any]] = {}
        self.memories: dict[str, str] = {}

    async def episode(self, body: dict[str, Any]) -> None:
        r = await self.via.post("/v1/episodes", json=body)
        assert r.status_code == 201, r.text
        self.episodes[body["id"]] = body
        read = await self.other.get(f"/v1/episodes/{body['id']}")
        assert read.status_code == 200, read.text
        assert actions(read.json()["steps"]) == actions(body["steps"])

    async def memory(self, content: str) -> None:
        r = await self.via.post("/v1/memories", json={"type": "fact", "content": content})
        assert r.status_code == 201, r.text
        memory_id = r.json()["id"]
        self.memories[memory_id] = content
        read = await self.other.get(f"/v1/memories/{memory_id}")
        assert read.status_code == 200, read.text
        assert read.json()["content"] == content

    async def write(self, bodies: list[dict[str, Any]]) -> None:
        for body in bodies:
            await self.episode(body)
            if body["id"].endswith("0"):
                await self.memory(f"{body['task_type']} note from {body['id']}")


def halves(items: list[Any]) -> Iterator[list[Any]]:
    yield items[: len(items) // 2]
    yield items[len(items) // 2 :]


async def write_through(writers: list[Writer], bodies: list[dict[str, Any]]) -> None:
    """Each writer its share of `bodies`, all at once."""
    await asyncio.gather(*(w.write(bodies[i :: len(writers)]) for i, w in enumerate(writers)))


@pytest.mark.parametrize("n", [60, pytest.param(600, marks=pytest.mark.slow)])
async def test_two_apis_and_two_workers_share_one_database(
    settings: Settings, tmp_path: Path, n: int
) -> None:
    bodies = episodes(n)
    alone = await learned_alone(settings, bodies)
    await reset_database(settings.database_url)
    url = settings.database_url
    servers = apis(tmp_path, url)
    env = {**WORKER_ENV, "ENGRAM_LEARNING__BATCH_SIZE": "16"}
    first = EngramWorker(tmp_path / "first.log", database_url=url, **env)
    second = EngramWorker(tmp_path / "second.log", database_url=url, **env)
    engine = create_engine(settings)
    try:
        async with (
            httpx.AsyncClient(base_url=servers[0].url, timeout=30) as a,
            httpx.AsyncClient(base_url=servers[1].url, timeout=30) as b,
        ):
            writers = [Writer(a, b), Writer(b, a), Writer(a, b), Writer(b, a)]
            early, late = halves(bodies)
            first.start()
            async with patterns_held(engine):
                # The first worker claims a batch of the first half and stops in the middle
                # of it; the second claims more; the first is killed there.
                await write_through(writers, early)
                taken_from_first = await wait_held(engine, first.id)
                second.start()
                await wait_held(engine, second.id)
                first.kill()
            await write_through(writers, late)
            found = await wait_drained(engine)
            assert second.stop() == 0, logs(second.log_path)
            # Every acknowledged write, read through both APIs.
            for writer in writers:
                for http in (a, b):
                    for eid, body in writer.episodes.items():
                        read = await http.get(f"/v1/episodes/{eid}")
                        assert read.status_code == 200, read.text
                        assert actions(read.json()["steps"]) == actions(body["steps"])
                    for mid, content in writer.memories.items():
                        read = await http.get(f"/v1/memories/{mid}")
                        assert read.json()["content"] == content
        state = await learning_state(engine)
    finally:
        first.kill()
        second.kill()
        for server in servers:
            server.stop()
        await engine.dispose()
    context = logs(first.log_path, second.log_path, *(s.log_path for s in servers))
    assert sum(len(w.episodes) for w in writers) == n
    assert {j.status for j in found} == {"done"}, context
    retaken = [j for j in found if j.claimed_by == second.id and j.attempts == 2]
    assert len(retaken) == taken_from_first, context
    assert state == alone, context


async def test_a_key_revoked_through_one_api_is_refused_by_the_other_within_the_cache_ttl(
    settings: Settings, tmp_path: Path
) -> None:
    ttl = 1.0
    servers = apis(
        tmp_path,
        settings.database_url,
        ENGRAM_BOOTSTRAP_KEY=OPERATOR,
        ENGRAM_AUTH_CACHE_TTL_S=str(ttl),
    )
    operator = {"Authorization": f"Bearer {OPERATOR}"}
    try:
        async with (
            httpx.AsyncClient(base_url=servers[0].url, timeout=30) as a,
            httpx.AsyncClient(base_url=servers[1].url, timeout=30) as b,
        ):
            created = await a.post("/v1/keys", json={"namespace": "team"}, headers=operator)
            assert created.status_code == 201, created.text
            key = {"Authorization": f"Bearer {created.json()['key']}"}
            for http in (a, b):  # both processes know the key (and cache it)
                assert (await http.get("/v1/memories", headers=key)).status_code == 200
            revoked = await a.post(f"/v1/keys/{created.json()['id']}/revoke", headers=operator)
            assert revoked.status_code == 200, revoked.text
            at = time.monotonic()
            assert (await a.get("/v1/memories", headers=key)).status_code == 401
            while (await b.get("/v1/memories", headers=key)).status_code != 401:
                assert time.monotonic() - at < ttl + 1.0, "still accepted past the cache TTL"
                await asyncio.sleep(0.05)
            for http in (a, b):
                assert (await http.get("/v1/memories", headers=key)).status_code == 401
    finally:
        for server in servers:
            server.stop()
