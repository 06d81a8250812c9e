"""Ranked search of memories: the request, and each hit with how it was found."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from app.schemas import examples
from app.schemas.memory import MemoryRead, MemoryStatus, MemoryType, Scope, Sensitivity
from app.schemas.strict import Strict


class MemorySearch(Strict):
    """A ranked full-text search."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"query": "production database migrations", "types": ["constraint"]}]
        }
    )

    query: Annotated[str, StringConstraints(min_length=1, max_length=2048)] = Field(
        description=(
            "Words to search for (1 to 2048 characters); `mig*` is a prefix, and C++, C#, "
            ".NET, node.js, file paths and error codes are searched as written"
        )
    )
    types: list[MemoryType] | None = Field(default=None, description="Only these types; null: all")
    scope: Scope | None = Field(
        default=None, description="Only memories with these scope entries; null: any scope"
    )
    statuses: list[MemoryStatus] = Field(
        default_factory=lambda: [MemoryStatus.ACTIVE],
        description="Only these statuses (default: active)",
    )
    max_sensitivity: Sensitivity = Field(
        default=Sensitivity.HIGH,
        description="The most sensitive memories to include (default high), capped at the key's",
    )
    mode: Literal["lexical", "dense", "hybrid"] | None = Field(
        default=None,
        description="lexical (BM25), dense (vectors) or hybrid (both, fused by rank); "
        "null: hybrid when the server has an embedder, else lexical",
    )
    limit: Annotated[int, Field(ge=1, le=100)] = Field(
        default=10, description="Hits to return, 1 to 100 (default 10)"
    )


class ScoreParts(BaseModel):
    """What a hit's score is made of."""

    text: float = Field(description="Text relevance relative to the best match, 0 to 1")
    criticality: float = Field(description="The memory's criticality, 0 to 1")
    confidence: float = Field(description="The memory's confidence, 0 to 1")
    value: float = Field(
        description="Learned value, 0 to 1: (mean reward + 1) / 2, 0.5 before any reward"
    )
    staleness: float = Field(
        description="Age penalty, 0 (new) to 1 (at or past the staleness horizon)"
    )


class RetrievalParts(BaseModel):
    """How a hit was found: its BM25 and vector rankings, fused by reciprocal rank."""

    lexical: float | None = Field(
        description="BM25 relevance relative to the best BM25 match (null: not a BM25 match)"
    )
    lexical_rank: int | None = Field(description="Rank among the BM25 matches, from 1")
    dense: float | None = Field(
        description="Cosine similarity of the memory's vector to the query's (null: not a "
        "vector match, or lexical mode)"
    )
    dense_rank: int | None = Field(description="Rank among the vector matches, from 1")
    fused: float = Field(
        description="Hybrid and dense: the sum of 1 / (k + rank) over both rankings; "
        "lexical: the BM25 relevance"
    )


class MemoryHit(BaseModel):
    """One search hit."""

    memory: MemoryRead = Field(description="The memory found")
    score: float = Field(description="Rank score, higher first")
    parts: ScoreParts = Field(description="The score's parts")
    retrieval: RetrievalParts = Field(description="How it was found")


class MemorySearchResult(BaseModel):
    """Search hits, best first."""

    model_config = ConfigDict(json_schema_extra={"examples": [examples.MEMORY_SEARCH_RESULT]})

    query_terms: list[str] = Field(
        description="The query's words as searched: lower-cased, stop words and repeats removed"
    )
    hits: list[MemoryHit] = Field(description="At most `limit` hits, best first")
    mode: Literal["lexical", "dense", "hybrid"] = Field(
        description="How the memories were searched"
    )
    missing_vectors: int = Field(
        description="Hits without a vector yet (embedded in the background): the vector "
        "search could not find them"
    )
