"""SQL for the learning loop: episodes to learn, windows, pattern counters, skills."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Row, Table, bindparam, insert, select, tuple_, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import Episode, EpisodeLearning, Memory, Pattern, Reward, Skill, SkillEvent
from app.repositories import keyset

PATTERNS = cast(Table, Pattern.__table__)
LEARNING = cast(Table, EpisodeLearning.__table__)
SKILL_EVENTS = cast(Table, SkillEvent.__table__)
CHUNK = 500

# What learning reads of an episode: its skeleton, never the payload.
EPISODE_COLUMNS = (
    Episode.id,
    Episode.task_type,
    Episode.outcome,
    Episode.progress,
    Episode.steps,
    Episode.domain,
    Episode.language,
    Episode.tags,
    Episode.skills_applied,
    Episode.step_count,
    Episode.total_latency_ms,
    Episode.started_at,
    Episode.ended_at,
    Episode.completed_at,
)


class LearningRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def episodes(self, namespace: str, ids: Sequence[str]) -> list[Row[Any]]:
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

    async def episodes_of_task(self, namespace: str, task_id: str) -> list[Episode]:
        """A task's episodes, oldest first (at most 1,000)."""
        stmt = (
            select(Episode)
            .where(Episode.namespace == namespace, Episode.task_id == task_id)
            .order_by(Episode.created_at, Episode.id)
            .limit(1000)
        )
        return list(await self.session.scalars(stmt))

    async def task_types(self, namespace: str) -> list[str]:
        """The task types learning has counted episodes of."""
        stmt = select(Pattern.task_type).where(
            Pattern.namespace == namespace, Pattern.kind == "task"
        )
        return list((await self.session.scalars(stmt)).all())

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

    async def reward_scalars(
        self, namespace: str, episode_ids: Sequence[str]
    ) -> dict[str, list[Reward]]:
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

    async def insert_learned(self, rows: Sequence[dict[str, Any]]) -> None:
        if rows:
            await self.session.execute(insert(LEARNING), list(rows))

    # -- patterns ---------------------------------------------------------------

    async def patterns(self, namespace: str, ids: Sequence[str]) -> dict[str, Pattern]:
        found: dict[str, Pattern] = {}
        for start in range(0, len(ids), CHUNK):
            stmt = select(Pattern).where(
                tuple_(Pattern.namespace, Pattern.id).in_(
                    [(namespace, pid) for pid in ids[start : start + CHUNK]]
                )
            )
            found.update({p.id: p for p in await self.session.scalars(stmt)})
        return found

    async def pattern_counters(
        self, namespace: str, ids: Sequence[str], *, lock: bool = False
    ) -> dict[str, dict[str, Any]]:
        """Patterns as plain dicts, to be changed and written back with
        update_pattern_counters; `lock` (with ids in sorted order, so that two workers
        lock in the same order) holds them until the transaction ends (PostgreSQL)."""
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

    async def update_pattern_counters(self, rows: Sequence[dict[str, Any]]) -> None:
        if not rows:
            return
        columns = (
            *("support", "successes", "reward_sum", "reward_count", "success_rate"),
            *("mean_reward", "lcb", "evidence", "updated_at"),
        )
        stmt = (
            update(PATTERNS)
            .where(PATTERNS.c.namespace == bindparam("b_ns"), PATTERNS.c.id == bindparam("b_id"))
            .values({c: bindparam(f"b_{c}") for c in columns})
        )
        params = [
            {"b_ns": r["namespace"], "b_id": r["id"], **{f"b_{c}": r[c] for c in columns}}
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
        if self.session.get_bind().dialect.name == "postgresql":
            stmt = pg_insert(PATTERNS).on_conflict_do_nothing(index_elements=["namespace", "id"])
            await self.session.execute(stmt, list(fresh.values()))
            return await self.pattern_counters(namespace, sorted(fresh), lock=True)
        found = await self.pattern_counters(namespace, list(fresh))
        missing = [row for pid, row in fresh.items() if pid not in found]
        await self.insert_patterns(missing)
        found.update({row["id"]: dict(row) for row in missing})
        return found

    async def insert_patterns(self, rows: Sequence[dict[str, Any]]) -> None:
        if rows:
            await self.session.execute(insert(PATTERNS), list(rows))

    async def patterns_of(
        self, namespace: str, task_type: str, kinds: Sequence[str]
    ) -> list[Pattern]:
        stmt = select(Pattern).where(
            Pattern.namespace == namespace,
            Pattern.kind.in_(list(kinds)),
            Pattern.task_type == task_type,
        )
        return list(await self.session.scalars(stmt))

    async def page_patterns(
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

    # -- skills -----------------------------------------------------------------

    async def skills_for(
        self, namespace: str, names: Sequence[str], *, lock: bool = False
    ) -> dict[str, Skill]:
        """Skills named by id or by name (what agents put in skills_applied); `lock` as in
        pattern_counters, for crediting them."""
        if not names:
            return {}
        stmt = select(Skill).where(
            Skill.namespace == namespace, Skill.id.in_(list(names)) | Skill.name.in_(list(names))
        )
        if lock:
            stmt = stmt.order_by(Skill.id).with_for_update()
        found: dict[str, Skill] = {}
        for skill in await self.session.scalars(stmt):
            found[skill.id] = skill
            found.setdefault(skill.name, skill)
        return found

    async def skills_of_type(self, namespace: str, task_type: str) -> list[Skill]:
        stmt = (
            select(Skill)
            .where(Skill.namespace == namespace, Skill.task_type == task_type)
            .order_by(Skill.created_at, Skill.id)
        )
        return list(await self.session.scalars(stmt))

    async def get_skill(self, namespace: str, skill_id: str) -> Skill | None:
        return await self.session.get(Skill, (namespace, skill_id))

    async def page_skills(
        self,
        namespace: str,
        *,
        status: str | None,
        task_type: str | None,
        sort: str,
        offset: int,
        limit: int,
    ) -> list[Skill]:
        stmt = select(Skill).where(Skill.namespace == namespace)
        if status is not None:
            stmt = stmt.where(Skill.status == status)
        if task_type is not None:
            stmt = stmt.where(Skill.task_type == task_type)
        column = {
            "created_at": Skill.created_at,
            "uses": Skill.uses,
            "lcb": Skill.lcb,
            "success_rate": Skill.success_rate,
        }[sort]
        stmt = stmt.order_by(column.desc(), Skill.id).offset(offset).limit(limit)
        return list(await self.session.scalars(stmt))

    async def insert_events(self, rows: Sequence[dict[str, Any]]) -> None:
        if rows:
            await self.session.execute(insert(SKILL_EVENTS), list(rows))

    async def events(
        self, namespace: str, skill_id: str, *, after: keyset.Key | None, limit: int
    ) -> list[SkillEvent]:
        stmt = select(SkillEvent).where(
            SkillEvent.namespace == namespace, SkillEvent.skill_id == skill_id
        )
        if after is not None:
            stmt = stmt.where(keyset.after(SkillEvent.created_at, SkillEvent.id, after))
        stmt = stmt.order_by(SkillEvent.created_at, SkillEvent.id).limit(limit)
        return list(await self.session.scalars(stmt))

    async def last_retirement(self, namespace: str, task_type: str) -> datetime | None:
        stmt = (
            select(Skill.retired_at)
            .where(
                Skill.namespace == namespace,
                Skill.task_type == task_type,
                Skill.retired_at.is_not(None),
            )
            .order_by(Skill.retired_at.desc())
            .limit(1)
        )
        return (await self.session.scalars(stmt)).first()
