"""The server's WAL checkpoint thread (SQLite): commits leave the log to it, and what it
copies reaches the database file."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import sqlite3
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import text

from app.core.config import Settings
from app.db.backends import checkpoint

pytestmark = pytest.mark.usefixtures("sqlite_only")


@pytest.fixture
def sqlite_only(backend: str) -> None:
    if backend != "sqlite":
        pytest.skip("SQLite's write-ahead log")


def _db_path(settings: Settings) -> Path:
    return Path(settings.database_url.split("///", 1)[1])


async def _write_memories(app: FastAPI, n: int) -> None:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        for i in range(n):
            r = await client.post("/v1/memories", json={"type": "fact", "content": f"fact {i}"})
            assert r.status_code == 201, r.text


async def _file_alone_count(settings: Settings, tmp_path: Path) -> int:
    """Memories in the database file without its log (a copy of the file alone); -1
    before the schema reaches the file."""
    copy = tmp_path / "alone.db"
    shutil.copyfile(_db_path(settings), copy)
    with contextlib.closing(sqlite3.connect(copy)) as conn:
        try:
            return int(conn.execute("SELECT count(*) FROM memories").fetchone()[0])
        except sqlite3.OperationalError:
            return -1


async def test_commits_leave_the_log_to_the_checkpoint_thread(
    settings: Settings, tmp_path: Path
) -> None:
    from app.main import create_app

    settings = settings.model_copy(update={"sqlite_checkpoint_interval_ms": 3_600_000})
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        state = app.state.engram
        async with state.transactions.read_sessions() as session:
            pages = (await session.execute(text("PRAGMA wal_autocheckpoint"))).scalar()
        assert pages == checkpoint.SAFETY_PAGES
        await state.checkpointer.checkpoint()  # the schema, in the file
        await _write_memories(app, 30)
        assert await _file_alone_count(settings, tmp_path) == 0  # all still in the log
        done = await state.checkpointer.checkpoint()
        assert done.log_pages > 0
        assert done.copied_pages == done.log_pages
        assert await _file_alone_count(settings, tmp_path) == 30
        registry = app.state.metrics.registry
        assert registry.get_sample_value("engram_sqlite_wal_pages") == done.log_pages


async def test_the_thread_checkpoints_on_its_own(settings: Settings, tmp_path: Path) -> None:
    from app.main import create_app

    settings = settings.model_copy(update={"sqlite_checkpoint_interval_ms": 20})
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        await _write_memories(app, 10)
        for _ in range(250):
            if await _file_alone_count(settings, tmp_path) == 10:
                break
            await asyncio.sleep(0.02)
        assert await _file_alone_count(settings, tmp_path) == 10
        assert app.state.engram.checkpointer.last is not None


async def test_without_the_thread_commits_checkpoint_as_sqlite_does(settings: Settings) -> None:
    from app.main import create_app

    settings = settings.model_copy(update={"sqlite_checkpoint_interval_ms": 0})
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        assert app.state.engram.checkpointer is None
        async with app.state.engram.transactions.read_sessions() as session:
            pages = (await session.execute(text("PRAGMA wal_autocheckpoint"))).scalar()
        assert pages == 1000
