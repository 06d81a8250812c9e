"""SQL for API keys."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import ApiKey
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
