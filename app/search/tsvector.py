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
from app.learning import tokens
from app.repositories.memory_sql import MEMORIES, FilterShape, filter_params
from app.schemas.filters import MemoryFilters
from app.search.base import Ranked, Statements, ranked_statement, relative, scored


class TsvectorSearch:
    def __init__(self) -> None:
        self._matches = Statements(_matches_statement)
        self._expanded = Statements(lambda shape: _matches_statement(shape, expanded=True))
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
        own, extra = _tsqueries(tokens.groups(list(terms)))
        params |= {"tsquery": own, "expansions": extra, "limit": limit}
        statements = self._expanded if extra else self._matches
        rows = await session.execute(statements(FilterShape.of(filters)), params)
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


def _tsqueries(groups: list[tokens.Group]) -> tuple[str, str]:
    """The terms' own tokens and their expansions, each as an OR tsquery (`mig:*` for a
    prefix); the expansions' is empty when there are none."""
    own = [g.tokens[0][0] for g in groups]
    extra = [t for g in groups for t, _ in g.tokens[1:]]
    return " | ".join(f"{t[:-1]}:*" if tokens.is_prefix(t) else t for t in own), " | ".join(extra)


def _matches_statement(shape: FilterShape, *, expanded: bool = False) -> Any:
    """The best `limit` matches by ts_rank_cd among the memories passing the shape's match
    filters (the engine keeps them in C, by text relevance alone). `expanded`: a match of
    the `expansions` query (synonyms) adds its rank times their weight."""
    english: ColumnElement[Any] = literal_column("'english'::regconfig")
    tsquery: ColumnElement[Any] = func.to_tsquery(english, bindparam("tsquery"))
    vector: ColumnElement[Any] = literal_column("memories.search_vector")
    rank: ColumnElement[Any] = func.ts_rank_cd(vector, tsquery)
    if expanded:
        extra = func.to_tsquery(english, bindparam("expansions"))
        rank = rank + tokens.EXPANSION_WEIGHT * func.ts_rank_cd(vector, extra)
        tsquery = tsquery.op("||")(extra)
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
