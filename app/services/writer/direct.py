"""The direct SQLite path: a batch's statements written as one transaction in one call
to the connection's thread."""

from __future__ import annotations

import sqlite3
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from app.db.backends import sqlite_driver
from app.db.rows import as_sqlalchemy_error


async def write_direct(engine: AsyncEngine, statements: list[tuple[str, Any]]) -> None:
    """Run the statements, each an executemany, through `sqlite_driver.Connection.write`."""
    async with engine.connect() as conn:
        adapter = (await conn.get_raw_connection()).dbapi_connection
        assert isinstance(adapter, sqlite_driver.Connection)
        try:
            await adapter.write(statements)
        except sqlite3.Error as exc:
            notes = "; ".join(getattr(exc, "__notes__", ()))
            raise as_sqlalchemy_error(notes, exc) from exc
