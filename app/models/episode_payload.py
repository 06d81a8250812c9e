"""Episode payloads kept in SQL (ENGRAM_BLOB_STORE=sql): an episode's document and its
step chunks, written in the transaction that writes its index row."""

from __future__ import annotations

from sqlalchemy import LargeBinary, String
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base


class EpisodePayload(Base):
    __tablename__ = "episode_payloads"

    namespace: Mapped[str] = mapped_column(String(64), primary_key=True)
    episode_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    # The payload key's last field (app/storage/blobs.py): "doc", or "c" and the first
    # seq of the chunk's steps in six digits.
    part: Mapped[str] = mapped_column(String(16), primary_key=True)
    # The payload compressed with zlib (app/storage/sql.py).
    data: Mapped[bytes] = mapped_column(LargeBinary)
