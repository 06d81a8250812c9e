"""Memories: typed cells that recall chooses from."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field

from engram_client.models.base import Request, Response


class MemoryCreate(Request):
    """A memory to store."""

    id: str | None = Field(default=None, description="Your id for it; a retry returns it")
    type: str = Field(description="constraint, preference, fact, procedure, ... (see the API)")
    content: str = Field(description="What to remember")
    scope: dict[str, str] | None = Field(
        default=None, description='Where it applies: {"level": "global"} (default), ...'
    )
    confidence: float | None = Field(default=None, description="How sure, 0 to 1")
    sensitivity: str | None = Field(default=None, description="low, medium, high, restricted")
    criticality: float | None = Field(default=None, description="How much it matters, 0 to 1")
    valid_from: datetime | None = Field(default=None, description="Not recalled before")
    valid_until: datetime | None = Field(default=None, description="Not recalled after")
    source_refs: list[str] | None = Field(default=None, description="Where it came from")
    metadata: dict[str, Any] | None = Field(default=None, description="Free-form JSON")


class MemorySearch(Request):
    """A ranked full-text search."""

    query: str = Field(description="Words to match")
    types: list[str] | None = Field(default=None, description="Only these memory types")
    scope: dict[str, str] | None = Field(default=None, description="Only this scope")
    statuses: list[str] | None = Field(default=None, description="Statuses (default active)")
    max_sensitivity: str | None = Field(default=None, description="Most sensitive returned")
    limit: int | None = Field(default=None, description="Most hits (1 to 100, default 10)")
    mode: str | None = Field(
        default=None, description="lexical, dense or hybrid (default: hybrid with an embedder)"
    )


class MemoryRead(Response):
    id: str = Field(description="Memory id")
    type: str = Field(description="constraint, fact, skill, ...")
    scope: dict[str, str] = Field(description="Where it applies")
    content: str = Field(description="What to remember")
    status: str = Field(description="active, superseded, deleted, ...")
    confidence: float = Field(description="How sure, 0 to 1")
    sensitivity: str = Field(description="low, medium, high or restricted")
    criticality: float = Field(description="How much it matters, 0 to 1")
    valid_from: datetime | None = Field(description="Not recalled before")
    valid_until: datetime | None = Field(description="Not recalled after")
    source_refs: list[str] = Field(description="Where it came from")
    metadata: dict[str, Any] = Field(description="Free-form JSON")
    version: int = Field(description="Version in its chain, from 1")
    previous_id: str | None = Field(description="The version it replaced")
    superseded_by: str | None = Field(description="The version that replaced it")
    token_estimate: int = Field(description="Tokens it takes in a recall")
    use_count: int = Field(description="Recalls that chose it")
    last_used_at: datetime | None = Field(description="Last time a recall chose it")
    reward_count: int = Field(description="Rewards credited to it")
    reward_mean: float | None = Field(description="Mean of those rewards")
    created_at: datetime = Field(description="When it was stored")
    updated_at: datetime = Field(description="Last change")
    redacted: bool = Field(default=False, description="Content and metadata withheld from this key")


class MemoryPage(Response):
    items: list[MemoryRead] = Field(description="This page's memories")
    next_cursor: str | None = Field(description="The next page's cursor; null at the end")


class ScoreParts(Response):
    text: float = Field(description="Text match")
    criticality: float = Field(description="Criticality part")
    confidence: float = Field(description="Confidence part")
    value: float = Field(description="Reward history part")
    staleness: float = Field(description="Age penalty")


class RetrievalParts(Response):
    lexical: float | None = Field(description="BM25 relevance relative to the best, or null")
    lexical_rank: int | None = Field(description="Rank among the BM25 matches, or null")
    dense: float | None = Field(description="Cosine to the query's vector, or null")
    dense_rank: int | None = Field(description="Rank among the vector matches, or null")
    fused: float = Field(description="Reciprocal rank fusion of both (lexical: BM25's)")


class MemoryHit(Response):
    memory: MemoryRead = Field(description="The memory")
    score: float = Field(description="Its rank score")
    parts: ScoreParts = Field(description="The score's parts")
    retrieval: RetrievalParts = Field(description="How it was found")


class MemorySearchResult(Response):
    query_terms: list[str] = Field(description="The query's terms as searched")
    hits: list[MemoryHit] = Field(description="Best first")
    mode: str = Field(description="lexical, dense or hybrid: how it was searched")
    missing_vectors: int = Field(description="Hits without a vector yet")
