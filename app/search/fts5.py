"""SQLite: the memories' in-memory BM25 index (`index.py`) proposes the matches, FTS5's
query until it is built (or when it is off); SQL ranks them with the blended score."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import orjson
from sqlalchemy import Float, and_, bindparam, column, func, literal_column, select, table, text
from sqlalchemy import cast as sql_cast
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.elements import ColumnElement

from app.db import probe
from app.db.backends.sqlite import SQLiteBackend
from app.learning import tokens
from app.repositories.memory_sql import MEMORIES, FilterShape, filter_params
from app.schemas.filters import MemoryFilters
from app.search import snapshot
from app.search.base import Ranked, Statements, ranked_statement, relative, scored
from app.search.index import TermIndex
from app.search.postings import ns_token

PRUNE_FROM = 5000  # memories in the namespace before common terms are dropped
MIN_MATCH_TERMS = 4
MAX_MATCH_TERMS = 8
POSTINGS_BUDGET = 6000
# Below this share of the index, the namespace is filtered inside the full-text engine.
NS_FILTER_BELOW = 0.5
TOTAL = "\x00total"  # key of the index's row count among the term frequencies
# Term statistics only steer which terms to match on, so slightly old ones are fine.
DF_TTL_S = 30.0
_FTS = table("memories_fts", column("memory_id"), column("ns"))


def _ranked_statement(shape: FilterShape) -> Any:
    """The matches, given as a JSON object (id -> relevance / best relevance), ranked."""
    source = func.json_each(bindparam("matched")).table_valued("key", "value", name="matched")
    last = func.coalesce(MEMORIES.c.last_used_at, MEMORIES.c.updated_at)
    return ranked_statement(
        shape,
        source=source,
        matched_id=source.c.key,
        text_part=sql_cast(source.c.value, Float),
        age_days=func.julianday(bindparam("now_text")) - func.julianday(last),
        clip=SQLiteBackend.clip,
    )


def _fts_statement(shape: FilterShape) -> Any:
    """FTS5's best matches by bm25() among the memories that pass the shape's match
    filters; parameters: the filters', `query` and `fetch`."""
    fts: ColumnElement[Any] = literal_column("memories_fts")
    relevance = -func.bm25(fts, literal_column("1.0"), literal_column("0.0"))
    return (
        select(_FTS.c.memory_id, _FTS.c.ns, relevance.label("relevance"))
        .join(
            MEMORIES,
            and_(
                MEMORIES.c.namespace == bindparam("namespace"),
                MEMORIES.c.id == _FTS.c.memory_id,
            ),
        )
        .where(fts.op("MATCH")(bindparam("query")), *shape.match_clauses(SQLiteBackend))
        .order_by(literal_column("relevance").desc())
        .limit(bindparam("fetch"))
    )


