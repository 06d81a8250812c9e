"""What the vector index (`vectors.py`) reads of SQL: the model's vector rows with each
memory's type and scope, per-namespace counts and seqs; through the app's engine (or a
session factory), so that it reads alike on SQLite, libSQL and PostgreSQL."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import String, cast, func, select
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from app.models import Memory, MemoryVector

Source = AsyncEngine | async_sessionmaker[AsyncSession]


async def read(source: Source, stmt: Any) -> Sequence[Any]:
    if isinstance(source, AsyncEngine):
        async with source.connect() as conn:
            return (await conn.execute(stmt)).all()
    async with source() as session:
        return (await session.execute(stmt)).all()


def rows(model: str) -> Any:
    """seq, namespace, memory id, dim, vector bytes, the memory's type and scope as stored
    (`_Scopes` parses it): a row whose memory is gone is not read."""
    return (
        select(
            MemoryVector.seq,
            MemoryVector.namespace,
            MemoryVector.memory_id,
            MemoryVector.dim,
            MemoryVector.vector,
            Memory.type,
            cast(Memory.scope, String),
        )
        .join(
            Memory,
            (Memory.namespace == MemoryVector.namespace) & (Memory.id == MemoryVector.memory_id),
        )
        .where(MemoryVector.model == model)
    )


def rows_after(model: str, cursor: int, limit: int) -> Any:
    return rows(model).where(MemoryVector.seq > cursor).order_by(MemoryVector.seq).limit(limit)


def rows_of(model: str, seqs: Sequence[int]) -> Any:
    return rows(model).where(MemoryVector.seq.in_(seqs))


def counts(model: str, cursor: int) -> Any:
    """The model's rows per namespace up to the cursor (over the table's unique index)."""
    return (
        select(MemoryVector.namespace, func.count())
        .where(MemoryVector.model == model, MemoryVector.seq <= cursor)
        .group_by(MemoryVector.namespace)
    )


def seqs(model: str, namespace: str, cursor: int) -> Any:
    return select(MemoryVector.seq).where(
        MemoryVector.model == model,
        MemoryVector.namespace == namespace,
        MemoryVector.seq <= cursor,
    )
