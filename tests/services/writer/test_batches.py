"""The writer's group commits of new memories and recall logs: on SQLite one call to the
connection's thread stores what the session path stores; on every backend, recalls of
one task that share a batch are chained in order."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi import FastAPI
from sqlalchemy import text

from app.core.errors import Conflict
from app.repositories.memories import MemoryUsageRepository
from app.repositories.transitions import TransitionRepository
from app.services.memories.rows import new_memory
from app.services.memories.writes import CreateMemory
from app.services.recall.logs import LogRecall
from app.services.writer import Replayed, Writer
from tests.conftest import thread_calls

NS = "ns-writer"
NOW = datetime(2026, 11, 30, 8, 9, 10, 123456, tzinfo=UTC)


def _transition(transition_id: str, task_id: str | None, **changes: Any) -> dict[str, Any]:
    return {
        "namespace": NS,
        "id": transition_id,
        "task_id": task_id,
        "agent_id": "agent-ü",
        "task_type": "deploy",
        "policy_id": "baseline_v0",
        "policy_version": 1,
        "propensity": 0.125,
        "status": "pending",
        "reward": None,
        "reward_id": None,
        "reward_source": None,
        "next_id": None,
        "created_at": NOW,
        "completed_at": None,
        "observation_vector": [0.5, 1.0, -2.25],
        "n_candidates": 1,
        "dataset_lists": '{"candidate_ids":["m1"]}',
        "state": {"request": {"n_candidates": 1, "task_type": "deploy"}, "candidates": []},
        "action": {"selected": ["m1"], "modes": {"m1": "context"}, "explored": False},
    } | changes


def _memory(memory_id: str) -> dict[str, Any]:
    row = new_memory(
        NS,
        memory_id,
        content=f"memory {memory_id}",
        confidence=0.5,
        sensitivity="low",
        criticality=0.5,
        source_refs=[],
        metadata={},
        now=NOW,
    )
    return row | {"type": "fact", "scope": {"level": "global"}}


async def log_recall(writer: Writer, row: dict[str, Any], *, selected: list[str]) -> None:
    await writer.submit(LogRecall.of(row, selected=selected))


async def create_memory(writer: Writer, row: dict[str, Any], *, client_id: bool) -> Replayed:
    return await writer.submit(CreateMemory.of(row, client_id=client_id))


def _writer(app: FastAPI) -> Writer:
    writer: Writer = app.state.engram.writer
    return writer


async def _rows(app: FastAPI, table: str, *ids: str) -> dict[str, dict[str, Any]]:
    async with app.state.engram.transactions.read_sessions() as session:
        found = await session.execute(
            text(f"SELECT * FROM {table} WHERE namespace = :ns ORDER BY id"), {"ns": NS}
        )
        rows = {r.id: dict(r._mapping) for r in found}
    return {i: rows[i] for i in ids}


async def _log(writer: Writer, *rows: dict[str, Any], selected: list[str]) -> int:
    """Log the rows concurrently; returns the number of group commits they took."""
    before = writer.batches
    await asyncio.gather(*(log_recall(writer, r, selected=selected) for r in rows))
    return writer.batches - before


async def test_recalls_of_one_task_in_one_batch_are_chained(app: FastAPI) -> None:
    writer = _writer(app)
    assert await _log(writer, _transition("t0", "task-1"), selected=[]) == 1
    batch = [_transition("t1", "task-1"), _transition("t2", "task-1"), _transition("u1", "task-2")]
    batch.append(_transition("t3", "task-1"))
    assert await _log(writer, *batch, selected=[]) == 1  # one batch, or the test proves nothing
    rows = await _rows(app, "rl_transitions", "t0", "t1", "t2", "t3", "u1")
    assert {i: r["next_id"] for i, r in rows.items()} == {
        "t0": "t1",
        "t1": "t2",
        "t2": "t3",
        "t3": None,
        "u1": None,
    }


async def test_the_session_path_chains_them_the_same_way(app: FastAPI) -> None:
    """A memory with an id the client chose needs a read: its batch takes the session path."""
    writer = _writer(app)
    await _log(writer, _transition("t0", "task-1"), selected=[])
    before = writer.batches
    await asyncio.gather(
        log_recall(writer, _transition("t1", "task-1"), selected=[]),
        create_memory(writer, _memory("chosen"), client_id=True),
        log_recall(writer, _transition("t2", "task-1"), selected=[]),
    )
    assert writer.batches - before == 1
    rows = await _rows(app, "rl_transitions", "t0", "t1", "t2")
    assert {i: r["next_id"] for i, r in rows.items()} == {"t0": "t1", "t1": "t2", "t2": None}


async def test_recall_logs_store_what_the_session_path_stores(app: FastAPI, backend: str) -> None:
    writer = _writer(app)
    await asyncio.gather(*(create_memory(writer, _memory(m), client_id=False) for m in "abc"))
    # Through the writer (on SQLite its direct path), with memory "a" used twice.
    logged = [_transition("w1", "task-9"), _transition("w2", None, created_at=NOW + timedelta(1))]
    before = writer.batches
    await asyncio.gather(
        log_recall(writer, logged[0], selected=["a", "b"]),
        log_recall(writer, logged[1], selected=["a"]),
    )
    assert writer.batches - before == 1
    # The same through SQLAlchemy's statements.
    async with app.state.engram.transactions.write() as session:
        await TransitionRepository(session).insert_many([_transition("s1", "task-9")])
        await MemoryUsageRepository(session).mark_used(NS, ["c"], now=NOW + timedelta(1))
        await session.commit()
    rows = await _rows(app, "rl_transitions", "w1", "s1")
    assert {**rows["w1"], "id": "s1"} == rows["s1"]
    memories = await _rows(app, "memories", "a", "b", "c")
    assert [memories[m]["use_count"] for m in "abc"] == [2, 1, 1]
    assert memories["a"]["last_used_at"] == memories["c"]["last_used_at"]
    assert memories["b"]["last_used_at"] != memories["c"]["last_used_at"]


async def test_new_memories_and_recall_logs_are_one_hand_off(
    app: FastAPI, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if backend == "postgresql":
        pytest.skip("the SQLite driver adapter's (SQLite and libSQL)")
    # Every connection the pool may hand out is opened first: a new connection's setup
    # (functions, pragmas) would otherwise run in the writer's batch whenever the worker
    # happened to hold the idle ones (8 runs in 10 on a loaded machine).
    engine = app.state.engram.engine
    opened = [await engine.connect() for _ in range(engine.pool.size())]
    for conn in opened:
        await conn.close()
    seen = thread_calls(monkeypatch, task="engram-episode-writer")  # not the worker's
    writer = _writer(app)
    before = writer.batches
    await asyncio.gather(
        *(create_memory(writer, _memory(f"m{i}"), client_id=False) for i in range(5)),
        log_recall(writer, _transition("t1", "task-1"), selected=["m1"]),
    )
    assert writer.batches - before == 1
    assert seen == ["_transaction"]
    assert (await _rows(app, "memories", "m1"))["m1"]["use_count"] == 1


async def test_a_taken_id_fails_alone(app: FastAPI) -> None:
    """An id taken despite being the service's choice (never, with uuid7: here forced)
    fails its own request with 409; the rest of its batch is stored."""
    writer = _writer(app)
    await create_memory(writer, _memory("taken"), client_id=False)
    results = await asyncio.gather(
        create_memory(writer, _memory("free-1"), client_id=False),
        create_memory(writer, _memory("taken") | {"content": "again"}, client_id=False),
        create_memory(writer, _memory("free-2"), client_id=False),
        return_exceptions=True,
    )
    assert isinstance(results[1], Conflict)
    assert [r.row["id"] for r in results if isinstance(r, Replayed)] == ["free-1", "free-2"]
    rows = await _rows(app, "memories", "free-1", "free-2", "taken")
    assert rows["taken"]["content"] == "memory taken"


async def test_a_row_the_store_refuses_fails_alone(app: FastAPI, backend: str) -> None:
    """A command whose row the database refuses fails its own request; the rest of its
    group commit is stored (the batch runs again command by command)."""
    writer = _writer(app)
    bad = _memory("refused") | {"metadata": {"not json": object()}}
    if backend == "postgresql":
        bad = _memory("refused") | {"content": "a NUL \x00 that PostgreSQL cannot store"}
    results = await asyncio.gather(
        create_memory(writer, _memory("ok-1"), client_id=False),
        create_memory(writer, bad, client_id=False),
        create_memory(writer, _memory("ok-2"), client_id=False),
        return_exceptions=True,
    )
    assert isinstance(results[1], Exception)
    assert [r.row["id"] for r in results if isinstance(r, Replayed)] == ["ok-1", "ok-2"]
    assert set(await _rows(app, "memories", "ok-1", "ok-2")) == {"ok-1", "ok-2"}
    async with app.state.engram.transactions.read_sessions() as session:
        found = await session.execute(
            text("SELECT id FROM memories WHERE namespace = :ns AND id = 'refused'"), {"ns": NS}
        )
        assert found.first() is None
