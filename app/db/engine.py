"""Where transactions begin and end (engines: `app/db/backends/`).

Owners: a request's transactions are opened by its session dependencies
(`app/api/deps.py`), the writer's by its group commits (`app/services/writer/`), the
worker's by each job (`app/worker/`), a command's by the command (`app/cli`). All of them
open it here, with `Transactions.read()` or `.write()`; services and repositories take the
session they are given and never commit or roll back.
"""

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
    # Not an exit stack: every transaction of a recall would pay for one.
    async with lock if lock is not None else _NO_LOCK, factory() as session:
        try:
            yield session
            await session.commit()
        except BaseException:
            await session.rollback()
            raise


_NO_LOCK: contextlib.nullcontext[None] = contextlib.nullcontext()


def create_sessionmaker(
    engine: AsyncEngine, *, write: bool = False
) -> async_sessionmaker[AsyncSession]:
    bind = engine.execution_options(**{WRITE_OPTION: True}) if write else engine
    return async_sessionmaker(bind, expire_on_commit=False, autoflush=False)


class Transactions:
    """An engine's read and write transactions.

    `read()` never blocks on writers (SQLite: a deferred transaction); `write()` takes the
    write lock up front (SQLite: BEGIN IMMEDIATE, and the process's writers queue on an
    asyncio lock, since SQLite admits one writer at a time and its busy handler makes the
    others sleep and retry with growing pauses)."""

    def __init__(self, engine: AsyncEngine, *, one_writer: bool = False) -> None:
        self.read_sessions = create_sessionmaker(engine)
        self.write_sessions = create_sessionmaker(engine, write=True)
        self.write_lock = asyncio.Lock() if one_writer else None

    def read(self) -> contextlib.AbstractAsyncContextManager[AsyncSession]:
        return transaction(self.read_sessions)

    def write(self) -> contextlib.AbstractAsyncContextManager[AsyncSession]:
        return transaction(self.write_sessions, lock=self.write_lock)
