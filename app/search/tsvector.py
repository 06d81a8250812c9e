"""PostgreSQL: the memories' tsvector column (GIN index), ranked by ts_rank_cd."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import orjson
from sqlalchemy import Float, bindparam, func, literal_column, select
from sqlalchemy import cast as sql_cast
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.elements import ColumnElement

from app.db.backends.postgres import PostgresBackend
from app.repositories.memory_sql import MEMORIES, FilterShape, filter_params
from app.schemas.filters import MemoryFilters
from app.search.base import Ranked, Statements, ranked_statement, relative, scored


class TsvectorSearch:
    def __init__(self) -> None:
        self._matches = Statements(_matches_statement)
        self._ranked = Statements(_ranked_statement)

    def start(self) -> None:
        pass

    async def close(self) -> None:
        pass

    def stats(self) -> dict[str, Any] | None:
        return None

    async def matches(
        self,
        session: AsyncSession,
        namespace: str,
        terms: Sequence[str],
        filters: MemoryFilters,
        *,
        limit: int,
    ) -> dict[str, float]:
        params = filter_params(namespace, filters, datetime.now(UTC), backend=PostgresBackend)
        params |= {"tsquery": " | ".join(terms), "limit": limit}
        rows = await session.execute(self._matches(FilterShape.of(filters)), params)
        return relative((str(mid), float(rel)) for mid, rel in rows)

    async def blend(
        self,
        session: AsyncSession,
        namespace: str,
        relevance: Mapping[str, float],
        filters: MemoryFilters,
        *,
        now: datetime,
        limit: int,
    ) -> Ranked:
        if not relevance:
            return []
        params = filter_params(namespace, filters, now, backend=PostgresBackend)
        params |= {"limit": limit, "matched": orjson.dumps(dict(relevance)).decode()}
        return scored(await session.execute(self._ranked(FilterShape.of(filters)), params))


def _matches_statement(shape: FilterShape) -> Any:
    """The best `limit` matches by ts_rank_cd among the memories passing the shape's match
    filters (the engine keeps them in C, by text relevance alone)."""
    tsquery = func.to_tsquery(literal_column("'english'::regconfig"), bindparam("tsquery"))
    vector: ColumnElement[Any] = literal_column("memories.search_vector")
    rank = func.ts_rank_cd(vector, tsquery)
    return (
        select(MEMORIES.c.id, rank.label("relevance"))
        .where(MEMORIES.c.namespace == bindparam("namespace"), vector.op("@@")(tsquery))
        .where(*shape.match_clauses(PostgresBackend))
        .order_by(literal_column("relevance").desc(), MEMORIES.c.id)
        .limit(bindparam("limit"))
    )


def _ranked_statement(shape: FilterShape) -> Any:
    """The matches, given as a JSON object (id -> relevance in [0, 1]), ranked."""
    source = func.jsonb_each_text(sql_cast(bindparam("matched"), JSONB)).table_valued(
        "key", "value", name="matched"
    )
    last = func.coalesce(MEMORIES.c.last_used_at, MEMORIES.c.updated_at)
    return ranked_statement(
        shape,
        source=source,
        matched_id=source.c.key,
        text_part=sql_cast(source.c.value, Float),
        age_days=func.extract("epoch", func.now() - last) / 86400.0,
        clip=PostgresBackend.clip,
    )
