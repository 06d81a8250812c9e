"""SQL for API keys and the dashboard's sign-ins made with them."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import ApiKey, DashboardSession
from app.repositories import keyset


class ApiKeyRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def add(self, key: ApiKey) -> None:
        self.session.add(key)
        await self.session.flush()

    async def by_hash(self, key_hash: str) -> ApiKey | None:
        stmt = select(ApiKey).where(ApiKey.key_hash == key_hash, ApiKey.revoked_at.is_(None))
        return (await self.session.execute(stmt)).scalar_one_or_none()

    async def page(
        self, *, namespace: str | None, before: tuple[datetime, str] | None, limit: int
    ) -> list[ApiKey]:
        """Newest first; every namespace when `namespace` is None."""
        stmt = select(ApiKey).order_by(ApiKey.created_at.desc(), ApiKey.id.desc())
        if namespace is not None:
            stmt = stmt.where(ApiKey.namespace == namespace)
        if before is not None:
            stmt = stmt.where(keyset.before(ApiKey.created_at, ApiKey.id, before))
        return list((await self.session.execute(stmt.limit(limit))).scalars())

    async def list(self, *, namespace: str | None = None) -> list[ApiKey]:
        stmt = select(ApiKey).order_by(ApiKey.created_at)
        if namespace is not None:
            stmt = stmt.where(ApiKey.namespace == namespace)
        return list((await self.session.execute(stmt)).scalars())

    async def get(self, key_id: str) -> ApiKey | None:
        return await self.session.get(ApiKey, key_id)

    async def count_active(self) -> int:
        stmt = select(func.count()).select_from(ApiKey).where(ApiKey.revoked_at.is_(None))
        return int((await self.session.execute(stmt)).scalar_one())

    async def revoke(self, key_id: str, *, now: datetime) -> bool:
        stmt = (
            update(ApiKey)
            .where(ApiKey.id == key_id, ApiKey.revoked_at.is_(None))
            .values(revoked_at=now)
        )
        result = await self.session.execute(stmt)
        return bool(getattr(result, "rowcount", 0))


class DashboardSessionRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def open(self, row: DashboardSession, *, now: datetime) -> None:
        """Keep a new sign-in (and forget the ones that have expired)."""
        await self.session.execute(
            delete(DashboardSession).where(DashboardSession.expires_at < now)
        )
        self.session.add(row)
        await self.session.flush()

    async def key_of(self, token_hash: str, *, now: datetime) -> ApiKey | None:
        """The key a sign-in was made with, while the sign-in lasts and the key is valid."""
        stmt = (
            select(ApiKey)
            .join(DashboardSession, DashboardSession.key_id == ApiKey.id)
            .where(
                DashboardSession.id == token_hash,
                DashboardSession.expires_at > now,
                ApiKey.revoked_at.is_(None),
            )
        )
        return (await self.session.execute(stmt)).scalar_one_or_none()

    async def close(self, token_hash: str) -> None:
        await self.session.execute(
            delete(DashboardSession).where(DashboardSession.id == token_hash)
        )

    async def close_all_of(self, key_id: str) -> None:
        await self.session.execute(
            delete(DashboardSession).where(DashboardSession.key_id == key_id)
        )
