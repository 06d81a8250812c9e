"""PostgreSQL (asyncpg): for shared deployments."""

from __future__ import annotations

from hashlib import blake2b
from typing import Any, ClassVar

import orjson
from sqlalchemy import Table, Text, bindparam, func, literal, text
from sqlalchemy import cast as sql_cast
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession, create_async_engine
from sqlalchemy.sql.dml import Insert
from sqlalchemy.sql.elements import ColumnElement

from app.core.config import Settings
from app.db.backends.base import Backend, json_text


class PostgresBackend(Backend):
    name: ClassVar[str] = "postgresql"
    driver: ClassVar[str] = "asyncpg"
    row_locks = True

    @staticmethod
    def create_engine(settings: Settings) -> AsyncEngine:
        return create_async_engine(
            settings.database_url,
            json_serializer=json_text,
            json_deserializer=orjson.loads,
            pool_size=settings.db_pool_size,
            max_overflow=settings.db_pool_size,
            pool_pre_ping=True,
            connect_args={
                "server_settings": {
                    "lock_timeout": str(settings.db_lock_timeout_ms),
                    "statement_timeout": str(settings.db_statement_timeout_ms),
                }
            },
        )

    @staticmethod
    def insert_ignoring_duplicates(table: Table, index_elements: list[str]) -> Insert:
        return pg_insert(table).on_conflict_do_nothing(index_elements=index_elements)

    @staticmethod
    def scope_applies(n_ids: int) -> ColumnElement[bool]:
        # The memory's ids (its scope without level) are contained in the request's.
        from app.models import Memory

        ids = sql_cast(Memory.__table__.c.scope, JSONB).op("-")(literal("level", Text))
        return ids.op("<@")(bindparam("applies_to", type_=JSONB))

    @staticmethod
    def scope_params(request_ids: list[tuple[str, str]]) -> dict[str, Any]:
        return {"applies_to": dict(request_ids)}

    @staticmethod
    def clip(value: Any) -> Any:
        return func.greatest(0.0, func.least(1.0, value))

    @staticmethod
    async def read_snapshot(conn: AsyncConnection) -> None:
        await conn.execute(text("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY"))

    @staticmethod
    async def transaction_lock(
        conn: AsyncSession | AsyncConnection, name: str, *, wait: bool = True
    ) -> bool:
        # Advisory locks are named by a 64-bit integer: a stable hash of the name.
        key = int.from_bytes(blake2b(name.encode(), digest_size=8).digest(), "big", signed=True)
        if wait:
            await conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": key})
            return True
        taken = await conn.execute(text("SELECT pg_try_advisory_xact_lock(:key)"), {"key": key})
        return bool(taken.scalar())
