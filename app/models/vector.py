"""Memory vectors (semantic search) and the memories waiting for one."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Index, Integer, LargeBinary, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, UTCDateTime


class MemoryVector(Base):
    """A memory's text embedded by one model: float16, little-endian, L2-normalised. The
    in-memory vector indexes read these rows in `seq` order and catch up from the last
    they hold; a memory has one vector per model (changing model embeds again)."""

    __tablename__ = "memory_vectors"
    __table_args__ = (
        UniqueConstraint("namespace", "memory_id", "model", name="uq_memory_vectors"),
        {"sqlite_autoincrement": True},
    )

    # Never reused (AUTOINCREMENT on SQLite, a sequence elsewhere): the indexes' cursor.
    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    namespace: Mapped[str] = mapped_column(String(64))
    memory_id: Mapped[str] = mapped_column(String(64))
    model: Mapped[str] = mapped_column(String(128))
    dim: Mapped[int] = mapped_column(Integer)
    vector: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)


class PendingEmbedding(Base):
    """A memory written and not embedded yet: a database trigger adds one with each new
    memory, in the write's own transaction, so the write never waits for the model; the
    embedding loop takes them in order and deletes them with the vectors it stores."""

    __tablename__ = "memory_embeddings_pending"
    __table_args__ = (
        Index("ix_memory_embeddings_pending_memory", "namespace", "memory_id"),
        {"sqlite_autoincrement": True},
    )

    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    namespace: Mapped[str] = mapped_column(String(64))
    memory_id: Mapped[str] = mapped_column(String(64))
