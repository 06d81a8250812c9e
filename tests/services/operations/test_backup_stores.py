"""An archive is the same whichever store keeps the payloads: one made with LevelDB
restores into SQL and one made with SQL restores into LevelDB, record for record."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import plyvel
import pytest
from sqlalchemy import func, select

from app.core.config import Settings
from app.db.backends import create_engine
from app.main import create_app
from app.repositories.episode_payloads import PAYLOADS
from app.services.operations import backup
from app.services.operations.backup_format import PAYLOADS as PAYLOAD_SECTION
from app.services.operations.backup_format import ArchiveReader, decode_payloads
from app.services.operations.restore import RestoreRefused, restore, verify
from app.storage import open_blob_store
from app.storage.blobs import episode_chunk_key, episode_doc_key
from tests.conftest import episode_body, running


async def _backup(settings: Settings, archive: Path) -> None:
    """`engram backup` without a server: the stores read directly."""
    store, engine = open_blob_store(settings), create_engine(settings)
    try:
        snapshot = await backup.open_snapshot(engine, store.snapshot)
        with archive.open("wb") as out:
            async for block in backup.archive(snapshot):
                out.write(block)
    finally:
        store.close()
        await engine.dispose()


def _payloads(archive: Path) -> set[tuple[bytes, bytes]]:
    with archive.open("rb") as file:
        reader = ArchiveReader(file)
        pairs = {
            pair
            for section, data in reader
            if section == PAYLOAD_SECTION
            for pair in decode_payloads(data)
        }
        reader.check()
    return pairs


async def _episodes(settings: Settings, ids: list[str]) -> dict[str, Any]:
    async with running(create_app(settings)) as client:
        return {eid: (await client.get(f"/v1/episodes/{eid}")).json() for eid in ids}


async def _payload_rows(settings: Settings) -> int:
    engine = create_engine(settings)
    try:
        async with engine.connect() as conn:
            return int((await conn.execute(select(func.count()).select_from(PAYLOADS))).scalar())
    finally:
        await engine.dispose()


async def test_archives_cross_between_leveldb_and_sql(settings: Settings, tmp_path: Path) -> None:
    async with running(create_app(settings)) as client:
        ids = [
            (await client.post("/v1/episodes", json=episode_body(f"t{i}", steps=i))).json()["id"]
            for i in range(1, 5)
        ]
        open_ = (await client.post("/v1/episodes", json={"task_id": "open"})).json()["id"]
        for n in range(3):
            r = await client.post(f"/v1/episodes/{open_}/steps", json={"action": f"a{n}"})
            assert r.status_code == 200, r.text
        assert (await client.delete(f"/v1/episodes/{ids.pop()}")).status_code == 204
        # Payloads of more than one archive member (about 1 MB each).
        rng = random.Random(5)
        for i in range(8):
            steps = [{"action": "dump", "output": rng.randbytes(7500).hex()} for _ in range(10)]
            r = await client.post("/v1/episodes", json={"task_id": f"big{i}", "steps": steps})
            assert r.status_code == 201, r.text
            ids.append(r.json()["id"])
    ids.append(open_)
    before = await _episodes(settings, ids)
    assert [len(e["steps"]) for e in before.values()] == [1, 2, 3] + [10] * 8 + [3]
    # What a crash between a payload write and its commit leaves in LevelDB, not yet swept.
    orphans = {
        (episode_doc_key("default", "ghost"), b"{}"),
        (episode_chunk_key("default", "ghost", 0), b"[]"),
        (episode_chunk_key("default", ids[0], 1), b"[{}]"),
    }
    db = plyvel.DB(str(settings.blob_dir))
    for key, value in orphans:
        db.put(key, value)
    db.close()

    from_leveldb = tmp_path / "leveldb.tar.gz"
    await _backup(settings, from_leveldb)
    assert verify(from_leveldb).payloads == 29
    assert verify(from_leveldb).payload_bytes > 1_200_000
    sql = settings.model_copy(update={"blob_store": "sql"})
    await restore(from_leveldb, verify(from_leveldb), sql, force=True)
    assert await _episodes(sql, ids) == before
    # Twelve documents and fourteen chunks (eleven episodes' steps, three appends), now
    # rows; the orphans are left out (in SQL no sweep would find them).
    assert await _payload_rows(sql) == 26

    # Into a store that holds payload rows, only with --force.
    with pytest.raises(RestoreRefused, match="not empty"):
        await restore(from_leveldb, verify(from_leveldb), sql)

    from_sql = tmp_path / "sql.tar.gz"
    await _backup(sql, from_sql)
    assert verify(from_sql).rows == verify(from_leveldb).rows
    assert _payloads(from_sql) == _payloads(from_leveldb) - orphans
    leveldb = settings.model_copy(update={"blob_dir": tmp_path / "blobs-again"})
    await restore(from_sql, verify(from_sql), leveldb, force=True)
    assert await _episodes(leveldb, ids) == before
    # The SQL payloads went with the tables the restore replaced.
    assert await _payload_rows(leveldb) == 0
