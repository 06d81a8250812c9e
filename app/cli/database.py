"""What the commands that reach the database share: its engine once it answers, and one
transaction on a migrated database."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

from app.core.config import Settings, get_settings

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

T = TypeVar("T")


async def open_database(settings: Settings) -> AsyncEngine:
    """The database's engine once it has answered a connection (DatabaseConfigError, saying
    what to set, when the URL is unusable or the database does not answer)."""
    from app.db.backends import check_connection, create_engine

    engine = create_engine(settings)
    try:
        await check_connection(engine)
    except BaseException:
        await engine.dispose()
        raise
    return engine


def with_session(fn: Callable[[AsyncSession], Awaitable[T]]) -> T:
    """Run fn(session) against a migrated database, committing at the end."""
    from app.db.engine import Transactions
    from app.db.migrate import migrate as run_migrate

    async def _run() -> T:
        engine = await open_database(get_settings())
        try:
            await run_migrate(engine)
            async with Transactions(engine).write() as session:
                return await fn(session)
        finally:
            await engine.dispose()

    return asyncio.run(_run())