class Fts5Search:
    dialect = "sqlite"

    def __init__(
        self, *, database_file: str | None, use_index: bool, local_probe: bool = False
    ) -> None:
        saved = snapshot.path_for(database_file) if database_file else None
        self.index = TermIndex(database_file, saved=saved) if use_index and database_file else None
        # Where the database has no temp tables (a libSQL server), stems are learned in a
        # private in-memory SQLite with the same tokenizer.
        self._local_probe = probe.LocalProbe() if local_probe else None
        # Built statements by filter shape, and how many memories hold each stem.
        self._ranked = Statements(_ranked_statement)
        self._fts = Statements(_fts_statement)
        self._df: dict[str, tuple[float, int]] = {}

    def start(self) -> None:
        if self.index is not None:
            self.index.start()

    async def close(self) -> None:
        if self.index is not None:
            await asyncio.to_thread(self.index.close)
        if self._local_probe is not None:
            self._local_probe.close()

    def stats(self) -> dict[str, Any] | None:
        # Informational: until it is built, search uses the full-text query instead.
        return self.index.stats() if self.index is not None else None

    async def matches(
        self,
        session: AsyncSession,
        namespace: str,
        terms: Sequence[str],
        filters: MemoryFilters,
        *,
        limit: int,
    ) -> dict[str, float]:
        found = await self._index_matches(namespace, terms, limit, filters)
        if found is None:
            params = filter_params(namespace, filters, datetime.now(UTC), backend=SQLiteBackend)
            found = await self._fts_matches(session, namespace, terms, limit, filters, params)
        return found

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
        params = filter_params(namespace, filters, now, backend=SQLiteBackend)
        params["limit"] = limit
        params["matched"] = orjson.dumps(dict(relevance)).decode()
        params["now_text"] = now.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
        stmt = self._ranked(FilterShape.of(filters))
        return scored(await session.execute(stmt, params))

    async def _index_matches(
        self,
        namespace: str,
        terms: Sequence[str],
        prefilter: int,
        filters: MemoryFilters,
    ) -> dict[str, float] | None:
        """The same matches as `_fts_matches`, from the process's in-memory index of this
        database (None when it has none or it is not built yet)."""
        if self.index is None:
            return None
        found = await self.index.top(
            namespace,
            terms,
            prefilter,
            types=filters.types,
            scope=filters.scope,
            applies_to=filters.applies_to,
        )
        return None if found is None else relative(found.items())

    async def _fts_matches(
        self,
        session: AsyncSession,
        namespace: str,
        terms: Sequence[str],
        prefilter: int,
        filters: MemoryFilters,
        base_params: dict[str, Any],
    ) -> dict[str, float]:
        """The namespace's best matches by BM25 alone: memory id -> relevance relative to
        the best one (1.0 for the best).

        Without filters, run as a query of its own so that SQLite reads each match's id only
        when it enters the top `prefilter` (as part of a join it would read all of them).
        With them (a recall always has its scope), every match is joined to its memory row
        and filtered before the ranking: exact, and dearer than the plain query, since
        every match's row is read.
        A namespace that holds most of the index is filtered after ranking instead of inside
        the engine: the namespace token's posting list is then as long as the index, and
        reading it would cost more than the over-fetch (the ranking is the same, BM25
        statistics are global).
        """
        token = ns_token(namespace)
        chosen, share = await self._selective_terms(session, token, tokens.groups(list(terms)))
        if not chosen:
            return {}
        words = _match_expression(chosen)
        if share >= NS_FILTER_BELOW:
            query, fetch = f"content:({words})", int(prefilter / share) + 1
        else:
            query, fetch = f'ns:"{token}" AND content:({words})', prefilter
        shape = FilterShape.of(filters)
        params: dict[str, Any]
        if shape.match_clauses(SQLiteBackend):
            # Only memories that pass the filters may take the top places: otherwise many
            # matches of another type (a task type's reflections) or of other scopes could
            # push every one out.
            stmt = self._fts(shape)
            params = base_params | {"query": query, "fetch": fetch}
        else:
            stmt = text(
                "SELECT memory_id, ns, -bm25(memories_fts, 1.0, 0.0) AS relevance "
                "FROM memories_fts WHERE memories_fts MATCH :query "
                "ORDER BY relevance DESC LIMIT :fetch"
            )
            params = {"query": query, "fetch": fetch}
        rows = await session.execute(stmt, params)
        found = [(str(mid), float(rel)) for mid, ns, rel in rows if ns == token][:prefilter]
        return relative(found)

    async def _selective_terms(
        self, session: AsyncSession, token: str, groups: list[tokens.Group]
    ) -> tuple[list[tuple[str, float]], float]:
        """The index tokens worth matching on, weighted, and the namespace's index share.

        Each term's own token is kept, unless no memory holds it. Once the namespace holds
        PRUNE_FROM memories, the rarest are kept: always MIN_MATCH_TERMS of them, then more
        while their posting lists together stay under POSTINGS_BUDGET (BM25 gives common
        terms little weight, and scoring each of their postings is what a query costs). At
        most MAX_MATCH_TERMS. Prefixes are kept (FTS5 expands them itself), and the terms'
        expansions (synonyms) that some memory holds, the rarest first while the budget
        allows once the namespace is that large."""
        own = [g.tokens[0][0] for g in groups if not tokens.is_prefix(g.tokens[0][0])]
        prefixes = [g.tokens[0] for g in groups if tokens.is_prefix(g.tokens[0][0])]
        extra = [t for g in groups for t in g.tokens[1:]]
        stems = await self._stems(session, [*own, *(t for t, _ in extra)])
        df = await self._frequencies(session, [*stems, token.lower(), TOTAL])
        total, in_namespace = df[TOTAL], df[token.lower()]
        share = in_namespace / total if total else 1.0
        count = [df[s] for s in stems]
        present = sorted((i for i in range(len(own)) if count[i] > 0), key=lambda i: count[i])
        held = sorted(
            (i for i in range(len(own), len(stems)) if count[i] > 0), key=count.__getitem__
        )
        if in_namespace < PRUNE_FROM:
            kept = sorted(present)[:MAX_MATCH_TERMS]
            expansions = [extra[i - len(own)] for i in held]
        else:
            picked: list[int] = []
            postings = 0
            for i in present[:MAX_MATCH_TERMS]:
                if len(picked) >= MIN_MATCH_TERMS and postings + count[i] > POSTINGS_BUDGET:
                    break
                picked.append(i)
                postings += count[i]
            kept = sorted(picked)
            expansions = []
            for i in held:
                if len(kept) + len(expansions) >= MAX_MATCH_TERMS:
                    break
                if postings + count[i] <= POSTINGS_BUDGET:
                    expansions.append(extra[i - len(own)])
                    postings += count[i]
        if not kept and not expansions:
            kept = list(range(len(own)))  # nothing matches but perhaps a prefix: let FTS5 say
        return [(own[i], 1.0) for i in kept] + prefixes + expansions, share

    async def _stems(self, session: AsyncSession, terms: Sequence[str]) -> list[str]:
        """The index's stem of each term (the tokenizer runs in a private temp table)."""
        missing = probe.unknown(terms)
        if missing and self._local_probe is not None:
            self._local_probe.learn(missing)
        elif missing:
            await session.execute(text(probe.INSERT), probe.probe_rows(missing))
            rows = await session.execute(text(probe.FIRST_TOKENS))
            probe.learn(missing, [(str(term), int(doc)) for term, doc in rows])
            await session.execute(text(probe.CLEAR))
        return probe.stems(terms)

    async def _frequencies(self, session: AsyncSession, stems: Sequence[str]) -> dict[str, int]:
        """How many memories hold each stem; read at most every DF_TTL_S per stem."""
        cache = self._df
        now = time.monotonic()
        stale = [t for t in set(stems) if now - cache.get(t, (-DF_TTL_S, 0))[0] >= DF_TTL_S]
        if stale:
            rows = await session.execute(
                text("SELECT term, doc FROM memories_fts_vocab WHERE term IN :terms").bindparams(
                    bindparam("terms", expanding=True)
                ),
                {"terms": [t for t in stale if t != TOTAL]},
            )
            found = {str(term): int(doc) for term, doc in rows}
            if TOTAL in stale:
                rows_total = select(func.count()).select_from(MEMORIES)
                found[TOTAL] = int(await session.scalar(rows_total) or 0)
            for term in stale:
                cache[term] = (now, found.get(term, 0))
            if len(cache) > 100_000:
                cache.clear()
        return {t: cache[t][1] if t in cache else 0 for t in stems}


def _match_expression(chosen: list[tuple[str, float]]) -> str:
    """An OR of the tokens, each a phrase (`"mig"*` for a prefix). FTS5's bm25() sums
    over the phrases, so a token weighing twice another is written twice."""
    least = min((w for _, w in chosen), default=1.0)
    phrases = []
    for t, weight in chosen:
        phrase = f'"{t[:-1]}"*' if tokens.is_prefix(t) else f'"{t}"'
        phrases += [phrase] * max(1, round(weight / least))
    return " OR ".join(phrases)
