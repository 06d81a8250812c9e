"""The migrations build exactly the schema the models declare, on SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy.engine import Connection

from app.core.config import Settings
from app.db.engine import create_engine
from app.db.migrate import migrate
from app.models import Base

# Objects the models cannot declare: SQLite's full-text tables and their triggers,
# PostgreSQL's generated tsvector column and GIN index; Alembic's own version table.
EXTERNAL = ("memories_fts", "alembic_version", "search_vector", "ix_memories_search")


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
