"""The SQLite driver adapter (app/db/backends/sqlite_driver.py): one call to aiosqlite's thread per
statement, with the results, errors and transactions of SQLAlchemy's own adapter."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine

from app.core.config import Settings
from app.db.backends import create_engine, sqlite_driver
from app.db.engine import create_sessionmaker
from tests.conftest import thread_calls


@pytest.fixture
async def engine(tmp_path: Path) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(Settings(database_url=f"sqlite+aiosqlite:///{tmp_path / 'd.db'}"))
    async with engine.begin() as conn:
        await conn.execute(text("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT UNIQUE)"))
    yield engine
    await engine.dispose()


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The functions run in aiosqlite's thread, by name."""
    return thread_calls(monkeypatch)


async def test_the_engine_uses_the_adapter(engine: AsyncEngine) -> None:
    async with engine.connect() as conn:
        raw = await conn.get_raw_connection()
        assert isinstance(raw.dbapi_connection, sqlite_driver.Connection)


async def test_one_hand_off_per_statement(engine: AsyncEngine, calls: list[str]) -> None:
    maker = create_sessionmaker(engine)
    async with maker() as session:  # a connection, opened
        await session.execute(text("SELECT 1"))
        await session.commit()
    calls.clear()
    async with maker() as session:
        rows = (await session.execute(text("SELECT :a, :b"), {"a": 1, "b": "x"})).all()
        await session.commit()
    assert rows == [(1, "x")]
    # BEGIN, the SELECT, COMMIT; the pool's reset after a commit is skipped. SQLAlchemy's
    # adapter made nine calls: cursor, execute, close for BEGIN; cursor, execute,
    # fetchall, close for the SELECT; commit; rollback.
    assert calls == ["_run", "_run", "_end"]


async def test_results_counts_and_errors(engine: AsyncEngine) -> None:
    maker = create_sessionmaker(engine, write=True)
    async with maker() as session:
        await session.execute(text("INSERT INTO t (v) VALUES ('a'), ('b'), ('c')"))
        r = await session.execute(text("UPDATE t SET v = v || '!' WHERE v != 'c'"))
        assert r.rowcount == 2
        last = await session.execute(text("INSERT INTO t (v) VALUES ('d')"))
        assert last.lastrowid == 4
        await session.execute(text("INSERT INTO t (v) VALUES (:v)"), [{"v": "e"}, {"v": "f"}])
        await session.commit()
    async with maker() as session:
        await session.execute(text("INSERT INTO t (v) VALUES ('g')"))
        with pytest.raises(IntegrityError):
            await session.execute(text("INSERT INTO t (v) VALUES ('a!')"))
        await session.rollback()  # not skipped after a failure: 'g' goes too
    async with maker() as session:
        values = (await session.execute(text("SELECT v FROM t ORDER BY id"))).scalars().all()
    assert values == ["a!", "b!", "c", "d", "e", "f"]


async def test_a_transaction_left_open_is_rolled_back_on_return(engine: AsyncEngine) -> None:
    """A session closed without commit: the pool's reset (a rollback) still runs."""
    maker = create_sessionmaker(engine, write=True)
    async with maker() as session:
        await session.execute(text("INSERT INTO t (v) VALUES ('lost')"))
    async with maker() as session:
        assert (await session.execute(text("SELECT count(*) FROM t"))).scalar() == 0
        await session.execute(text("INSERT INTO t (v) VALUES ('kept')"))
        await session.commit()
    async with maker() as session:
        assert (await session.execute(text("SELECT v FROM t"))).scalars().all() == ["kept"]


async def test_write_is_one_transaction_in_one_hand_off(
    engine: AsyncEngine, calls: list[str]
) -> None:
    async with engine.connect() as conn:
        adapter = (await conn.get_raw_connection()).dbapi_connection
        assert isinstance(adapter, sqlite_driver.Connection)
        calls.clear()
        await adapter.write(
            [
                ("INSERT INTO t (v) VALUES (?)", [("a",), ("b",)]),
                ("UPDATE t SET v = v || ? WHERE v = ?", [("!", "a")]),
            ]
        )
        assert calls == ["_transaction"]
        assert not adapter._in_transaction
    async with engine.connect() as conn:
        rows = (await conn.execute(text("SELECT v FROM t ORDER BY id"))).all()
    assert rows == [("a!",), ("b",)]


async def test_a_failed_write_is_rolled_back_whole(engine: AsyncEngine) -> None:
    async with engine.connect() as conn:
        adapter = (await conn.get_raw_connection()).dbapi_connection
        assert isinstance(adapter, sqlite_driver.Connection)
        with pytest.raises(sqlite3.IntegrityError) as failed:
            await adapter.write(
                [
                    ("INSERT INTO t (v) VALUES (?)", [("a",), ("b",)]),
                    ("INSERT INTO t (v) VALUES (?)", [("c",), ("a",)]),  # "a" is taken
                ]
            )
        assert failed.value.__notes__ == ["INSERT INTO t (v) VALUES (?)"]
        # The connection is usable, with no transaction left open.
        await adapter.write([("INSERT INTO t (v) VALUES (?)", [("d",)])])
    async with engine.connect() as conn:
        rows = (await conn.execute(text("SELECT v FROM t ORDER BY id"))).all()
    assert rows == [("d",)]
