"""SQL for the answers kept for requests made under an Idempotency-Key."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from app.models import IdempotentRequest


class IdempotencyRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def get(self, namespace: str, key: str) -> IdempotentRequest | None:
        return await self.session.get(IdempotentRequest, (namespace, key))

    async def add(self, record: IdempotentRequest) -> None:
        self.session.add(record)
        await self.session.flush()
