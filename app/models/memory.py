"""Typed memory cells. Their text is indexed for full-text search (FTS5 / tsvector)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Float, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, NamespacedId, UTCDateTime


class Memory(NamespacedId, Base):
    __tablename__ = "memories"

    type: Mapped[str] = mapped_column(String(32))
    # {"level": "global" | "session" | "task", plus ids such as session_id, task_id, user}
    scope: Mapped[dict[str, str]] = mapped_column(JSON)
    content: Mapped[str] = mapped_column(Text)
    # Index tokens the content's words do not give (C++, paths, identifiers), indexed
    # beside it (app/learning/tokens.py); NULL when there are none.
    search_terms: Mapped[str | None] = mapped_column(Text)
    # active, superseded, contradicted, quarantined, deleted; "expired" is derived
    # from valid_until at read time, so no job has to flip it.
    status: Mapped[str] = mapped_column(String(16))
    confidence: Mapped[float] = mapped_column(Float)
    sensitivity: Mapped[str] = mapped_column(String(16))
    criticality: Mapped[float] = mapped_column(Float)
    valid_from: Mapped[datetime | None] = mapped_column(UTCDateTime)
    valid_until: Mapped[datetime | None] = mapped_column(UTCDateTime)
    source_refs: Mapped[list[str]] = mapped_column(JSON)
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", JSON)
    version: Mapped[int] = mapped_column(Integer)
    previous_id: Mapped[str | None] = mapped_column(String(64))
    superseded_by: Mapped[str | None] = mapped_column(String(64))
    token_estimate: Mapped[int] = mapped_column(Integer)
    use_count: Mapped[int] = mapped_column(Integer)
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    reward_count: Mapped[int] = mapped_column(Integer)
    reward_sum: Mapped[float] = mapped_column(Float)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime)

    __table_args__ = (
        Index("ix_memories_ns_created", "namespace", "created_at", "id"),
        # Also serves "the most critical current constraints" in index order.
        Index("ix_memories_ns_type_status", "namespace", "type", "status", "criticality", "id"),
        Index("ix_memories_ns_status", "namespace", "status"),
    )
