"""Stores that fail under a running service: 503 with the reason, nothing half-written,
and recovery without a restart once the store is back. `/ready` names the store."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from app.core.config import Settings
from app.main import create_app
from tests.conftest import episode_body, running


@contextlib.contextmanager
def small_disk(path: Path, size: str) -> Iterator[Path]:
    """A tmpfs of `size` at `path` (needs root, as CI runs; skipped elsewhere)."""
    path.mkdir(parents=True)
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def big_episode(i: int) -> dict[str, object]:
    # Random-looking outputs, so that LevelDB's compression cannot shrink them.
    noise = os.urandom(60_000).hex()
    return episode_body(f"big-{i}", steps=1) | {
        "steps": [
            {"action": "dump", "output": noise[k : k + 12_000]} for k in range(0, 120_000, 12_000)
        ]
    }


async def test_payload_disk_full_is_503_and_recovers_without_restart(
    settings: Settings, tmp_path: Path
) -> None:
    with small_disk(tmp_path / "disk", "6m") as disk:
        local = settings.model_copy(update={"blob_dir": disk / "blobs"})
        app = create_app(local)
        async with running(app) as client:
            acked: list[str] = []
            failed = None
            for i in range(200):
                r = await client.post("/v1/episodes", json=big_episode(i))
                if r.status_code != 201:
                    failed = r
                    break
                acked.append(r.json()["id"])
            assert failed is not None, "the disk never filled"
            assert failed.status_code == 503, failed.text
            assert failed.json()["error"] == "StoreUnavailable"
            assert "No space left on device" in failed.json()["detail"]
            assert failed.headers["retry-after"] == "1"
            # Later writes fail the same way; reads of what was acknowledged still work.
            again = await client.post("/v1/episodes", json=episode_body("small"))
            assert again.status_code == 503, again.text
            ready = await client.get("/ready")
            assert ready.status_code == 503
            assert ready.json()["stores"]["sql"] == "ok"
            assert "No space left" in ready.json()["stores"]["blobs"]
            # Nothing of the refused episodes reached SQL.
            listed = (await client.get("/v1/episodes", params={"limit": "200"})).json()["items"]
            assert sorted(e["id"] for e in listed) == sorted(acked)

            # The operator makes room: the service recovers by itself.
            subprocess.run(["mount", "-o", "remount,size=64m", str(disk)], check=True)
            for _ in range(50):
                ready = await client.get("/ready")
                if ready.status_code == 200:
                    break
                await asyncio.sleep(0.1)
            assert ready.status_code == 200, ready.text
            r = await client.post("/v1/episodes", json=episode_body("after"))
            assert r.status_code == 201, r.text
            for eid in [*acked, r.json()["id"]]:
                got = await client.get(f"/v1/episodes/{eid}")
                assert got.status_code == 200, got.text
                assert got.json()["steps"]


async def test_sqlite_locked_by_another_process_is_503_and_recovers(
    settings: Settings, tmp_path: Path
) -> None:
    if not settings.database_url.startswith("sqlite"):
        pytest.skip("SQLite's file lock; PostgreSQL's lock timeout is tested below")
    local = settings.model_copy(update={"sqlite_busy_timeout_ms": 300})
    app = create_app(local)
    async with running(app) as client:
        eid = (await client.post("/v1/episodes", json=episode_body("before"))).json()["id"]
        path = local.database_url.split("///", 1)[1]
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN EXCLUSIVE")  # another program holds the write lock
        try:
            r = await client.post("/v1/episodes", json=episode_body("during"))
            assert r.status_code == 503, r.text
            assert r.json()["error"] == "StoreUnavailable"
            assert "locked" in r.json()["detail"]
            m = await client.post("/v1/memories", json={"type": "fact", "content": "x"})
            assert m.status_code == 503, m.text
            # Reads go on: WAL readers never wait for the writer, and neither does the
            # key check that precedes every request (it once took a write transaction).
            for _ in range(3):
                got = await client.get(f"/v1/episodes/{eid}")
                assert got.status_code == 200, got.text
        finally:
            other.rollback()
            other.close()
        r = await client.post("/v1/episodes", json=episode_body("after"))
        assert r.status_code == 201, r.text
        tasks = [e["task_id"] for e in (await client.get("/v1/episodes")).json()["items"]]
        assert tasks == ["after", "before"]
        assert (await client.get(f"/v1/episodes/{eid}")).status_code == 200
        facts = (await client.get("/v1/memories", params={"type": "fact"})).json()["items"]
        assert facts == []


async def test_postgres_table_lock_is_503_within_the_lock_timeout(settings: Settings) -> None:
    if not settings.database_url.startswith("postgresql"):
        pytest.skip("PostgreSQL's lock_timeout")
    local = settings.model_copy(update={"db_lock_timeout_ms": 300})
    app = create_app(local)
    async with running(app) as client:
        mid = (await client.post("/v1/memories", json={"type": "fact", "content": "x"})).json()[
            "id"
        ]
        async with app.state.engram.engine.connect() as other:
            await other.execute(text("BEGIN"))
            await other.execute(text("LOCK TABLE memories IN ACCESS EXCLUSIVE MODE"))
            r = await client.post(f"/v1/memories/{mid}/forget")
            assert r.status_code == 503, r.text
            assert "lock" in r.json()["detail"]
            await other.execute(text("ROLLBACK"))
        r = await client.post(f"/v1/memories/{mid}/forget")
        assert r.status_code == 200, r.text
