"""Kinds of work that agents' sessions are asked for, per project."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, Index, Integer, LargeBinary, String
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, NamespacedId, UTCDateTime


class TaskKind(NamespacedId, Base):
    """A kind of work in one project: the prompts that asked for it, as term counts
    (app/learning/kinds.py). Its name, given at birth, is the task type of its episodes."""

    __tablename__ = "task_kinds"

    project: Mapped[str] = mapped_column(String(256))
    name: Mapped[str] = mapped_column(String(256))
    prompts: Mapped[int] = mapped_column(Integer)
    terms: Mapped[dict[str, int]] = mapped_column(JSON)
    # With an embedder: the sum of its prompts' unit vectors (float32, little-endian) and
    # the model whose vectors they are; a kind of another model starts its sum again.
    meaning: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)
    meaning_model: Mapped[str | None] = mapped_column(String(128), nullable=True)
    # Up to 16 of those vectors, the most unlike each other (float16, little-endian).
    examples: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)
    # The kind whose work this one's turned out to be (app/services/learning/kind_merges.py):
    # its prompts are counted there, and prompts are filed there from then on.
    merged_into: Mapped[str | None] = mapped_column(String(64), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime)

    __table_args__ = (
        Index("ux_task_kinds_ns_project_name", "namespace", "project", "name", unique=True),
    )
