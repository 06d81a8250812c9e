"""SQL for memories: rows, their lifecycle, listings, and usage and reward statistics.
Ranked search is `app/search/`."""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, insert, select, tuple_, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.backends import KINDS, backend_of
from app.db.rows import as_sqlalchemy_error, compiled_insert, sqlite_utc_text
from app.models import Memory
from app.repositories import keyset
from app.repositories.memory_sql import (
    COLUMNS,
    MEMORIES,
    FilterShape,
    MemoryRecord,
    MemoryRow,
    filter_params,
    request_ids,
    status_clause,
)
from app.schemas.filters import MemoryFilters

__all__ = ["MEMORIES", "MemoryRecord", "MemoryRepository", "MemoryRow", "MemoryUsageRepository"]


@functools.lru_cache(maxsize=64)
def _typed_statement(backend_name: str, applies_to: int | None) -> Any:
    applies = [] if applies_to is None else [KINDS[backend_name].scope_applies(applies_to)]
    return (
        select(*COLUMNS)
        .where(
            MEMORIES.c.namespace == bindparam("namespace"),
            MEMORIES.c.type == bindparam("type"),
            status_clause(["active"]),
            *applies,
        )
        .order_by(MEMORIES.c.criticality.desc(), MEMORIES.c.id.desc())  # index order, no sort
        .limit(bindparam("limit"))
    )


class MemoryRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def get(self, namespace: str, memory_id: str) -> Memory | None:
        return await self.session.get(Memory, (namespace, memory_id))

    async def insert(self, row: dict[str, Any]) -> None:
        await self.session.execute(insert(MEMORIES), [row])

    async def insert_many(self, rows: Sequence[dict[str, Any]]) -> None:
        """New memories, each row with every column, in one statement."""
        if not rows:
            return
        conn = await self.session.connection()
        if not backend_of(conn).direct_writes:
            await conn.execute(insert(MEMORIES), list(rows))
            return
        # SQLite: multi-row INSERTs (an executemany would flush the full-text index at
        # every row) on the driver's connection, inside the session's transaction (begun
        # above). Through SQLAlchemy each row would pay for its general bind processing,
        # and each statement for three trips to the driver's thread.
        driver = (await conn.get_raw_connection()).driver_connection
        assert driver is not None
        for sql, params in compiled_insert(MEMORIES, conn.dialect).multi(rows):
            try:
                async with driver.execute(sql, params[0]):
                    pass
            except sqlite3.Error as exc:
                raise as_sqlalchemy_error(sql, exc) from exc

    async def existing(self, keys: set[tuple[str, str]]) -> dict[tuple[str, str], dict[str, Any]]:
        """The rows (by column name) of these (namespace, id) pairs that are taken."""
        if not keys:
            return {}
        stmt = select(MEMORIES).where(tuple_(MEMORIES.c.namespace, MEMORIES.c.id).in_(list(keys)))
        rows = (await self.session.execute(stmt)).mappings()
        return {(row["namespace"], row["id"]): dict(row) for row in rows}

    async def transition(
        self,
        namespace: str,
        memory_id: str,
        *,
        from_statuses: Sequence[str],
        values: dict[str, Any],
    ) -> bool:
        """Apply values if the memory is still in one of from_statuses (one winner under races)."""
        stmt = (
            update(MEMORIES)
            .where(
                MEMORIES.c.namespace == namespace,
                MEMORIES.c.id == memory_id,
                MEMORIES.c.status.in_(from_statuses),
            )
            .values(values)
        )
        result = await self.session.execute(stmt)
        return bool(getattr(result, "rowcount", 0))

    async def list(
        self,
        namespace: str,
        filters: MemoryFilters,
        *,
        now: datetime,
        after: tuple[datetime, str] | None,
        limit: int,
    ) -> list[Memory]:
        backend = backend_of(self.session)
        shape = FilterShape.of(filters)
        stmt = select(Memory).where(*shape.clauses())
        if shape.applies_to is not None:
            stmt = stmt.where(backend.scope_applies(shape.applies_to))
        if after is not None:
            stmt = stmt.where(keyset.before(Memory.created_at, Memory.id, after))
        stmt = stmt.order_by(Memory.created_at.desc(), Memory.id.desc()).limit(limit)
        params = filter_params(namespace, filters, now, backend=backend)
        return list((await self.session.execute(stmt, params)).scalars())


