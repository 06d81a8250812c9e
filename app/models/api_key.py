"""API keys: stored as SHA-256 hashes; each maps to one namespace and one role."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Index, String
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, UTCDateTime


class ApiKey(Base):
    __tablename__ = "api_keys"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    namespace: Mapped[str] = mapped_column(String(64))
    role: Mapped[str] = mapped_column(String(16))
    # The highest memory sensitivity the key may read (recall, search, listings).
    max_sensitivity: Mapped[str] = mapped_column(String(16), server_default="high")
    name: Mapped[str | None] = mapped_column(String(256))
    prefix: Mapped[str] = mapped_column(String(16))
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime)

    __table_args__ = (Index("ix_api_keys_namespace", "namespace"),)


class DashboardSession(Base):
    """A dashboard sign-in: the browser's cookie holds a random token, this row its hash
    (never the API key). It ends at `expires_at`, at sign-out, or when its key is revoked."""

    __tablename__ = "dashboard_sessions"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)  # SHA-256 of the token
    key_id: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)

    __table_args__ = (Index("ix_dashboard_sessions_key", "key_id"),)
