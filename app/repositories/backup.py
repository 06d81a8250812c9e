"""SQL of backups: every table of the models, read in one snapshot or loaded in bulk."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

from sqlalchemy import Table, delete, func, insert, select
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncConnection

from app.db.backends import backend_of
from app.models import Base, DashboardSession, EpisodePayload, PendingEmbedding

# Not archived: the payloads travel as the archive's payloads section, whichever store
# keeps them; the memories waiting for a vector are put back on the list by the trigger
# that restoring each memory fires (those with a vector are taken off it unembedded);
# dashboard sign-ins end with the database they were made on.
LEFT_OUT = {
    EpisodePayload.__tablename__,
    PendingEmbedding.__tablename__,
    DashboardSession.__tablename__,
}


def tables() -> list[Table]:
    """Every table the models declare, in dependency order (tables added later
    included), but those LEFT_OUT."""
    return [t for t in Base.metadata.sorted_tables if t.name not in LEFT_OUT]


class BackupRepository:
    def __init__(self, conn: AsyncConnection) -> None:
        self.conn = conn

    async def revision(self) -> str | None:
        """The Alembic revision the database is at (None before the first migration)."""

        def _current(sync: Connection) -> str | None:
            from alembic.runtime.migration import MigrationContext

            return MigrationContext.configure(sync).get_current_revision()

        return await self.conn.run_sync(_current)

    async def count(self, table: Table) -> int:
        return int((await self.conn.execute(select(func.count()).select_from(table))).scalar_one())

    async def is_empty(self) -> bool:
        for table in Base.metadata.sorted_tables:
            if (await self.conn.execute(select(1).select_from(table).limit(1))).first():
                return False
        return True

    async def rows(self, table: Table, *, batch: int) -> AsyncIterator[Sequence[Any]]:
        """The table's rows in primary-key order, `batch` at a time, through a cursor."""
        query = select(table).order_by(*table.primary_key.columns)
        result = await self.conn.stream(query.execution_options(yield_per=batch))
        async for part in result.partitions(batch):
            yield part

    async def clear(self) -> None:
        for table in reversed(Base.metadata.sorted_tables):
            await self.conn.execute(delete(table))

    async def insert(self, table: Table, rows: list[dict[str, Any]]) -> None:
        if rows:
            await self.conn.execute(insert(table), rows)

    async def set_snapshot_isolation(self) -> None:
        """PostgreSQL: the transaction sees one snapshot (SQLite's read transaction does)."""
        await backend_of(self.conn).read_snapshot(self.conn)
