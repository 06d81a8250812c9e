"""SQL for episode learning: which episodes learning has taken in (one row each, with
what was counted for it and its reflection), and what it reads of episodes to do so:
their skeletons, recent windows and baselines of a task type, their rewards."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Row, Table, insert, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import Episode, EpisodeLearning, Memory, Reward

LEARNING = cast(Table, EpisodeLearning.__table__)
CHUNK = 500

# What learning reads of an episode: its skeleton, never the payload.
EPISODE_COLUMNS = (
    Episode.id,
    Episode.task_id,
    Episode.agent_id,
    Episode.task_type,
    Episode.outcome,
    Episode.outcome_source,
    Episode.outcome_confidence,
    Episode.progress,
    Episode.steps,
    Episode.domain,
    Episode.language,
    Episode.tags,
    Episode.features,
    Episode.skills_applied,
    Episode.step_count,
    Episode.total_latency_ms,
    Episode.started_at,
    Episode.ended_at,
    Episode.created_at,
    Episode.completed_at,
)


class EpisodeLearningRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def completed(self, namespace: str, ids: Sequence[str]) -> list[Row[Any]]:
        """Completed episodes among `ids`, oldest completion first."""
        rows: list[Row[Any]] = []
        for start in range(0, len(ids), CHUNK):
            stmt = select(*EPISODE_COLUMNS).where(
                Episode.namespace == namespace,
                Episode.id.in_(list(ids[start : start + CHUNK])),
                Episode.status == "completed",
            )
            rows.extend((await self.session.execute(stmt)).all())
        return sorted(rows, key=lambda r: (r.completed_at, r.id))

    async def unlearned(
        self,
        namespace: str,
        *,
        since: datetime | None,
        until: datetime | None,
        task_type: str | None,
        limit: int,
    ) -> list[str]:
        """Completed episodes that learning has not taken in yet."""
        stmt = (
            select(Episode.id)
            .outerjoin(
                EpisodeLearning,
                (EpisodeLearning.namespace == Episode.namespace)
                & (EpisodeLearning.episode_id == Episode.id),
            )
            .where(
                Episode.namespace == namespace,
                Episode.status == "completed",
                EpisodeLearning.episode_id.is_(None),
            )
        )
        if since is not None:
            stmt = stmt.where(Episode.created_at >= since)
        if until is not None:
            stmt = stmt.where(Episode.created_at < until)
        if task_type is not None:
            stmt = stmt.where(Episode.task_type == task_type)
        return list((await self.session.scalars(stmt.limit(limit))).all())

    async def namespaces_with_unlearned(self, *, limit: int) -> list[str]:
        stmt = (
            select(Episode.namespace)
            .outerjoin(
                EpisodeLearning,
                (EpisodeLearning.namespace == Episode.namespace)
                & (EpisodeLearning.episode_id == Episode.id),
            )
            .where(Episode.status == "completed", EpisodeLearning.episode_id.is_(None))
            .distinct()
            .limit(limit)
        )
        return list((await self.session.scalars(stmt)).all())

    async def window(
        self, namespace: str, task_type: str | None, *, since: datetime | None, limit: int
    ) -> list[Row[Any]]:
        """The latest `limit` completed episodes of a task type (bounded: evolution reads
        this, never the whole history)."""
        stmt = select(*EPISODE_COLUMNS).where(
            Episode.namespace == namespace,
            Episode.status == "completed",
            Episode.task_type.is_(None) if task_type is None else Episode.task_type == task_type,
        )
        if since is not None:
            stmt = stmt.where(Episode.created_at > since)
        stmt = stmt.order_by(Episode.created_at.desc(), Episode.id.desc()).limit(limit)
        rows = list((await self.session.execute(stmt)).all())
        rows.reverse()
        return rows

    async def recent_sizes(self, namespace: str, task_type: str | None, *, limit: int) -> list[Any]:
        """Steps and durations of a task type's latest completed episodes (the baseline)."""
        stmt = (
            select(
                Episode.step_count, Episode.total_latency_ms, Episode.started_at, Episode.ended_at
            )
            .where(
                Episode.namespace == namespace,
                Episode.status == "completed",
                Episode.task_type.is_(None)
                if task_type is None
                else Episode.task_type == task_type,
            )
            .order_by(Episode.created_at.desc(), Episode.id.desc())
            .limit(limit)
        )
        return list((await self.session.execute(stmt)).all())

    async def shortest_success(
        self, namespace: str, task_type: str | None, *, among: int
    ) -> list[dict[str, Any]] | None:
        """The steps of the shortest of the latest `among` successful episodes of a type."""
        stmt = (
            select(Episode.step_count, Episode.id, Episode.steps)
            .where(
                Episode.namespace == namespace,
                Episode.outcome == "success",
                Episode.task_type.is_(None)
                if task_type is None
                else Episode.task_type == task_type,
            )
            .order_by(Episode.created_at.desc(), Episode.id.desc())
            .limit(among)
        )
        rows = (await self.session.execute(stmt)).all()
        best = min(rows, key=lambda r: (r.step_count, r.id), default=None)
        return None if best is None else list(best.steps)

    async def rewards(self, namespace: str, episode_ids: Sequence[str]) -> dict[str, list[Reward]]:
        """Each episode's rewards, oldest first."""
        found: dict[str, list[Reward]] = {}
        for start in range(0, len(episode_ids), CHUNK):
            stmt = (
                select(Reward)
                .where(
                    Reward.namespace == namespace,
                    Reward.episode_id.in_(list(episode_ids[start : start + CHUNK])),
                )
                .order_by(Reward.created_at, Reward.id)
            )
            for reward in await self.session.scalars(stmt):
                found.setdefault(reward.episode_id or "", []).append(reward)
        return found

    async def learned(
        self, namespace: str, episode_ids: Sequence[str]
    ) -> dict[str, EpisodeLearning]:
        found: dict[str, EpisodeLearning] = {}
        for start in range(0, len(episode_ids), CHUNK):
            stmt = select(EpisodeLearning).where(
                EpisodeLearning.namespace == namespace,
                EpisodeLearning.episode_id.in_(list(episode_ids[start : start + CHUNK])),
            )
            found.update({r.episode_id: r for r in await self.session.scalars(stmt)})
        return found

    async def credited_by_tasks(
        self, namespace: str, task_ids: Sequence[str]
    ) -> dict[str, set[str]]:
        """The skills already credited by learned episodes of each task (an agent's turns)."""
        found: dict[str, set[str]] = {}
        ids = sorted(set(task_ids))
        for start in range(0, len(ids), CHUNK):
            stmt = (
                select(Episode.task_id, EpisodeLearning.skill_ids)
                .join(
                    EpisodeLearning,
                    (EpisodeLearning.namespace == Episode.namespace)
                    & (EpisodeLearning.episode_id == Episode.id),
                )
                .where(
                    Episode.namespace == namespace, Episode.task_id.in_(ids[start : start + CHUNK])
                )
            )
            for task_id, skill_ids in (await self.session.execute(stmt)).all():
                found.setdefault(task_id, set()).update(skill_ids or [])
        return found

    async def forget_reflection(self, namespace: str, episode_id: str, *, now: datetime) -> None:
        """A deleted episode's reflection goes with it (soft delete, like forget)."""
        reflection = select(EpisodeLearning.reflection_id).where(
            EpisodeLearning.namespace == namespace, EpisodeLearning.episode_id == episode_id
        )
        await self.session.execute(
            update(Memory)
            .where(Memory.namespace == namespace, Memory.id.in_(reflection.scalar_subquery()))
            .values(status="deleted", updated_at=now)
        )

    async def insert_many(self, rows: Sequence[dict[str, Any]]) -> None:
        if rows:
            await self.session.execute(insert(LEARNING), list(rows))
