"""SQL for memories, including full-text search pushed into the database."""

from __future__ import annotations

import functools
import sqlite3
import time
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeAlias, cast

import orjson
from sqlalchemy import (
    ColumnElement,
    Float,
    Row,
    Table,
    Text,
    and_,
    bindparam,
    case,
    column,
    func,
    insert,
    literal,
    literal_column,
    or_,
    select,
    table,
    text,
    tuple_,
    update,
)
from sqlalchemy import (
    cast as sql_cast,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.elements import TextClause

from app.db import probe
from app.db.rows import as_sqlalchemy_error, compiled_insert, sqlite_utc_text
from app.learning.ranking import STALE_AFTER_DAYS, WEIGHTS
from app.models import Memory
from app.models.base import UTCDateTime
from app.repositories import keyset
from app.storage.term_index import index_for, ns_token

MEMORIES = cast(Table, Memory.__table__)
# Search and recall read plain rows (no ORM identity map: a recall reads ~70 memories and
# the ORM's bookkeeping per object was a tenth of its time). A row has the model's
# attribute names, `metadata_` included.
COLUMNS = [c.label("metadata_") if c.key == "metadata" else c for c in MEMORIES.c]
MemoryRow: TypeAlias = Row[*tuple[Any, ...]]
MemoryRecord: TypeAlias = Memory | MemoryRow
# Text matches kept, by relevance alone, before the blended score is computed.
PREFILTER = 200
PRUNE_FROM = 5000  # memories in the namespace before common terms are dropped
MIN_MATCH_TERMS = 4
POSTINGS_BUDGET = 6000
# Below this share of the index, the namespace is filtered inside the full-text engine.
NS_FILTER_BELOW = 0.5
TOTAL = "\x00total"  # key of the index's row count among the term frequencies
# Term statistics only steer which terms to match on, so slightly old ones are fine.
DF_TTL_S = 30.0
_DF: weakref.WeakKeyDictionary[Any, dict[str, tuple[float, int]]] = weakref.WeakKeyDictionary()
MAX_MATCH_TERMS = 8


@dataclass(frozen=True, slots=True)
class MemoryFilters:
    types: Sequence[str] | None = None
    statuses: Sequence[str] | None = None
    sensitivities: Sequence[str] | None = None
    # Memories whose scope holds each of these (key, value) pairs.
    scope: dict[str, str] | None = None
    # A request's scope: memories that apply to it (`scope_compatible`), global ones too.
    applies_to: Mapping[str, str] | None = None


_NOW = bindparam("now", type_=UTCDateTime())


def _status_clause(statuses: Sequence[str]) -> ColumnElement[bool]:
    """Stored status, with "expired" derived from valid_until (no job flips it), as of
    the statement's `now` parameter."""
    not_expired = or_(Memory.valid_until.is_(None), Memory.valid_until > _NOW)
    clauses: list[ColumnElement[bool]] = []
    for status in statuses:
        if status == "expired":
            clauses.append(and_(Memory.status == "active", Memory.valid_until <= _NOW))
        elif status == "active":
            started = or_(Memory.valid_from.is_(None), Memory.valid_from <= _NOW)
            clauses.append(and_(Memory.status == "active", not_expired, started))
        else:
            clauses.append(and_(Memory.status == status, not_expired))
    return or_(*clauses)


def _request_ids(scope: Mapping[str, str]) -> list[tuple[str, str]]:
    return sorted((k, v) for k, v in scope.items() if k != "level")


def _applies_clause(dialect: str, n_ids: int) -> ColumnElement[bool] | TextClause:
    """The memory applies to the request scope in the parameters (`scope_compatible`):
    every key of its scope but level equals the request's, which has `n_ids` such keys."""
    if dialect == "postgresql":
        ids = sql_cast(MEMORIES.c.scope, JSONB).op("-")(literal("level", Text))
        return ids.op("<@")(bindparam("applies_to", type_=JSONB))
    # SQLite: no key of the memory's scope (but level) is missing from the request's.
    pairs = ", ".join(f"(:applies_key_{i}, :applies_value_{i})" for i in range(n_ids))
    held = f" AND (s.type <> 'text' OR (s.key, s.value) NOT IN (VALUES {pairs}))" if n_ids else ""
    return text(
        f"NOT EXISTS (SELECT 1 FROM json_each(memories.scope) AS s WHERE s.key <> 'level'{held})"
    )


@dataclass(frozen=True, slots=True)
class _Shape:
    """What a filtered statement's SQL depends on (its values are parameters)."""

    types: bool
    statuses: tuple[str, ...]
    sensitivities: bool
    scope_keys: tuple[str, ...]
    applies_to: int | None  # ids in the request scope, None without that filter

    @classmethod
    def of(cls, filters: MemoryFilters) -> _Shape:
        return cls(
            types=bool(filters.types),
            statuses=tuple(filters.statuses or ()),
            sensitivities=bool(filters.sensitivities),
            scope_keys=tuple(sorted(filters.scope or {})),
            applies_to=(
                None if filters.applies_to is None else len(_request_ids(filters.applies_to))
            ),
        )

    def clauses(self) -> list[ColumnElement[bool]]:
        """The filters but `applies_to` (see `match_clauses`)."""
        where: list[ColumnElement[bool]] = [Memory.namespace == bindparam("namespace")]
        if self.types:
            where.append(Memory.type.in_(bindparam("types", expanding=True)))
        if self.statuses:
            where.append(_status_clause(self.statuses))
        if self.sensitivities:
            where.append(Memory.sensitivity.in_(bindparam("sensitivities", expanding=True)))
        for i, key in enumerate(self.scope_keys):
            where.append(Memory.scope[key].as_string() == bindparam(f"scope_value_{i}"))
        return where

    def match_clauses(self, dialect: str) -> list[ColumnElement[bool] | TextClause]:
        """The filters applied where the text matches are ranked, before the best are
        kept: type and scope (without them a filter would see only the best matches of
        the whole namespace, and other scopes' matches could push out every one of its own)."""
        where: list[ColumnElement[bool] | TextClause] = []
        if self.types:
            where.append(Memory.type.in_(bindparam("types", expanding=True)))
        for i, key in enumerate(self.scope_keys):
            where.append(Memory.scope[key].as_string() == bindparam(f"scope_value_{i}"))
        if self.applies_to is not None:
            where.append(_applies_clause(dialect, self.applies_to))
        return where


def _filter_params(
    namespace: str, filters: MemoryFilters, now: datetime, *, dialect: str
) -> dict[str, Any]:
    params: dict[str, Any] = {"namespace": namespace, "now": now}
    if filters.types:
        params["types"] = list(filters.types)
    if filters.sensitivities:
        params["sensitivities"] = list(filters.sensitivities)
    scope = filters.scope or {}
    for i, key in enumerate(sorted(scope)):
        params[f"scope_value_{i}"] = scope[key]
    if filters.applies_to is not None:
        params |= _applies_params(dialect, filters.applies_to)
    return params


def _applies_params(dialect: str, request_scope: Mapping[str, str]) -> dict[str, Any]:
    ids = _request_ids(request_scope)
    if dialect == "postgresql":
        return {"applies_to": dict(ids)}
    params: dict[str, Any] = {}
    for i, (key, value) in enumerate(ids):
        params[f"applies_key_{i}"] = key
        params[f"applies_value_{i}"] = value
    return params


# Built statements by (dialect, filter shape): building one is a millisecond of Python,
# a tenth of a recall, and only its parameters change between searches.
_SEARCH_SQL: dict[tuple[str, _Shape], Any] = {}
_FTS_SQL: dict[_Shape, Any] = {}
_FTS = table("memories_fts", column("memory_id"), column("ns"))


def _fts_filtered_statement(shape: _Shape) -> Any:
    """FTS5's best matches by bm25() among the memories that pass the shape's match
    filters (SQLite); parameters: the filters', `query` and `fetch`."""
    stmt = _FTS_SQL.get(shape)
    if stmt is not None:
        return stmt
    fts: ColumnElement[Any] = literal_column("memories_fts")
    relevance = -func.bm25(fts, literal_column("1.0"), literal_column("0.0"))
    stmt = (
        select(_FTS.c.memory_id, _FTS.c.ns, relevance.label("relevance"))
        .join(
            MEMORIES,
            and_(
                MEMORIES.c.namespace == bindparam("namespace"),
                MEMORIES.c.id == _FTS.c.memory_id,
            ),
        )
        .where(fts.op("MATCH")(bindparam("query")), *shape.match_clauses("sqlite"))
        .order_by(literal_column("relevance").desc())
        .limit(bindparam("fetch"))
    )
    if len(_FTS_SQL) > 256:
        _FTS_SQL.clear()
    _FTS_SQL[shape] = stmt
    return stmt


@functools.lru_cache(maxsize=64)
def _constraints_statement(dialect: str, applies_to: int | None) -> Any:
    applies = [] if applies_to is None else [_applies_clause(dialect, applies_to)]
    return (
        select(*COLUMNS)
        .where(
            MEMORIES.c.namespace == bindparam("namespace"),
            MEMORIES.c.type == "constraint",
            _status_clause(["active"]),
            *applies,
        )
        .order_by(MEMORIES.c.criticality.desc(), MEMORIES.c.id.desc())  # index order, no sort
        .limit(bindparam("limit"))
    )


def _search_statement(dialect: str, shape: _Shape) -> Any:
    stmt = _SEARCH_SQL.get((dialect, shape))
    if stmt is not None:
        return stmt
    age_days: ColumnElement[Any]
    last = func.coalesce(MEMORIES.c.last_used_at, MEMORIES.c.updated_at)
    source: Any
    text_part: ColumnElement[Any]
    if dialect == "sqlite":
        # The matches go in as a JSON object (id -> relevance / best relevance).
        source = func.json_each(bindparam("matched")).table_valued("key", "value", name="matched")
        matched_id: ColumnElement[Any] = source.c.key
        text_part = sql_cast(source.c.value, Float)
        age_days = func.julianday(bindparam("now_text")) - func.julianday(last)
        clip = _clip_sqlite
    else:
        tsquery = func.to_tsquery(literal_column("'english'::regconfig"), bindparam("tsquery"))
        vector: ColumnElement[Any] = literal_column("memories.search_vector")
        rank = func.ts_rank_cd(vector, tsquery)
        source = (
            select(MEMORIES.c.id.label("memory_id"), rank.label("relevance"))
            .where(MEMORIES.c.namespace == bindparam("namespace"), vector.op("@@")(tsquery))
            .where(*shape.match_clauses(dialect))
            .order_by(rank.desc())
            .limit(bindparam("prefilter"))
            .subquery("matched")
        )
        matched_id = source.c.memory_id
        best = func.nullif(func.max(source.c.relevance).over(), 0.0)
        text_part = _clip_postgres(sql_cast(source.c.relevance, Float) / best)
        age_days = func.extract("epoch", func.now() - last) / 86400.0
        clip = _clip_postgres
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
    stmt = (
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
    if len(_SEARCH_SQL) > 256:
        _SEARCH_SQL.clear()
    _SEARCH_SQL[(dialect, shape)] = stmt
    return stmt


class MemoryRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def get(self, namespace: str, memory_id: str) -> Memory | None:
        return await self.session.get(Memory, (namespace, memory_id))

    async def insert(self, row: dict[str, Any]) -> None:
        await self.session.execute(insert(MEMORIES), [row])

    async def insert_many(self, rows: Sequence[dict[str, Any]]) -> None:
        """New memories, each row with every column, in one statement."""
        if not rows:
            return
        conn = await self.session.connection()
        if conn.dialect.name != "sqlite":
            await conn.execute(insert(MEMORIES), list(rows))
            return
        # On SQLite: multi-row INSERTs (an executemany would flush the full-text index at
        # every row) on the driver's connection, inside the session's transaction (begun
        # above). Through SQLAlchemy each row's bind conversion cost ~11 us and each
        # statement three trips to the driver's thread.
        driver = (await conn.get_raw_connection()).driver_connection
        assert driver is not None
        for sql, params in compiled_insert(MEMORIES, conn.dialect).multi(rows):
            try:
                async with driver.execute(sql, params[0]):
                    pass
            except sqlite3.Error as exc:
                raise as_sqlalchemy_error(sql, exc) from exc

    async def existing(self, keys: set[tuple[str, str]]) -> dict[tuple[str, str], dict[str, Any]]:
        """The rows (by column name) of these (namespace, id) pairs that are taken."""
        if not keys:
            return {}
        stmt = select(MEMORIES).where(tuple_(MEMORIES.c.namespace, MEMORIES.c.id).in_(list(keys)))
        rows = (await self.session.execute(stmt)).mappings()
        return {(row["namespace"], row["id"]): dict(row) for row in rows}

    async def transition(
        self,
        namespace: str,
        memory_id: str,
        *,
        from_statuses: Sequence[str],
        values: dict[str, Any],
    ) -> bool:
        """Apply values if the memory is still in one of from_statuses (one winner under races)."""
        stmt = (
            update(MEMORIES)
            .where(
                MEMORIES.c.namespace == namespace,
                MEMORIES.c.id == memory_id,
                MEMORIES.c.status.in_(from_statuses),
            )
            .values(values)
        )
        result = await self.session.execute(stmt)
        return bool(getattr(result, "rowcount", 0))

    async def search(
        self,
        namespace: str,
        terms: Sequence[str],
        filters: MemoryFilters,
        *,
        now: datetime,
        limit: int,
    ) -> list[tuple[MemoryRow, dict[str, float]]]:
        """Ranked full-text matches; ranking, filters and limit all run in the database.

        The engine first keeps the best PREFILTER matches by text relevance alone (in C);
        the blended score is computed only for those, relative to the best match.
        """
        prefilter = max(PREFILTER, 4 * limit)
        bind = self.session.get_bind()
        dialect = bind.dialect.name
        params = _filter_params(namespace, filters, now, dialect=dialect) | {"limit": limit}
        if dialect == "sqlite":
            relevance = await self._index_matches(
                bind.engine.url.database, namespace, terms, prefilter, filters
            )
            if relevance is None:
                relevance = await self._fts_matches(namespace, terms, prefilter, filters, params)
            if not relevance:
                return []
            params["matched"] = orjson.dumps(relevance).decode()
            params["now_text"] = now.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
        else:
            params["tsquery"] = " | ".join(terms)
            params["prefilter"] = prefilter
        stmt = _search_statement(dialect, _Shape.of(filters))
        rows = await self.session.execute(stmt, params)
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

    async def _index_matches(
        self,
        path: str | None,
        namespace: str,
        terms: Sequence[str],
        prefilter: int,
        filters: MemoryFilters,
    ) -> dict[str, float] | None:
        """The same matches as `_fts_matches`, from the process's in-memory index of this
        database (None when it has none or it is not built yet)."""
        index = index_for(path)
        if index is None:
            return None
        found = await index.top(
            namespace,
            terms,
            prefilter,
            types=filters.types,
            scope=filters.scope,
            applies_to=filters.applies_to,
        )
        return None if found is None else _relative(found.items())

    async def _fts_matches(
        self,
        namespace: str,
        terms: Sequence[str],
        prefilter: int,
        filters: MemoryFilters,
        filter_params: dict[str, Any],
    ) -> dict[str, float]:
        """The namespace's best matches by BM25 alone: memory id -> relevance relative to
        the best one (1.0 for the best).

        Run as a query of its own so that SQLite reads each match's id only when it enters
        the top `prefilter` (as part of a join it would read all of them). A namespace that
        holds most of the index is filtered after ranking instead of inside the engine: the
        namespace token's posting list is then as long as the index, and reading it would
        cost more than the over-fetch (the ranking is the same, BM25 statistics are global).
        """
        token = ns_token(namespace)
        chosen, share = await self._selective_terms(token, terms)
        words = " OR ".join(f'"{t}"' for t in chosen)
        if share >= NS_FILTER_BELOW:
            query, fetch = f"content:({words})", int(prefilter / share) + 1
        else:
            query, fetch = f'ns:"{token}" AND content:({words})', prefilter
        shape = _Shape.of(filters)
        params: dict[str, Any]
        if shape.match_clauses("sqlite"):
            # Only memories that pass the filters may take the top places: otherwise many
            # matches of another type (a task type's reflections) or of other scopes could
            # push every one out.
            stmt = _fts_filtered_statement(shape)
            params = filter_params | {"query": query, "fetch": fetch}
        else:
            stmt = text(
                "SELECT memory_id, ns, -bm25(memories_fts, 1.0, 0.0) AS relevance "
                "FROM memories_fts WHERE memories_fts MATCH :query "
                "ORDER BY relevance DESC LIMIT :fetch"
            )
            params = {"query": query, "fetch": fetch}
        rows = await self.session.execute(stmt, params)
        found = [(str(mid), float(rel)) for mid, ns, rel in rows if ns == token][:prefilter]
        return _relative(found)

    async def _selective_terms(self, token: str, terms: Sequence[str]) -> tuple[list[str], float]:
        """The query terms worth matching on, and the namespace's share of the index.

        Terms no memory holds are dropped. Once the namespace holds PRUNE_FROM memories,
        the rarest terms are kept: always MIN_MATCH_TERMS of them, then more while their
        posting lists together stay under POSTINGS_BUDGET (BM25 gives common terms little
        weight, and scoring each of their postings is what a query costs). At most
        MAX_MATCH_TERMS."""
        stems = await self._stems(terms)
        df = await self._frequencies([*stems, token.lower(), TOTAL])
        total, in_namespace = df[TOTAL], df[token.lower()]
        share = in_namespace / total if total else 1.0
        count = {i: df[stems[i]] for i in range(len(terms))}
        present = sorted((i for i in count if count[i] > 0), key=lambda i: count[i])
        if not present:
            return list(terms), share  # nothing matches; let the engine say so
        if in_namespace < PRUNE_FROM:
            return [terms[i] for i in sorted(present)][:MAX_MATCH_TERMS], share
        chosen: list[int] = []
        postings = 0
        for i in present[:MAX_MATCH_TERMS]:
            if len(chosen) >= MIN_MATCH_TERMS and postings + count[i] > POSTINGS_BUDGET:
                break
            chosen.append(i)
            postings += count[i]
        return [terms[i] for i in sorted(chosen)], share

    async def _stems(self, terms: Sequence[str]) -> list[str]:
        """The index's stem of each term (the tokenizer runs in a private temp table)."""
        missing = probe.unknown(terms)
        if missing:
            await self.session.execute(text(probe.INSERT), probe.probe_rows(missing))
            rows = await self.session.execute(text(probe.FIRST_TOKENS))
            probe.learn(missing, [(str(term), int(doc)) for term, doc in rows])
            await self.session.execute(text(probe.CLEAR))
        return probe.stems(terms)

    async def _frequencies(self, stems: Sequence[str]) -> dict[str, int]:
        """How many memories hold each stem; read at most every DF_TTL_S per stem."""
        cache = _DF.setdefault(self.session.get_bind(), {})  # per database
        now = time.monotonic()
        stale = [t for t in set(stems) if now - cache.get(t, (-DF_TTL_S, 0))[0] >= DF_TTL_S]
        if stale:
            rows = await self.session.execute(
                text("SELECT term, doc FROM memories_fts_vocab WHERE term IN :terms").bindparams(
                    bindparam("terms", expanding=True)
                ),
                {"terms": [t for t in stale if t != TOTAL]},
            )
            found = {str(term): int(doc) for term, doc in rows}
            if TOTAL in stale:
                rows_total = select(func.count()).select_from(MEMORIES)
                found[TOTAL] = int(await self.session.scalar(rows_total) or 0)
            for term in stale:
                cache[term] = (now, found.get(term, 0))
            if len(cache) > 100_000:
                cache.clear()
        return {t: cache[t][1] if t in cache else 0 for t in stems}

    async def list(
        self,
        namespace: str,
        filters: MemoryFilters,
        *,
        now: datetime,
        after: tuple[datetime, str] | None,
        limit: int,
    ) -> list[Memory]:
        dialect = self.session.get_bind().dialect.name
        shape = _Shape.of(filters)
        stmt = select(Memory).where(*shape.clauses())
        if shape.applies_to is not None:
            stmt = stmt.where(_applies_clause(dialect, shape.applies_to))
        if after is not None:
            stmt = stmt.where(keyset.before(Memory.created_at, Memory.id, after))
        stmt = stmt.order_by(Memory.created_at.desc(), Memory.id.desc()).limit(limit)
        params = _filter_params(namespace, filters, now, dialect=dialect)
        return list((await self.session.execute(stmt, params)).scalars())


def _relative(found: Iterable[tuple[str, float]]) -> dict[str, float]:
    """Matches in rank order, each relevance relative to the best one (1.0 for the best)."""
    matches = list(found)
    best = max((rel for _, rel in matches), default=0.0)
    return {mid: (rel / best if best > 0 else 0.0) for mid, rel in matches}


def _clip_sqlite(x: Any) -> Any:
    return func.max(0.0, func.min(1.0, x))


def _clip_postgres(x: Any) -> Any:
    return func.greatest(0.0, func.least(1.0, x))


_MARK_USED_SQLITE = (
    "UPDATE memories SET use_count = use_count + 1, last_used_at = ? WHERE namespace = ? AND id = ?"
)


class MemoryUsageRepository:
    """Usage and reward statistics of memories, updated by recall and rewards."""

    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def top_constraints(
        self,
        namespace: str,
        *,
        now: datetime,
        limit: int,
        applies_to: Mapping[str, str] | None = None,
    ) -> list[MemoryRow]:
        """Current constraints, most critical first: recall considers them whatever the text.
        With `applies_to` (a request's scope), only those that apply to it."""
        dialect = self.session.get_bind().dialect.name
        params: dict[str, Any] = {"namespace": namespace, "now": now, "limit": limit}
        n_ids = None
        if applies_to is not None:
            n_ids = len(_request_ids(applies_to))
            params |= _applies_params(dialect, applies_to)
        stmt = _constraints_statement(dialect, n_ids)
        return list(await self.session.execute(stmt, params))

    async def lock(self, namespace: str, ids: Iterable[str]) -> None:
        """Lock the rows in id order (PostgreSQL): transactions that update overlapping sets
        of memories (a batch of recalls, a reward) then wait for each other, not deadlock."""
        wanted = sorted(set(ids))
        if wanted and self.session.get_bind().dialect.name == "postgresql":
            await self.session.execute(
                select(MEMORIES.c.id)
                .where(MEMORIES.c.namespace == namespace, MEMORIES.c.id.in_(wanted))
                .order_by(MEMORIES.c.id)
                .with_for_update()
            )

    @staticmethod
    def mark_used_sqlite(
        uses: Iterable[tuple[str, Sequence[str], datetime]],
    ) -> tuple[str, list[tuple[Any, ...]]]:
        """`mark_used` of each (namespace, ids, now) as one executemany on SQLite, the
        memories in id order."""
        params = [
            (sqlite_utc_text(now), namespace, memory_id)
            for namespace, ids, now in uses
            for memory_id in sorted(set(ids))
        ]
        return _MARK_USED_SQLITE, params

    async def mark_used(self, namespace: str, ids: Sequence[str], *, now: datetime) -> None:
        if ids:
            await self.session.execute(
                update(MEMORIES)
                .where(MEMORIES.c.namespace == namespace, MEMORIES.c.id.in_(list(ids)))
                .values(use_count=MEMORIES.c.use_count + 1, last_used_at=now)
            )

    async def credit(self, namespace: str, ids: Sequence[str], reward: float) -> None:
        if ids:
            await self.session.execute(
                update(MEMORIES)
                .where(MEMORIES.c.namespace == namespace, MEMORIES.c.id.in_(list(ids)))
                .values(
                    reward_count=MEMORIES.c.reward_count + 1,
                    reward_sum=MEMORIES.c.reward_sum + reward,
                )
            )
