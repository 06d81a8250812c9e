"""The direct SQLite path: a batch of new memories and recall logs, which reads nothing
before its decisions, written as one transaction in one call to the connection's thread."""

from __future__ import annotations

import sqlite3
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from app.db.backends import backend_of, sqlite_driver
from app.db.rows import as_sqlalchemy_error, compiled_insert
from app.repositories.memories import MEMORIES, MemoryUsageRepository
from app.repositories.transitions import LINK_PREVIOUS_SQLITE, TRANSITIONS, chain
from app.services.writer.commands import Batch, Command


def is_direct(engine: AsyncEngine, commands: list[Command]) -> bool:
    """SQLite, and only new memories whose ids the service chose and recall logs: the
    batch reads nothing before its decisions, so it is written as one transaction in
    one call to the connection's thread (`write_direct`)."""
    return backend_of(engine).direct_writes and all(
        c.kind == "transition" or (c.kind == "memory" and not c.data["client_id"]) for c in commands
    )


async def write_direct(engine: AsyncEngine, batch: Batch) -> None:
    """`write` of an `is_direct` batch: the same rows, through
    `sqlite_driver.Connection.write`."""
    async with engine.connect() as conn:
        statements = direct_statements(conn.dialect, batch.memories, batch.transitions)
        adapter = (await conn.get_raw_connection()).dbapi_connection
        assert isinstance(adapter, sqlite_driver.Connection)
        try:
            await adapter.write(statements)
        except sqlite3.Error as exc:
            notes = "; ".join(getattr(exc, "__notes__", ()))
            raise as_sqlalchemy_error(notes, exc) from exc


def direct_statements(
    dialect: Any, memories: list[dict[str, Any]], logs: list[dict[str, Any]]
) -> list[tuple[str, Any]]:
    """An `is_direct` batch as SQLite statements, each an executemany: the new memories
    (in multi-row INSERTs, for their full-text trigger), then the recall logs as
    `log_transitions` writes them."""
    statements: list[tuple[str, Any]] = []
    if memories:
        statements += compiled_insert(MEMORIES, dialect).multi(memories)
    if logs:
        new = [log["row"] for log in logs]
        links = [(first, ns, task_id, first) for ns, task_id, first in chain(new)]
        if links:
            statements.append((LINK_PREVIOUS_SQLITE, links))
        statements.append(compiled_insert(TRANSITIONS, dialect).many(new))
        uses = [
            (log["row"]["namespace"], log["selected"], log["row"]["created_at"]) for log in logs
        ]
        sql, params = MemoryUsageRepository.mark_used_sqlite(uses)
        if params:
            statements.append((sql, params))
    return statements