_MARK_USED_SQLITE = (
    "UPDATE memories SET use_count = use_count + 1, last_used_at = ? WHERE namespace = ? AND id = ?"
)


class MemoryUsageRepository:
    """Usage and reward statistics of memories, updated by recall and rewards."""

    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def top_constraints(
        self,
        namespace: str,
        *,
        now: datetime,
        limit: int,
        applies_to: Mapping[str, str] | None = None,
    ) -> list[MemoryRow]:
        """Current constraints, most critical first: recall considers them whatever the text.
        With `applies_to` (a request's scope), only those that apply to it."""
        return await self.top_of_type(
            namespace, "constraint", now=now, limit=limit, applies_to=applies_to
        )

    async def top_of_type(
        self,
        namespace: str,
        memory_type: str,
        *,
        now: datetime,
        limit: int,
        applies_to: Mapping[str, str] | None = None,
    ) -> list[MemoryRow]:
        """Active memories of a type, most critical first (with `applies_to`, those that
        apply to a request's scope)."""
        backend = backend_of(self.session)
        params: dict[str, Any] = {
            "namespace": namespace,
            "now": now,
            "limit": limit,
            "type": memory_type,
        }
        n_ids = None
        if applies_to is not None:
            ids = request_ids(applies_to)
            n_ids = len(ids)
            params |= backend.scope_params(ids)
        stmt = _typed_statement(backend.name, n_ids)
        return list(await self.session.execute(stmt, params))

    async def lock(self, namespace: str, ids: Iterable[str]) -> None:
        """Lock the rows in id order (where rows lock): transactions that update overlapping
        sets of memories (a batch of recalls, a reward) then wait for each other, not
        deadlock."""
        wanted = sorted(set(ids))
        if wanted and backend_of(self.session).row_locks:
            await self.session.execute(
                select(MEMORIES.c.id)
                .where(MEMORIES.c.namespace == namespace, MEMORIES.c.id.in_(wanted))
                .order_by(MEMORIES.c.id)
                .with_for_update()
            )

    @staticmethod
    def mark_used_sqlite(
        uses: Iterable[tuple[str, Sequence[str], datetime]],
    ) -> tuple[str, list[tuple[Any, ...]]]:
        """`mark_used` of each (namespace, ids, now) as one executemany on SQLite, the
        memories in id order."""
        params = [
            (sqlite_utc_text(now), namespace, memory_id)
            for namespace, ids, now in uses
            for memory_id in sorted(set(ids))
        ]
        return _MARK_USED_SQLITE, params

    async def mark_used(self, namespace: str, ids: Sequence[str], *, now: datetime) -> None:
        if ids:
            await self.session.execute(
                update(MEMORIES)
                .where(MEMORIES.c.namespace == namespace, MEMORIES.c.id.in_(list(ids)))
                .values(use_count=MEMORIES.c.use_count + 1, last_used_at=now)
            )

    async def credit(
        self, namespace: str, ids: Sequence[str], reward: float, *, count: int = 1
    ) -> None:
        """Add a reward to the memories' sums (`count` 0: a reward replacing one counted)."""
        if ids:
            await self.session.execute(
                update(MEMORIES)
                .where(MEMORIES.c.namespace == namespace, MEMORIES.c.id.in_(list(ids)))
                .values(
                    reward_count=MEMORIES.c.reward_count + count,
                    reward_sum=MEMORIES.c.reward_sum + reward,
                )
            )
