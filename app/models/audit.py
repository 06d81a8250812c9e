"""The audit log: who did what to keys and service-wide data, and when."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, UTCDateTime


class AuditEvent(Base):
    __tablename__ = "audit_events"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    # The namespace acted on ("*" for actions on the whole service, such as a backup).
    namespace: Mapped[str] = mapped_column(String(64))
    # "key:<id>" for a request made with a key, "open" without one, "cli" from the command.
    actor: Mapped[str] = mapped_column(String(80))
    role: Mapped[str | None] = mapped_column(String(16))
    action: Mapped[str] = mapped_column(String(64))
    target: Mapped[str | None] = mapped_column(String(256))
    outcome: Mapped[str] = mapped_column(String(16))
    detail: Mapped[dict[str, Any]] = mapped_column(JSON)
    request_id: Mapped[str | None] = mapped_column(String(128))
    client: Mapped[str | None] = mapped_column(String(64))

    __table_args__ = (Index("ix_audit_events_namespace_id", "namespace", "id"),)
