"""Episodes: the queryable index row with step skeletons; full payloads are in the payload store."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Float,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, NamespacedId, UTCDateTime


class Episode(NamespacedId, Base):
    __tablename__ = "episodes"

    task_id: Mapped[str] = mapped_column(String(256))
    agent_id: Mapped[str | None] = mapped_column(String(256))
    task_type: Mapped[str | None] = mapped_column(String(256))
    description: Mapped[str | None] = mapped_column(Text)
    # open: steps may still be added; completed: the outcome is set.
    status: Mapped[str] = mapped_column(String(16))
    outcome: Mapped[str | None] = mapped_column(String(16))
    verdict: Mapped[str | None] = mapped_column(Text)
    # How the outcome is known: null, reported by the client; "inferred" from the session
    # (an agent's last checks, failures, the user's next words), with its confidence. An
    # inferred outcome gives way to a reported one or to a later inference.
    outcome_source: Mapped[str | None] = mapped_column(String(16))
    outcome_confidence: Mapped[float | None] = mapped_column(Float)
    progress: Mapped[float | None] = mapped_column(Float)
    domain: Mapped[str | None] = mapped_column(String(256))
    language: Mapped[str | None] = mapped_column(String(256))
    tags: Mapped[list[str]] = mapped_column(JSON)
    # The context's features (also in the payload), for learning to mine without it.
    features: Mapped[dict[str, Any]] = mapped_column(JSON, server_default=text("'{}'"))
    skills_applied: Mapped[list[str]] = mapped_column(JSON)
    # Skeleton of each step (tool, action, status, latency_ms, tokens; no input or
    # output), what filtering and mining read without touching the blob store.
    steps: Mapped[list[dict[str, Any]]] = mapped_column(JSON)
    # Steps 0..step_count-1 exist in the blob store (the invariant).
    step_count: Mapped[int] = mapped_column(Integer)
    error_count: Mapped[int] = mapped_column(Integer)
    total_latency_ms: Mapped[float] = mapped_column(Float)
    total_tokens: Mapped[int] = mapped_column(BigInteger)
    payload_bytes: Mapped[int] = mapped_column(Integer)
    idempotency_key: Mapped[str | None] = mapped_column(String(256))
    request_hash: Mapped[str] = mapped_column(String(64))
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    ended_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    completed_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime)

    __table_args__ = (
        UniqueConstraint("namespace", "idempotency_key", name="uq_episodes_idempotency"),
        Index("ix_episodes_ns_created", "namespace", "created_at", "id"),
        Index("ix_episodes_ns_task", "namespace", "task_id", "created_at"),
        Index("ix_episodes_ns_agent", "namespace", "agent_id", "created_at"),
        Index("ix_episodes_ns_task_type", "namespace", "task_type", "created_at"),
        Index("ix_episodes_ns_outcome", "namespace", "outcome", "created_at"),
    )
