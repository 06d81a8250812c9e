"""SQL for patterns: the counters learning adds to, and the pages the API lists."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from sqlalchemy import Table, bindparam, insert, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.backends import backend_of
from app.models import Pattern

PATTERNS = cast(Table, Pattern.__table__)
CHUNK = 500
COUNTER_COLUMNS = (
    *("support", "successes", "reward_sum", "reward_count", "success_rate"),
    *("mean_reward", "lcb", "evidence", "updated_at"),
)


class PatternRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def get(self, namespace: str, pattern_id: str) -> Pattern | None:
        return await self.session.get(Pattern, (namespace, pattern_id))

    async def task_types(self, namespace: str) -> list[str]:
        """The task types learning has counted episodes of."""
        stmt = select(Pattern.task_type).where(
            Pattern.namespace == namespace, Pattern.kind == "task"
        )
        return list((await self.session.scalars(stmt)).all())

    async def counters(
        self, namespace: str, ids: Sequence[str], *, lock: bool = False
    ) -> dict[str, dict[str, Any]]:
        """Patterns as plain dicts, to be changed and written back with update_counters;
        `lock` (with ids in sorted order, so that two workers lock in the same order)
        holds them until the transaction ends (PostgreSQL)."""
        found: dict[str, dict[str, Any]] = {}
        for start in range(0, len(ids), CHUNK):
            stmt = select(PATTERNS).where(
                PATTERNS.c.namespace == namespace,
                PATTERNS.c.id.in_(list(ids[start : start + CHUNK])),
            )
            if lock:
                stmt = stmt.order_by(PATTERNS.c.id).with_for_update()
            found.update({r.id: dict(r._mapping) for r in await self.session.execute(stmt)})
        return found

    async def update_counters(self, rows: Sequence[dict[str, Any]]) -> None:
        if not rows:
            return
        stmt = (
            update(PATTERNS)
            .where(PATTERNS.c.namespace == bindparam("b_ns"), PATTERNS.c.id == bindparam("b_id"))
            .values({c: bindparam(f"b_{c}") for c in COUNTER_COLUMNS})
        )
        params = [
            {"b_ns": r["namespace"], "b_id": r["id"], **{f"b_{c}": r[c] for c in COUNTER_COLUMNS}}
            for r in rows
        ]
        await self.session.execute(stmt, params)

    async def counters_for_update(
        self, namespace: str, fresh: dict[str, dict[str, Any]]
    ) -> dict[str, dict[str, Any]]:
        """The counters of these patterns, created from `fresh` where missing, to be added
        to and written back in this transaction.

        PostgreSQL: missing rows are inserted first (ON CONFLICT DO NOTHING), then all are
        read locked in id order, so concurrent workers wait for each other. SQLite: a
        write transaction is the only writer (BEGIN IMMEDIATE), so a plain read and an
        insert of the missing rows suffice."""
        backend = backend_of(self.session)
        if backend.row_locks:
            stmt = backend.insert_ignoring_duplicates(PATTERNS, ["namespace", "id"])
            await self.session.execute(stmt, list(fresh.values()))
            return await self.counters(namespace, sorted(fresh), lock=True)
        found = await self.counters(namespace, list(fresh))
        missing = [row for pid, row in fresh.items() if pid not in found]
        await self.insert_many(missing)
        found.update({row["id"]: dict(row) for row in missing})
        return found

    async def insert_many(self, rows: Sequence[dict[str, Any]]) -> None:
        if rows:
            await self.session.execute(insert(PATTERNS), list(rows))

    async def of_kinds(self, namespace: str, task_type: str, kinds: Sequence[str]) -> list[Pattern]:
        stmt = select(Pattern).where(
            Pattern.namespace == namespace,
            Pattern.kind.in_(list(kinds)),
            Pattern.task_type == task_type,
        )
        return list(await self.session.scalars(stmt))

    async def page(
        self,
        namespace: str,
        *,
        kind: str | None,
        task_type: str | None,
        min_support: int,
        sort: str,
        offset: int,
        limit: int,
    ) -> list[Pattern]:
        stmt = select(Pattern).where(
            Pattern.namespace == namespace,
            Pattern.support >= min_support,
            Pattern.kind != "task",
        )
        if kind is not None:
            stmt = stmt.where(Pattern.kind == kind)
        if task_type is not None:
            stmt = stmt.where(Pattern.task_type == task_type)
        column = {
            "support": Pattern.support,
            "success_rate": Pattern.success_rate,
            "mean_reward": Pattern.mean_reward,
            "lcb": Pattern.lcb,
        }[sort]
        stmt = stmt.order_by(column.desc(), Pattern.id).offset(offset).limit(limit)
        return list(await self.session.scalars(stmt))
