"""The RL transition log as recorded: pages of it, and where a dataset download ends."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from app.repositories.dataset import DatasetRepository
from app.schemas.filters import DatasetFilters
from app.schemas.recall import TransitionPage, TransitionRead
from app.services import pagination


class TransitionService:
    def __init__(self, session: AsyncSession) -> None:
        self.repo = DatasetRepository(session)

    async def list(
        self,
        namespace: str,
        *,
        status: str | None,
        filters: DatasetFilters,
        cursor: str | None,
        limit: int,
    ) -> TransitionPage:
        """Every transition, pending ones included, oldest first."""
        rows, next_cursor = await pagination.page(
            lambda key, n: self.repo.page(
                namespace, status=status, filters=filters, after=key, limit=n
            ),
            cursor=cursor,
            limit=limit,
        )
        return TransitionPage(
            items=[TransitionRead.model_validate(r, from_attributes=True) for r in rows],
            next_cursor=next_cursor,
        )

    async def boundary(
        self,
        namespace: str,
        *,
        filters: DatasetFilters,
        after: tuple[datetime, str] | None,
        limit: int,
    ) -> tuple[tuple[datetime, str] | None, bool]:
        """Key of the limit-th completed transition from `after`, and whether more follow."""
        return await self.repo.boundary(namespace, filters=filters, after=after, limit=limit)
