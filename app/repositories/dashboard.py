"""SQL for the dashboard's figures: counts, recent outcomes and rewards, recent recall
decisions and the history of many skills at once. Every read names its namespace."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import Episode, Memory, Pattern, Reward, Skill, SkillEvent, Transition


class DashboardRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def counts(self, namespace: str) -> dict[str, int]:
        """How many episodes, memories (not deleted), skills and patterns the namespace holds."""
        found: dict[str, int] = {}
        for name, model, extra in (
            ("episodes", Episode, None),
            ("memories", Memory, Memory.status != "deleted"),
            ("skills", Skill, None),
            ("patterns", Pattern, Pattern.kind != "task"),
        ):
            stmt = select(func.count()).select_from(model).where(model.namespace == namespace)
            if extra is not None:
                stmt = stmt.where(extra)
            found[name] = int((await self.session.execute(stmt)).scalar_one())
        return found

    async def transition_counts(self, namespace: str) -> dict[str, int]:
        """Transitions by status (completed ones are the dataset's rows)."""
        stmt = (
            select(Transition.status, func.count())
            .where(Transition.namespace == namespace)
            .group_by(Transition.status)
        )
        return {status: int(n) for status, n in await self.session.execute(stmt)}

    async def episode_times(
        self, namespace: str, *, since: datetime, limit: int
    ) -> list[tuple[datetime, str | None]]:
        """(created_at, outcome) of the newest episodes created since `since`."""
        stmt = (
            select(Episode.created_at, Episode.outcome)
            .where(Episode.namespace == namespace, Episode.created_at >= since)
            .order_by(Episode.created_at.desc(), Episode.id.desc())
            .limit(limit)
        )
        return [(at, outcome) for at, outcome in await self.session.execute(stmt)]

    async def recent_outcomes(self, namespace: str, *, limit: int) -> list[str]:
        """Outcomes of the newest completed episodes, oldest first."""
        stmt = (
            select(Episode.outcome)
            .where(Episode.namespace == namespace, Episode.outcome.is_not(None))
            .order_by(Episode.created_at.desc(), Episode.id.desc())
            .limit(limit)
        )
        return [o for o in reversed((await self.session.scalars(stmt)).all()) if o is not None]

    async def recent_rewards(self, namespace: str, *, limit: int) -> list[float]:
        """Scalars of the newest rewards, oldest first."""
        stmt = (
            select(Reward.scalar)
            .where(Reward.namespace == namespace)
            .order_by(Reward.created_at.desc(), Reward.id.desc())
            .limit(limit)
        )
        return [float(v) for v in reversed((await self.session.scalars(stmt)).all())]

    async def recent_decisions(self, namespace: str, *, limit: int) -> list[dict[str, Any]]:
        """State, action and reward of the newest recalls, newest first."""
        stmt = (
            select(Transition.state, Transition.action, Transition.reward, Transition.status)
            .where(Transition.namespace == namespace)
            .order_by(Transition.created_at.desc(), Transition.id.desc())
            .limit(limit)
        )
        return [dict(row) for row in (await self.session.execute(stmt)).mappings()]

    async def skill_events(
        self, namespace: str, skill_ids: Sequence[str]
    ) -> dict[str, list[SkillEvent]]:
        """Each skill's events, oldest first."""
        found: dict[str, list[SkillEvent]] = {sid: [] for sid in skill_ids}
        if not skill_ids:
            return found
        stmt = (
            select(SkillEvent)
            .where(SkillEvent.namespace == namespace, SkillEvent.skill_id.in_(list(skill_ids)))
            .order_by(SkillEvent.created_at, SkillEvent.id)
        )
        for event in await self.session.scalars(stmt):
            found[event.skill_id].append(event)
        return found
