"""Learned recall policies: the model, how it was trained and judged, and where it stands."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Float, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, NamespacedId, UTCDateTime


class Policy(NamespacedId, Base):
    """A learned policy of one namespace. Status: training -> candidate (or failed) ->
    canary -> active -> retired; a canary that does worse than the baseline is rolled back
    (retired, with the reason)."""

    __tablename__ = "policies"

    kind: Mapped[str] = mapped_column(String(32))
    version: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(16))
    # Why its status is what it is (a rollback's figures, a forced activation's reason).
    status_reason: Mapped[str | None] = mapped_column(Text)
    # The policy that decided recalls when this one was trained (its lineage).
    parent_id: Mapped[str | None] = mapped_column(String(64))
    canary_share: Mapped[float | None] = mapped_column(Float)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime)
    activated_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    retired_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    hyperparameters: Mapped[dict[str, Any]] = mapped_column(JSON)
    # The window, the feature schema, the sizes and the fit's metrics.
    training: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    evaluation: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    model: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    error: Mapped[str | None] = mapped_column(Text)

    __table_args__ = (Index("ix_policies_ns_status", "namespace", "status"),)
