"""Apply Alembic migrations over an existing async engine."""

from __future__ import annotations

import asyncio
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

import migrations
from app.db.backends import backend_of


def alembic_config() -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(Path(migrations.__file__).parent))
    return cfg


async def migrate(engine: AsyncEngine, *, revision: str = "head") -> None:
    """Upgrade the database to `revision`. Processes that start together (API replicas,
    `engram worker`s) take turns: each waits for the one migrating, then finds nothing
    left to do (PostgreSQL: a lock in the migration's transaction; SQLite migrates in
    one writer's transaction)."""
    cfg = alembic_config()

    def _upgrade(connection: Connection) -> None:
        cfg.attributes["connection"] = connection
        command.upgrade(cfg, revision)

    backend = backend_of(engine)
    async with engine.connect() as conn:
        # Polled rather than waited on: a migration may outlast the lock timeout.
        while not await backend.transaction_lock(conn, "engram:migrate", wait=False):
            await conn.rollback()
            await asyncio.sleep(0.2)
        await conn.run_sync(_upgrade)
        await conn.commit()
