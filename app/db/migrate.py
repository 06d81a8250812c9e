"""Apply Alembic migrations over an existing async engine."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

import migrations


def alembic_config() -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(Path(migrations.__file__).parent))
    return cfg


async def migrate(engine: AsyncEngine, *, revision: str = "head") -> None:
    cfg = alembic_config()

    def _upgrade(connection: Connection) -> None:
        cfg.attributes["connection"] = connection
        command.upgrade(cfg, revision)

    async with engine.connect() as conn:
        await conn.run_sync(_upgrade)
        await conn.commit()
