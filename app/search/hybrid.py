"""Retrieval: the one way services search memories. BM25 (the backend's `Search`) and,
with an embedder, the vector index each propose their best matches; reciprocal rank
fusion merges the two rankings, and the backend's SQL ranks the fused candidates by the
blended score (text relevance, criticality, confidence, value, staleness).

Every hit keeps its parts (BM25 relevance and rank, cosine and rank, fused score), which
recall logs in its transition so that the dataset can learn from them."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any, Protocol

import numpy as np
from sqlalchemy.ext.asyncio import AsyncSession

from app.core.errors import StoreUnavailable
from app.embeddings.base import Embedder, EmbeddingError
from app.learning.ranking import query_terms
from app.repositories.memory_sql import MemoryRow
from app.schemas.filters import MemoryFilters
from app.search.base import PREFILTER, Search

log = logging.getLogger(__name__)


class Mode(StrEnum):
    LEXICAL = "lexical"
    DENSE = "dense"
    HYBRID = "hybrid"


class Vectors(Protocol):
    """The vector index (`app/search/vectors.py`): a cache of the memories' vectors in SQL."""

    def start(self) -> None: ...

    async def close(self) -> None: ...

    def stats(self) -> dict[str, Any]: ...

    async def refresh(self, *, verify: bool = True) -> None:
        """Catch up with the vectors stored since the last read, now (with `verify`, with
        deletions too)."""

    async def top(
        self, namespace: str, vector: Any, filters: MemoryFilters, *, limit: int
    ) -> dict[str, float]:
        """The `limit` nearest memories of the namespace passing the filters' type and
        scope, best first: memory id -> cosine similarity."""

    async def holds(self, namespace: str, ids: list[str]) -> set[str]:
        """Those of `ids` that have a vector in the index."""


@dataclass(frozen=True, slots=True)
class Hit:
    memory: MemoryRow
    parts: dict[str, float]  # the blended score's parts: text, value, staleness, score
    retrieval: dict[str, float | int | None]  # lexical, lexical_rank, dense, dense_rank, fused


@dataclass(frozen=True, slots=True)
class Found:
    hits: list[Hit]
    terms: list[str]
    mode: Mode
    missing_vectors: int  # hits without a vector (not embedded yet): dense could not see them


