"""The search protocol, and the blended ranking every implementation ends with."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy import and_, bindparam, case, func, literal_column, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.elements import ColumnElement

from app.learning.ranking import STALE_AFTER_DAYS, WEIGHTS
from app.repositories.memory_sql import COLUMNS, MEMORIES, FilterShape, MemoryRow
from app.schemas.filters import MemoryFilters

# Text matches kept, by relevance alone, before the blended score is computed.
PREFILTER = 200
Ranked = list[tuple[MemoryRow, dict[str, float]]]


class Search(Protocol):
    """Ranked full-text search of a namespace's memories. Indexes are caches of SQL: an
    answer never holds a memory SQL does not."""

    def start(self) -> None:
        """Begin what runs in the background (building an index)."""

    async def close(self) -> None: ...

    def stats(self) -> dict[str, Any] | None:
        """What /ready shows of the search (an index's size and state), if anything."""

    async def matches(
        self,
        session: AsyncSession,
        namespace: str,
        terms: Sequence[str],
        filters: MemoryFilters,
        *,
        limit: int,
    ) -> dict[str, float]:
        """The `limit` best text matches for these query terms among the memories that
        pass the filters' type and scope (statuses and the rest are `blend`'s), best first:
        memory id -> relevance relative to the best (1.0)."""

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
        """The best `limit` of these memories (id -> text relevance in [0, 1]) passing
        `filters`, by the blended score, each with its score's parts (text, value,
        staleness, score)."""


class Statements:
    """Statements built by `build` for each filter shape, kept: building one is a large
    share of a recall's Python, and only its parameters change between searches."""

    def __init__(self, build: Callable[[FilterShape], Any]) -> None:
        self._build = build
        self._built: dict[FilterShape, Any] = {}

    def __call__(self, shape: FilterShape) -> Any:
        stmt = self._built.get(shape)
        if stmt is None:
            if len(self._built) > 256:
                self._built.clear()
            stmt = self._built[shape] = self._build(shape)
        return stmt


def ranked_statement(
    shape: FilterShape,
    *,
    source: Any,
    matched_id: ColumnElement[Any],
    text_part: ColumnElement[Any],
    age_days: ColumnElement[Any],
    clip: Callable[[Any], Any],
) -> Any:
    """The matches (`source`, each with its relative text relevance) joined to their
    memories, filtered, and ranked by the blended score; parameters: the filters',
    `limit` and what `source` needs."""
    text_part = func.coalesce(text_part, 0.0)
    count, total = MEMORIES.c.reward_count, MEMORIES.c.reward_sum
    mean = case((count > 0, total / count), else_=0.0)
    value = case((count > 0, clip((mean + 1.0) / 2.0)), else_=0.5)
    staleness = clip(age_days / STALE_AFTER_DAYS)
    score = (
        text_part * WEIGHTS.text
        + MEMORIES.c.criticality * WEIGHTS.criticality
        + MEMORIES.c.confidence * WEIGHTS.confidence
        + value * WEIGHTS.value
        - staleness * WEIGHTS.staleness
    )
    return (
        select(
            *COLUMNS,
            text_part.label("text_part"),
            value.label("value_part"),
            staleness.label("staleness_part"),
            score.label("score_part"),
        )
        .select_from(source)
        .join(
            MEMORIES,
            and_(MEMORIES.c.namespace == bindparam("namespace"), MEMORIES.c.id == matched_id),
        )
        .where(*shape.clauses())
        .order_by(literal_column("score_part").desc(), MEMORIES.c.id)
        .limit(bindparam("limit"))
    )


def scored(rows: Iterable[Any]) -> Ranked:
    return [
        (
            row,
            {
                "text": float(row.text_part),
                "value": float(row.value_part),
                "staleness": float(row.staleness_part),
                "score": float(row.score_part),
            },
        )
        for row in rows
    ]


def relative(found: Iterable[tuple[str, float]]) -> dict[str, float]:
    """Matches in rank order, each relevance relative to the best one (1.0 for the best)."""
    matches = list(found)
    best = max((rel for _, rel in matches), default=0.0)
    return {mid: (rel / best if best > 0 else 0.0) for mid, rel in matches}
