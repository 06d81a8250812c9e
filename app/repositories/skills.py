"""SQL for skills and their events (the history of every change)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Table, insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.backends import backend_of
from app.models import Skill, SkillEvent
from app.repositories import keyset

SKILL_EVENTS = cast(Table, SkillEvent.__table__)


class SkillRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def lock_evolution(self, namespace: str) -> None:
        """Wait until no other transaction evolves this namespace's skills, and keep them
        waiting until this one ends: two evolutions at once (two workers) would each
        create the skill the other creates. Reads that follow see the last one's skills."""
        await backend_of(self.session).transaction_lock(self.session, f"evolve:{namespace}")

    async def get(self, namespace: str, skill_id: str) -> Skill | None:
        return await self.session.get(Skill, (namespace, skill_id))

    async def named(
        self, namespace: str, names: Sequence[str], *, lock: bool = False
    ) -> dict[str, Skill]:
        """Skills named by id or by name (what agents put in skills_applied); `lock` (in id
        order, so that two workers lock in the same order) holds them until the
        transaction ends (PostgreSQL), for crediting them."""
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

    async def of_type(self, namespace: str, task_type: str) -> list[Skill]:
        stmt = (
            select(Skill)
            .where(Skill.namespace == namespace, Skill.task_type == task_type)
            .order_by(Skill.created_at, Skill.id)
        )
        return list(await self.session.scalars(stmt))

    async def active_with_prefix(self, namespace: str, prefix: str) -> list[Skill]:
        """The active skills whose task type starts with `prefix` (a project's: `shop/`)."""
        stmt = select(Skill).where(*_active_with_prefix(namespace, prefix))
        return list(await self.session.scalars(stmt.order_by(Skill.created_at, Skill.id)))

    async def types_taught(self, namespace: str, prefix: str) -> dict[str, bool]:
        """The task types starting with `prefix` that have had a skill, and whether one is
        active now."""
        stmt = (
            select(Skill.task_type, Skill.status == "active")
            .where(
                Skill.namespace == namespace, Skill.task_type.startswith(prefix, autoescape=True)
            )
            .distinct()
        )
        out: dict[str, bool] = {}
        for task_type, active in await self.session.execute(stmt):
            out[task_type] = out.get(task_type, False) or bool(active)
        return out

    async def page(
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

    async def last_retirement(self, namespace: str, task_type: str) -> datetime | None:
        """When a skill of the type last stopped working (a `retired` event; a skill
        superseded by skills per context did not)."""
        stmt = (
            select(SkillEvent.created_at)
            .join(
                Skill, (Skill.namespace == SkillEvent.namespace) & (Skill.id == SkillEvent.skill_id)
            )
            .where(
                SkillEvent.namespace == namespace,
                SkillEvent.kind == "retired",
                Skill.task_type == task_type,
            )
            .order_by(SkillEvent.created_at.desc())
            .limit(1)
        )
        return (await self.session.scalars(stmt)).first()

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


def _active_with_prefix(namespace: str, prefix: str) -> tuple[Any, ...]:
    return (
        Skill.namespace == namespace,
        Skill.status == "active",
        Skill.task_type.startswith(prefix, autoescape=True),
    )
