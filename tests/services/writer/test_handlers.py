"""Each handler that offers SQLite statements for the direct path stores, through them,
exactly the rows its `write` stores in a session, for the same commands."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from fastapi import FastAPI
from sqlalchemy import text

from app.services.memories.writes import CreateMemory, MemoryWrites
from app.services.recall.logs import LogRecall, RecallLogs
from app.services.writer.direct import write_direct
from tests.services.writer.test_batches import NOW, _memory, _transition

SESSION, DIRECT = "ns-session", "ns-direct"


def _rounds(ns: str) -> list[list[CreateMemory | LogRecall]]:
    """Two batches: memories and a task's first recall, then recalls that chain to it
    and use the memories (one twice), one of another task and one of no task."""

    def memory(mid: str) -> CreateMemory:
        return CreateMemory.of(_memory(mid) | {"namespace": ns}, client_id=False)

    def log(tid: str, task: str | None, selected: list[str], **changes: Any) -> LogRecall:
        row = _transition(tid, task, **changes) | {"namespace": ns}
        return LogRecall.of(row, selected=selected)

    later = NOW + timedelta(seconds=5)
    return [
        [memory("a"), memory("b"), memory("c"), log("t0", "task-1", ["a"])],
        [
            log("t1", "task-1", ["a", "b"], created_at=later),
            log("u1", "task-2", ["c"], created_at=later),
            log("t2", "task-1", ["a"], created_at=later + timedelta(seconds=1)),
            log("n1", None, [], created_at=later),
        ],
    ]


async def _write(app: FastAPI, ns: str, *, direct: bool) -> None:
    engine = app.state.engram.engine
    memories, logs = MemoryWrites(), RecallLogs()
    for commands in _rounds(ns):
        parts = {memories: memories.part(), logs: logs.part()}
        for cmd in commands:
            handler = memories if isinstance(cmd, CreateMemory) else logs
            assert handler.direct(cmd)  # type: ignore[arg-type]
            handler.decide(parts[handler], cmd)  # type: ignore[arg-type]
        if direct:
            statements = [s for h, p in parts.items() for s in h.statements(engine.dialect, p)]
            await write_direct(engine, statements)
            continue
        async with app.state.engram.transactions.write() as session:
            for handler, part in parts.items():
                await handler.write(session, part)
            await session.commit()


async def _table(app: FastAPI, table: str, ns: str) -> list[dict[str, Any]]:
    async with app.state.engram.transactions.read_sessions() as session:
        found = await session.execute(
            text(f"SELECT * FROM {table} WHERE namespace = :ns ORDER BY id"), {"ns": ns}
        )
        return [{**r._mapping, "namespace": None} for r in found]


async def test_the_direct_statements_store_what_write_stores(app: FastAPI, backend: str) -> None:
    if backend == "postgresql":
        pytest.skip("the direct path is the SQLite driver adapter's (SQLite and libSQL)")
    await _write(app, SESSION, direct=False)
    await _write(app, DIRECT, direct=True)
    for table in ("memories", "rl_transitions"):
        session_rows, direct_rows = (
            await _table(app, table, SESSION),
            await _table(app, table, DIRECT),
        )
        assert len(session_rows) == {"memories": 3, "rl_transitions": 5}[table]
        assert session_rows == direct_rows
    links = {r["id"]: r["next_id"] for r in await _table(app, "rl_transitions", DIRECT)}
    assert links == {"n1": None, "t0": "t1", "t1": "t2", "t2": None, "u1": None}
    uses = {r["id"]: r["use_count"] for r in await _table(app, "memories", DIRECT)}
    assert uses == {"a": 3, "b": 1, "c": 1}
