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


class MemoryRead(Response):
    id: str
    type: str
    scope: dict[str, str]
    content: str
    status: str
    confidence: float
    sensitivity: str
    criticality: float
    valid_from: datetime | None
    valid_until: datetime | None
    source_refs: list[str]
    metadata: dict[str, Any]
    version: int
    previous_id: str | None
    superseded_by: str | None
    token_estimate: int
    use_count: int
    last_used_at: datetime | None
    reward_count: int
    reward_mean: float | None
    created_at: datetime
    updated_at: datetime
    redacted: bool = False


class MemoryPage(Response):
    items: list[MemoryRead]
    next_cursor: str | None


class ScoreParts(Response):
    text: float
    criticality: float
    confidence: float
    value: float
    staleness: float


class MemoryHit(Response):
    memory: MemoryRead
    score: float
    parts: ScoreParts


class MemorySearchResult(Response):
    query_terms: list[str]
    hits: list[MemoryHit]
