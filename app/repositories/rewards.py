"""SQL for rewards: inserted once, read by id and in pages, newest first."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Table, insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import Reward
from app.repositories import keyset

REWARDS = cast(Table, Reward.__table__)


class RewardRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def insert(self, row: dict[str, Any]) -> None:
        await self.session.execute(insert(REWARDS), [row])

    async def get_many(self, namespace: str, ids: Sequence[str]) -> dict[str, Reward]:
        if not ids:
            return {}
        stmt = select(Reward).where(Reward.namespace == namespace, Reward.id.in_(list(ids)))
        return {r.id: r for r in (await self.session.execute(stmt)).scalars()}

    async def page(
        self,
        namespace: str,
        *,
        recall_id: str | None,
        task_id: str | None,
        episode_id: str | None = None,
        after: tuple[datetime, str] | None,
        limit: int,
    ) -> list[Reward]:
        stmt = select(Reward).where(Reward.namespace == namespace)
        if episode_id is not None:
            stmt = stmt.where(Reward.episode_id == episode_id)
        if recall_id is not None:
            stmt = stmt.where(Reward.recall_id == recall_id)
        if task_id is not None:
            stmt = stmt.where(Reward.task_id == task_id)
        if after is not None:
            stmt = stmt.where(keyset.before(Reward.created_at, Reward.id, after))
        stmt = stmt.order_by(Reward.created_at.desc(), Reward.id.desc()).limit(limit)
        return list((await self.session.execute(stmt)).scalars())
