"""One download of the dataset: which rows, and reading them (the formats write them)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.db.engine import Transactions
from app.repositories.dataset import DatasetRepository
from app.schemas.filters import DatasetFilters
from app.services.dataset.columns import TableName
from app.services.dataset.rows import candidate_rows, transition_row

CHUNK = 500


class DatasetExport:
    def __init__(
        self,
        transactions: Transactions,
        *,
        namespace: str,
        table: TableName,
        filters: DatasetFilters,
        after: tuple[datetime, str] | None,
        until_key: tuple[datetime, str] | None,
        slots: int,
    ) -> None:
        self.transactions = transactions
        self.namespace = namespace
        self.table = table
        self.filters = filters
        self.after = after
        self.until_key = until_key
        self.slots = slots

    async def _chunks(
        self, session: AsyncSession, fetch: Callable[..., Awaitable[list[Any]]], size: int
    ) -> AsyncIterator[list[Any]]:
        """The export's rows in (created_at, id) order, `size` at a time: `fetch` is one
        of the repository's chunk readers, called with the key to continue after."""
        if self.until_key is None:
            return
        after = self.after
        while True:
            chunk = await fetch(
                self.namespace,
                filters=self.filters,
                after=after,
                until_key=self.until_key,
                limit=size,
            )
            if not chunk:
                return
            yield chunk
            session.expunge_all()
            if len(chunk) < size:
                return
            after = (chunk[-1].created_at, chunk[-1].id)

    async def rows(self) -> AsyncIterator[dict[str, Any]]:
        """Rows in (created_at, id) order, read in chunks in a transaction of their own
        (the download is streamed after its handler has returned)."""
        async with self.transactions.read() as session:
            repo = DatasetRepository(session)
            async for chunk in self._chunks(session, repo.completed_chunk, CHUNK):
                if self.table == "transitions":
                    next_ids = [t.next_id for t in chunk if t.next_id]
                    states = await repo.states(self.namespace, next_ids)
                    for t in chunk:
                        next_state = states.get(t.next_id) if t.next_id else None
                        yield transition_row(t, next_state, self.slots)
                else:
                    for t in chunk:
                        for row in candidate_rows(t):
                            yield row
