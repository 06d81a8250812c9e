"""Answers of requests made under an Idempotency-Key, kept so that a retry gets them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, UTCDateTime


class IdempotentRequest(Base):
    __tablename__ = "idempotent_requests"

    namespace: Mapped[str] = mapped_column(String(64), primary_key=True)
    key: Mapped[str] = mapped_column(String(256), primary_key=True)
    # "POST /v1/rewards": the same key on another operation is a conflict.
    operation: Mapped[str] = mapped_column(String(512))
    request_digest: Mapped[str] = mapped_column(String(64))
    status_code: Mapped[int] = mapped_column(Integer)
    response: Mapped[Any] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
