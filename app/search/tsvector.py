"""PostgreSQL: the memories' tsvector column (GIN index), ranked by ts_rank_cd."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Float, bindparam, func, literal_column, select
from sqlalchemy import cast as sql_cast
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.elements import ColumnElement

from app.db.backends.postgres import PostgresBackend
from app.repositories.memory_sql import MEMORIES, FilterShape, filter_params
from app.schemas.filters import MemoryFilters
from app.search.base import PREFILTER, Ranked, Statements, ranked_statement, scored


class TsvectorSearch:
    def __init__(self) -> None:
        self._statements = Statements(_statement)

    def start(self) -> None:
        pass

    async def close(self) -> None:
        pass

    def stats(self) -> dict[str, Any] | None:
        return None

    async def rank(
        self,
        session: AsyncSession,
        namespace: str,
        terms: Sequence[str],
        filters: MemoryFilters,
        *,
        now: datetime,
        limit: int,
    ) -> Ranked:
        params = filter_params(namespace, filters, now, backend=PostgresBackend)
        params |= {
            "limit": limit,
            "tsquery": " | ".join(terms),
            "prefilter": max(PREFILTER, 4 * limit),
        }
        return scored(await session.execute(self._statements(FilterShape.of(filters)), params))


def _statement(shape: FilterShape) -> Any:
    tsquery = func.to_tsquery(literal_column("'english'::regconfig"), bindparam("tsquery"))
    vector: ColumnElement[Any] = literal_column("memories.search_vector")
    rank = func.ts_rank_cd(vector, tsquery)
    # The engine keeps the best `prefilter` matches by text relevance alone (in C); the
    # blended score is computed only for those, relative to the best match.
    source = (
        select(MEMORIES.c.id.label("memory_id"), rank.label("relevance"))
        .where(MEMORIES.c.namespace == bindparam("namespace"), vector.op("@@")(tsquery))
        .where(*shape.match_clauses(PostgresBackend))
        .order_by(rank.desc())
        .limit(bindparam("prefilter"))
        .subquery("matched")
    )
    best = func.nullif(func.max(source.c.relevance).over(), 0.0)
    last = func.coalesce(MEMORIES.c.last_used_at, MEMORIES.c.updated_at)
    return ranked_statement(
        shape,
        source=source,
        matched_id=source.c.memory_id,
        text_part=PostgresBackend.clip(sql_cast(source.c.relevance, Float) / best),
        age_days=func.extract("epoch", func.now() - last) / 86400.0,
        clip=PostgresBackend.clip,
    )
