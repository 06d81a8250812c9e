"""An acknowledged episode survives a kill -9 of the real server right after the response."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx

from app.core.config import Settings
from tests.server import EngramServer


def body(i: int) -> dict[str, object]:
    return {
        "task_id": f"crash-{i}",
        "steps": [{"action": f"a{j}", "output": "x" * 150} for j in range(10)],
        "outcome": "success",
    }


async def test_acknowledged_episodes_survive_kill_9(settings: Settings, tmp_path: Path) -> None:
    server = EngramServer(
        tmp_path / "srv", database_url=settings.database_url, ENGRAM_LOG_REQUESTS="false"
    ).start()
    acked: list[str] = []
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=10) as client:

            async def agent(n: int) -> None:
                for i in range(25):
                    r = await client.post("/v1/episodes", json=body(n * 1000 + i))
                    assert r.status_code == 201, r.text
                    acked.append(r.json()["id"])

            agents = [asyncio.create_task(agent(n)) for n in range(8)]
            # Kill while requests are still in flight, right after some were acknowledged.
            deadline = asyncio.get_running_loop().time() + 60
            while len(acked) < 120:
                assert asyncio.get_running_loop().time() < deadline, "the server stopped answering"
                assert not all(a.done() for a in agents), [a.exception() for a in agents]
                await asyncio.sleep(0.001)
            server.kill()
            await asyncio.gather(*agents, return_exceptions=True)
    finally:
        server.kill()
    snapshot = list(acked)
    assert len(snapshot) >= 120

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
