"""The writer's insert of new memories (its own statement on SQLite) stores what
SQLAlchemy's insert stores, and fails the way SQLAlchemy's does."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from fastapi import FastAPI
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError

from app.repositories.memories import MemoryRepository
from app.services.memories.rows import new_memory


def _row(memory_id: str, **changes: Any) -> dict[str, Any]:
    india = timezone(timedelta(hours=5, minutes=30))
    row = new_memory(
        "ns-insert",
        memory_id,
        content="Zürich's café: port 8080 — «quoted» \\ backslash",
        confidence=0.25,
        sensitivity="high",
        criticality=1,  # an int where the column is a float
        source_refs=["episode:1", "ép:2"],
        metadata={"nested": {"list": [1, 2.5, None, True]}, "ünïcode": "✓"},
        now=datetime(2026, 3, 4, 5, 6, 7, 891, tzinfo=UTC),
        valid_from=datetime(2026, 1, 1, 0, 0, 0, tzinfo=india),  # no microseconds
        valid_until=datetime(999, 1, 2, 3, 4, 5, 6, tzinfo=UTC),  # a three-digit year
    )
    return row | {"type": "fact", "scope": {"level": "task", "task_id": "t1"}} | changes


async def _stored(app: FastAPI, *ids: str) -> list[dict[str, Any]]:
    async with app.state.engram.transactions.read_sessions() as session:
        rows = await session.execute(
            text("SELECT * FROM memories WHERE namespace = 'ns-insert' ORDER BY id")
        )
        found = [dict(r._mapping) for r in rows]
    assert [r["id"] for r in found] == sorted(ids)
    return found


async def test_insert_many_stores_what_sqlalchemy_stores(app: FastAPI) -> None:
    async with app.state.engram.transactions.write() as session:
        await MemoryRepository(session).insert(_row("a-orm"))
        await MemoryRepository(session).insert_many(
            [_row("b-batch"), _row("c-batch", last_used_at=datetime(2026, 5, 1, tzinfo=UTC))]
        )
        await MemoryRepository(session).insert(
            _row("d-orm", last_used_at=datetime(2026, 5, 1, tzinfo=UTC))
        )
        await session.commit()
    orm_a, batch_b, batch_c, orm_d = await _stored(app, "a-orm", "b-batch", "c-batch", "d-orm")
    assert {**batch_b, "id": "a-orm"} == orm_a
    assert {**batch_c, "id": "d-orm"} == orm_d
    assert batch_b["last_used_at"] is None


async def test_insert_many_of_a_taken_id_is_an_integrity_error(app: FastAPI) -> None:
    async with app.state.engram.transactions.write() as session:
        await MemoryRepository(session).insert_many([_row("taken")])
        await session.commit()
    async with app.state.engram.transactions.write() as session:
        with pytest.raises(IntegrityError):
            await MemoryRepository(session).insert_many([_row("free"), _row("taken")])
        await session.rollback()
    assert [r["id"] for r in await _stored(app, "taken")] == ["taken"]


async def test_insert_many_past_one_statement_indexes_every_row(
    app: FastAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows past one multi-row statement's share go in further statements: all stored,
    all in the full-text index, in order; a taken id in a later statement fails them all."""
    monkeypatch.setattr("app.db.rows.MULTI_ROWS", 4)
    ids = [f"r{i:02d}" for i in range(10)]
    async with app.state.engram.transactions.write() as session:
        await MemoryRepository(session).insert_many(
            [_row(i, content=f"lantern{i} shared") for i in ids]
        )
        await session.commit()
    async with app.state.engram.transactions.write() as session:
        with pytest.raises(IntegrityError):
            await MemoryRepository(session).insert_many(
                [_row(f"s{i}") for i in range(7)] + [_row("r03")]
            )
        await session.rollback()
    await _stored(app, *ids)
    if app.state.engram.engine.dialect.name != "sqlite":
        return
    async with app.state.engram.transactions.read_sessions() as session:
        found = await session.execute(
            text(
                "SELECT memory_id, content FROM memories_fts "
                "WHERE memories_fts MATCH 'shared' ORDER BY rowid"
            )
        )
        assert [tuple(r) for r in found] == [(i, f"lantern{i} shared") for i in ids]
