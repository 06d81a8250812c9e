"""Session factories and the one transaction helper (engines: `app/db/backends/`)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
)

WRITE_OPTION = "engram_write"


@contextlib.asynccontextmanager
async def transaction(
    factory: async_sessionmaker[AsyncSession], *, lock: asyncio.Lock | None = None
) -> AsyncIterator[AsyncSession]:
    """A session whose transaction commits when the block ends and rolls back when it
    raises; with `lock` (SQLite: the process's writers), held for the whole of it."""
    async with contextlib.AsyncExitStack() as stack:
        if lock is not None:
            await stack.enter_async_context(lock)
        session = await stack.enter_async_context(factory())
        try:
            yield session
            await session.commit()
        except BaseException:
            await session.rollback()
            raise


def create_sessionmaker(
    engine: AsyncEngine, *, write: bool = False
) -> async_sessionmaker[AsyncSession]:
    bind = engine.execution_options(**{WRITE_OPTION: True}) if write else engine
    return async_sessionmaker(bind, expire_on_commit=False, autoflush=False)