class Retrieval:
    def __init__(
        self,
        lexical: Search,
        *,
        embedder: Embedder | None = None,
        vectors: Vectors | None = None,
        rrf_k: int = 10,
        dense_weight: float = 0.8,
        min_similarity: float = 0.3,
    ) -> None:
        self.lexical = lexical
        self.embedder = embedder
        self.vectors = vectors
        self.rrf_k = rrf_k
        self.dense_weight = dense_weight
        self.min_similarity = min_similarity

    @property
    def default_mode(self) -> Mode:
        return Mode.HYBRID if self.vectors is not None else Mode.LEXICAL

    def start(self) -> None:
        self.lexical.start()
        if self.vectors is not None:
            self.vectors.start()

    async def close(self) -> None:
        await self.lexical.close()
        if self.vectors is not None:
            await self.vectors.close()

    async def rank(
        self,
        session: AsyncSession,
        namespace: str,
        query: str,
        filters: MemoryFilters,
        *,
        now: datetime,
        limit: int,
        mode: Mode | None = None,
    ) -> Found:
        """The best `limit` memories for the query text, by `mode` (default: hybrid with an
        embedder, else lexical). Raises `NoEmbedder` for dense or hybrid without one."""
        mode = mode or self.default_mode
        if mode is not Mode.LEXICAL and self.vectors is None:
            raise NoEmbedder(mode)
        terms = query_terms(query)
        prefilter = max(PREFILTER, 4 * limit)
        # BM25 and the query's embedding run at once: the index's and the model's threads.
        lexical, dense = await asyncio.gather(
            self._lexical(session, namespace, terms, filters, prefilter, mode),
            self._dense(namespace, query, filters, prefilter, mode),
        )
        if dense is None and mode is Mode.DENSE:
            raise StoreUnavailable(
                "the embedder did not answer: no vector search now", field="mode"
            )
        if dense is None:
            mode = Mode.LEXICAL  # say what was done, not what was asked
        parts = (
            _fused(lexical, dense or {}, self.rrf_k, self.dense_weight)
            if mode is not Mode.LEXICAL
            else None
        )
        relevance = (
            lexical if parts is None else {mid: p["fused_relative"] for mid, p in parts.items()}
        )
        ranked = await self.lexical.blend(
            session, namespace, relevance, filters, now=now, limit=limit
        )
        lexical_rank = {mid: i for i, mid in enumerate(lexical, start=1)}
        hits = []
        for memory, score in ranked:
            if parts is None:
                retrieval: dict[str, float | int | None] = {
                    "lexical": lexical[memory.id],
                    "lexical_rank": lexical_rank[memory.id],
                    "dense": None,
                    "dense_rank": None,
                    "fused": lexical[memory.id],
                }
            else:
                p = parts[memory.id]
                retrieval = {k: p[k] for k in ("lexical", "lexical_rank", "dense", "dense_rank")}
                retrieval["fused"] = p["fused"]
            hits.append(Hit(memory, score, retrieval))
        missing = 0
        if self.vectors is not None and hits:
            ids = [h.memory.id for h in hits]
            missing = len(ids) - len(await self.vectors.holds(namespace, ids))
        return Found(hits=hits, terms=terms, mode=mode, missing_vectors=missing)

    async def _lexical(
        self,
        session: AsyncSession,
        namespace: str,
        terms: list[str],
        filters: MemoryFilters,
        limit: int,
        mode: Mode,
    ) -> dict[str, float]:
        if not terms or mode is Mode.DENSE:
            return {}
        return await self.lexical.matches(session, namespace, terms, filters, limit=limit)

    async def _dense(
        self, namespace: str, query: str, filters: MemoryFilters, limit: int, mode: Mode
    ) -> dict[str, float] | None:
        """The vector matches; None when the query could not be embedded."""
        if mode is Mode.LEXICAL or not query.strip():
            return {}
        assert self.embedder is not None
        assert self.vectors is not None
        try:
            vector = (await self.embedder.embed([query]))[0]
        except EmbeddingError as exc:
            # Recall still answers, lexically: the embedder's endpoint may be down.
            log.warning("query embedding failed; this search is lexical: %s", exc)
            return None
        found = await self.vectors.top(namespace, np.asarray(vector), filters, limit=limit)
        return {mid: cos for mid, cos in found.items() if cos >= self.min_similarity}


class NoEmbedder(Exception):
    def __init__(self, mode: Mode) -> None:
        super().__init__(
            f"mode {mode.value!r} needs an embedder: set ENGRAM_EMBEDDINGS__PROVIDER "
            "(local or openai)"
        )


def _fused(
    lexical: Mapping[str, float], dense: Mapping[str, float], k: int, dense_weight: float
) -> dict[str, dict[str, Any]]:
    """Weighted reciprocal rank fusion: BM25's ranking gives 1 / (k + rank), the vectors'
    dense_weight / (k + rank); `fused_relative` is the fused score over the best one (the
    text relevance the blended score weighs)."""
    parts: dict[str, dict[str, Any]] = {}
    for name, ranking, weight in (("lexical", lexical, 1.0), ("dense", dense, dense_weight)):
        for rank, (mid, value) in enumerate(ranking.items(), start=1):
            p = parts.setdefault(
                mid,
                {"lexical": None, "lexical_rank": None, "dense": None, "dense_rank": None},
            )
            p[name], p[f"{name}_rank"] = value, rank
            p["fused"] = p.get("fused", 0.0) + weight / (k + rank)
    best = max((p["fused"] for p in parts.values()), default=0.0)
    for p in parts.values():
        p["fused_relative"] = p["fused"] / best if best > 0 else 0.0
    return parts
