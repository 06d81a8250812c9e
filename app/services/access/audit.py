"""Writing the audit log: key management, denied requests and service-wide actions."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.ids import uuid7
from app.core.logging import request_id_var
from app.models import AuditEvent
from app.repositories.audit import AuditRepository
from app.schemas.admin import AuditEventRead, AuditPage
from app.services import pagination
from app.services.access.auth import Principal

SERVICE = "*"  # the namespace of actions on the whole service


async def record(
    session: AsyncSession,
    *,
    action: str,
    namespace: str,
    actor: Principal | None,
    target: str | None = None,
    outcome: str = "ok",
    client: str | None = None,
    **detail: Any,
) -> None:
    """Add an event to the caller's transaction: it commits with the action, or not at all.

    `actor` None is the command line. Never pass a key itself in `detail`.
    """
    await AuditRepository(session).add(
        AuditEvent(
            id=uuid7(),
            created_at=datetime.now(UTC),
            namespace=namespace,
            actor=actor.actor if actor is not None else "cli",
            role=actor.role.value if actor is not None else None,
            action=action,
            target=target,
            outcome=outcome,
            detail=detail,
            request_id=request_id_var.get() if actor is not None else None,
            client=client,
        )
    )


async def page(
    session: AsyncSession,
    *,
    namespace: str | None,
    action: str | None,
    cursor: str | None,
    limit: int,
) -> AuditPage:
    repo = AuditRepository(session)
    rows, next_cursor = await pagination.page(
        lambda key, n: repo.page(namespace=namespace, action=action, before=key, limit=n),
        cursor=cursor,
        limit=limit,
    )
    return AuditPage(
        items=[AuditEventRead.model_validate(r, from_attributes=True) for r in rows],
        next_cursor=next_cursor,
    )
