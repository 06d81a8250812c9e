"""SQL for the audit log."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import AuditEvent
from app.repositories import keyset


class AuditRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def add(self, event: AuditEvent) -> None:
        self.session.add(event)
        await self.session.flush()

    async def page(
        self,
        *,
        namespace: str | None,
        action: str | None,
        before: tuple[datetime, str] | None,
        limit: int,
    ) -> list[AuditEvent]:
        """Newest first; every namespace when `namespace` is None."""
        stmt = select(AuditEvent).order_by(AuditEvent.created_at.desc(), AuditEvent.id.desc())
        if namespace is not None:
            stmt = stmt.where(AuditEvent.namespace == namespace)
        if action is not None:
            stmt = stmt.where(AuditEvent.action == action)
        if before is not None:
            stmt = stmt.where(keyset.before(AuditEvent.created_at, AuditEvent.id, before))
        return list((await self.session.execute(stmt.limit(limit))).scalars())
