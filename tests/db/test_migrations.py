"""The migrations build exactly the schema the models declare, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import text
from sqlalchemy.engine import Connection

from app.core.config import Settings
from app.db.backends import create_engine
from app.db.migrate import migrate
from app.models import Base

# Objects the models cannot declare: SQLite's full-text tables and their triggers,
# PostgreSQL's generated tsvector column and GIN index; Alembic's own version table.
EXTERNAL = ("memories_fts", "alembic_version", "search_vector", "ix_memories_search")


@pytest.fixture
def settings(settings: Settings, tmp_path: Path) -> Settings:
    """On SQLite, no file at all (not the migrated copy the other tests start from): the
    migrations run from the first."""
    (tmp_path / "engram.db").unlink(missing_ok=True)
    return settings


def _diff(connection: Connection) -> list[Any]:
    context = MigrationContext.configure(connection, opts={"compare_type": False})
    return list(compare_metadata(context, Base.metadata))


def _external(item: Any) -> bool:
    text = repr(item)
    return any(name in text for name in EXTERNAL)


async def test_migrated_schema_matches_the_models(settings: Settings) -> None:
    engine = create_engine(settings)
    try:
        await migrate(engine)
        async with engine.connect() as conn:
            diff = await conn.run_sync(_diff)
    finally:
        await engine.dispose()
    assert [d for d in diff if not _external(d)] == []


async def test_transition_upgrade_keeps_rows_and_puts_documents_last(settings: Settings) -> None:
    """Revision 9d41b7c2e8a5 copies the transitions table on SQLite to put state and
    action last: every row and value survives, and the new columns start empty."""
    engine = create_engine(settings)
    row = {
        "namespace": "default", "id": "r1", "task_id": "t1", "agent_id": "a1",
        "task_type": "release", "policy_id": "baseline_v0", "policy_version": 1,
        "state": '{"request": {"k": 3}, "candidates": []}',
        "action": '{"selected": [], "modes": {}}', "observation_vector": "[1.0, 2.0]",
        "propensity": 0.9, "status": "completed", "reward": 1.5, "reward_id": "w1",
        "next_id": None, "created_at": "2026-11-30 07:00:00.000000",
        "completed_at": "2026-11-30 07:00:01.000000",
    }  # fmt: skip
    if engine.dialect.name == "postgresql":
        row |= {"created_at": datetime(2026, 11, 30, 7, tzinfo=UTC)}
        row |= {"completed_at": datetime(2026, 11, 30, 7, 0, 1, tzinfo=UTC)}
    names = ", ".join(row)
    values = ", ".join(f":{k}" for k in row)
    try:
        await migrate(engine, revision="7c2a9e5d3f10")
        async with engine.begin() as conn:
            await conn.execute(text(f"INSERT INTO rl_transitions ({names}) VALUES ({values})"), row)
        await migrate(engine)
        async with engine.connect() as conn:
            stored = (await conn.execute(text("SELECT * FROM rl_transitions"))).mappings().one()
            columns = list(stored.keys())
            diff = await conn.run_sync(_diff)
    finally:
        await engine.dispose()
    assert [d for d in diff if not _external(d)] == []
    assert stored["n_candidates"] is None
    assert stored["dataset_lists"] is None
    for key in ("namespace", "id", "task_id", "agent_id", "task_type", "policy_id"):
        assert stored[key] == row[key]
    assert (stored["propensity"], stored["reward"], stored["status"]) == (0.9, 1.5, "completed")
    if engine.dialect.name == "sqlite":
        assert json.loads(stored["state"]) == json.loads(row["state"])
        assert json.loads(stored["observation_vector"]) == [1.0, 2.0]
        assert stored["completed_at"] == row["completed_at"]
        assert columns[-2:] == ["action", "state"]
        assert columns.index("status") < columns.index("observation_vector")


async def test_full_text_index_merges_sixteen_segments_at_a_time(
    settings: Settings, backend: str
) -> None:
    if backend != "sqlite":
        # PostgreSQL's index is a GIN over a tsvector column; a libSQL server's database
        # is migrated by the fixture before the test can stop it at an older revision.
        return
    engine = create_engine(settings)
    try:
        await migrate(engine, revision="9d41b7c2e8a5")
        found = "SELECT v FROM memories_fts_config WHERE k = 'automerge'"
        async with engine.connect() as conn:
            assert (await conn.execute(text(found))).scalar() is None  # FTS5's default, 4
        await migrate(engine)
        async with engine.connect() as conn:
            assert (await conn.execute(text(found))).scalar() == 16
    finally:
        await engine.dispose()
