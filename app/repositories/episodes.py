"""SQL for episodes and their step skeletons."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, cast

from sqlalchemy import ColumnElement, Table, and_, delete, insert, or_, select, tuple_, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import Episode
from app.repositories import keyset
from app.schemas.filters import EpisodeFilters

EPISODES = cast(Table, Episode.__table__)
Key = tuple[str, str]


class EpisodeRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def get(self, namespace: str, episode_id: str) -> Episode | None:
        return await self.session.get(Episode, (namespace, episode_id))

    async def rows_for_write(
        self, keys: Iterable[Key], idempotency_keys: Iterable[Key]
    ) -> list[dict[str, Any]]:
        """Rows (as dicts) with one of these (namespace, id) or (namespace, idempotency key)."""
        clauses: list[ColumnElement[bool]] = []
        keys = list(keys)
        if keys:
            clauses.append(tuple_(EPISODES.c.namespace, EPISODES.c.id).in_(keys))
        for ns, idem in idempotency_keys:
            clauses.append(and_(EPISODES.c.namespace == ns, EPISODES.c.idempotency_key == idem))
        if not clauses:
            return []
        rows = await self.session.execute(select(EPISODES).where(or_(*clauses)))
        return [dict(row) for row in rows.mappings()]

    async def insert_many(self, episodes: Sequence[dict[str, Any]]) -> None:
        if episodes:
            await self.session.execute(insert(EPISODES), list(episodes))

    async def update_values(self, key: Key, values: dict[str, Any]) -> None:
        ns, eid = key
        await self.session.execute(
            update(EPISODES).where(EPISODES.c.namespace == ns, EPISODES.c.id == eid).values(values)
        )

    async def delete(self, key: Key) -> None:
        ns, eid = key
        await self.session.execute(
            delete(EPISODES).where(EPISODES.c.namespace == ns, EPISODES.c.id == eid)
        )

    async def any(self) -> bool:
        """Whether any namespace has an episode."""
        return (await self.session.execute(select(EPISODES.c.id).limit(1))).first() is not None

    async def step_counts(self, keys: Sequence[Key]) -> dict[Key, int]:
        """step_count of each (namespace, id) that has a row."""
        counts: dict[Key, int] = {}
        for start in range(0, len(keys), 500):
            part = list(keys[start : start + 500])
            stmt = select(EPISODES.c.namespace, EPISODES.c.id, EPISODES.c.step_count).where(
                tuple_(EPISODES.c.namespace, EPISODES.c.id).in_(part)
            )
            counts.update({(ns, eid): n for ns, eid, n in await self.session.execute(stmt)})
        return counts

    async def of_task(self, namespace: str, task_id: str) -> list[Episode]:
        """A task's episodes, oldest first (at most 1,000)."""
        stmt = (
            select(Episode)
            .where(Episode.namespace == namespace, Episode.task_id == task_id)
            .order_by(Episode.created_at, Episode.id)
            .limit(1000)
        )
        return list(await self.session.scalars(stmt))

    async def list(
        self,
        namespace: str,
        filters: EpisodeFilters,
        *,
        after: tuple[datetime, str] | None,
        limit: int,
    ) -> list[Episode]:
        """Newest first; keyset pagination on (created_at, id)."""
        stmt = select(Episode).where(Episode.namespace == namespace)
        for column, value in (
            (Episode.task_id, filters.task_id),
            (Episode.agent_id, filters.agent_id),
            (Episode.task_type, filters.task_type),
            (Episode.outcome, filters.outcome),
            (Episode.status, filters.status),
        ):
            if value is not None:
                stmt = stmt.where(column == value)
        if filters.since is not None:
            stmt = stmt.where(Episode.created_at >= filters.since)
        if filters.until is not None:
            stmt = stmt.where(Episode.created_at < filters.until)
        if after is not None:
            stmt = stmt.where(keyset.before(Episode.created_at, Episode.id, after))
        stmt = stmt.order_by(Episode.created_at.desc(), Episode.id.desc()).limit(limit)
        return list((await self.session.execute(stmt)).scalars())
