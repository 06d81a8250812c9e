"""An acknowledged episode survives a kill -9 of the real server right after the response:
eight clients and a kill after 120 episodes in the default run, sixteen clients and a kill
after 1,000 under the `slow` marker."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from app.core.config import Settings
from tests.server import EngramServer


def body(i: int) -> dict[str, object]:
    return {
        "task_id": f"crash-{i}",
        "steps": [{"action": f"a{j}", "output": "x" * 150} for j in range(10)],
        "outcome": "success",
    }


@pytest.mark.parametrize(
    ("agents", "each", "kill_at"),
    [(8, 25, 120), pytest.param(16, 100, 1000, marks=pytest.mark.slow)],
)
async def test_acknowledged_episodes_survive_kill_9(
    settings: Settings, tmp_path: Path, agents: int, each: int, kill_at: int
) -> None:
    server = EngramServer(
        tmp_path / "srv", database_url=settings.database_url, ENGRAM_LOG_REQUESTS="false"
    ).start()
    acked: list[str] = []
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=10) as client:

            async def agent(n: int) -> None:
                for i in range(each):
                    r = await client.post("/v1/episodes", json=body(n * 1000 + i))
                    assert r.status_code == 201, r.text
                    acked.append(r.json()["id"])

            clients = [asyncio.create_task(agent(n)) for n in range(agents)]
            # Kill while requests are still in flight, right after some were acknowledged.
            deadline = asyncio.get_running_loop().time() + 60
            while len(acked) < kill_at:
                assert asyncio.get_running_loop().time() < deadline, "the server stopped answering"
                assert not all(a.done() for a in clients), [a.exception() for a in clients]
                await asyncio.sleep(0.001)
            server.kill()
            await asyncio.gather(*clients, return_exceptions=True)
    finally:
        server.kill()
    snapshot = list(acked)
    assert len(snapshot) >= kill_at

    server.start()
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=10) as client:
            for eid in snapshot:
                r = await client.get(f"/v1/episodes/{eid}")
                assert r.status_code == 200, (eid, r.text)
                steps = r.json()["steps"]
                assert len(steps) == 10
                assert steps[9]["output"] == "x" * 150
    finally:
        server.stop()
