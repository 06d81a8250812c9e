"""Kinds of work per project (app/models/agents.py)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import TaskKind


class TaskKindRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def of_project(
        self, namespace: str, project: str, *, lock: bool = False
    ) -> list[TaskKind]:
        """The project's kinds, oldest first (locked for update where rows lock)."""
        stmt = (
            select(TaskKind)
            .where(TaskKind.namespace == namespace, TaskKind.project == project)
            .order_by(TaskKind.created_at, TaskKind.id)
        )
        if lock:
            stmt = stmt.with_for_update()
        return list((await self.session.scalars(stmt)).all())

    def add(self, kind: TaskKind) -> None:
        self.session.add(kind)
