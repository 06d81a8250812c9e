"""The crash loop: SIGKILLs of the real server under concurrent writes, every acknowledged
write checked in the stores after each one (tests/system/crash_loop.py): twenty in the
default run, more under the `slow` marker, as many as asked with `python -m bench.crashloop`."""

from __future__ import annotations

from pathlib import Path

import httpx
import plyvel
import pytest
from sqlalchemy import delete

from app.core.config import Settings
from app.db.backends import create_engine
from app.models import Memory
from app.storage.blobs import episode_chunk_key
from tests.server import EngramServer
from tests.system.crash_checks import check_down
from tests.system.crash_loop import CrashLoop
from tests.system.crash_traffic import EpisodeAck, Ledger, MemoryAck, steps_of


@pytest.mark.parametrize("kills", [20, pytest.param(40, marks=pytest.mark.slow)])
async def test_acknowledged_writes_survive_repeated_kill_9(
    settings: Settings, tmp_path: Path, kills: int
) -> None:
    loop = CrashLoop(tmp_path / "srv", seed=20, clients=4, database_url=settings.database_url)
    result = await loop.run(kills)
    assert not result.failures, "\n".join(result.lines())
    assert result.kills == kills
    ledger = result.ledger
    # The kills landed while requests were in flight, and every kind of write was
    # acknowledged before some kill, so the checks had something to check.
    assert sum(ledger.lost.values()) > 0, result.lines()
    for kind in ("episode", "episode_keyed", "append", "memory", "supersede", "recall", "reward"):
        assert ledger.acked[kind] > 0, (kind, result.lines())
    for check in ("episode_steps", "memory_state", "recall_logged", "reward_completed"):
        assert result.checks[check] > 0, (check, result.lines())
    assert result.checks["orphans_swept"] == kills
    assert result.checks["queue_drained"] == 1


async def test_the_checks_see_a_lost_payload_a_lost_row_and_an_orphan(
    settings: Settings, tmp_path: Path
) -> None:
    server = EngramServer(
        tmp_path / "srv", database_url=settings.database_url, ENGRAM_LOG_REQUESTS="false"
    ).start()
    ledger = Ledger()
    first, more = steps_of("e1", 2), steps_of("e1", 3, first=2)
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
            body = {"id": "e1", "task_id": "t1", "steps": first}
            assert (await http.post("/v1/episodes", json=body)).status_code == 201
            r = await http.post("/v1/episodes/e1/steps", json={"steps": more})
            assert r.status_code == 200, r.text
            body = {"id": "m1", "type": "fact", "content": "the cache is warm"}
            assert (await http.post("/v1/memories", json=body)).status_code == 201
    finally:
        server.stop()
    ledger.episodes["e1"] = EpisodeAck(first + more, task_id="t1")
    ledger.memories["m1"] = MemoryAck("the cache is warm", "active")
    blob_dir = server.data_dir / "blobs"
    whole = await check_down(settings.database_url, blob_dir, ledger)
    assert whole.failures == []
    assert whole.checks["episode_steps"] == whole.checks["memory_state"] == 1

    db = plyvel.DB(str(blob_dir))
    db.delete(episode_chunk_key("default", "e1", 2))
    db.put(episode_chunk_key("default", "gone", 0), b"[]")
    db.close()
    engine = create_engine(settings)
    async with engine.begin() as conn:
        await conn.execute(delete(Memory).where(Memory.id == "m1"))
    await engine.dispose()
    broken = await check_down(settings.database_url, blob_dir, ledger)
    failed = {f.split(":")[0] for f in broken.failures}
    assert failed == {"payload_steps", "episode_steps", "memory_row"}, broken.failures
    assert broken.orphans == 1
