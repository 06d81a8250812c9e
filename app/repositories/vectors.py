"""Memory vectors and the memories waiting for one (`app/worker/embeddings.py` fills
them, the vector index reads them)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, cast

import numpy as np
from sqlalchemy import Row, Table, case, delete, func, insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.backends import backend_of
from app.models import Memory, MemoryVector, PendingEmbedding

VECTORS = cast(Table, MemoryVector.__table__)


class VectorRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def next_pending(self, limit: int, *, model: str) -> Sequence[Row[int, str, str, str]]:
        """The oldest waiting memories: seq, namespace, memory_id, content (None when the
        memory was deleted meanwhile, or already has a vector of this model: a restored
        store's memories wait again, with their vectors restored)."""
        has_vector = (
            select(MemoryVector.seq)
            .where(
                MemoryVector.namespace == PendingEmbedding.namespace,
                MemoryVector.memory_id == PendingEmbedding.memory_id,
                MemoryVector.model == model,
            )
            .exists()
        )
        stmt = (
            select(
                PendingEmbedding.seq,
                PendingEmbedding.namespace,
                PendingEmbedding.memory_id,
                case((has_vector, None), else_=Memory.content).label("content"),
            )
            .outerjoin(
                Memory,
                (Memory.namespace == PendingEmbedding.namespace)
                & (Memory.id == PendingEmbedding.memory_id),
            )
            .order_by(PendingEmbedding.seq)
            .limit(limit)
        )
        return (await self.session.execute(stmt)).all()

    async def store(
        self,
        keys: Sequence[tuple[str, str]],
        vectors: np.ndarray[Any, Any],
        *,
        model: str,
        now: datetime,
    ) -> None:
        """Each (namespace, memory_id)'s vector (float16 on disk); one per memory and model."""
        if not keys:
            return
        halves = np.asarray(vectors, dtype="<f2")
        stmt = backend_of(self.session).insert_ignoring_duplicates(
            VECTORS, ["namespace", "memory_id", "model"]
        )
        await self.session.execute(
            stmt,
            [
                {
                    "namespace": ns,
                    "memory_id": mid,
                    "model": model,
                    "dim": int(halves.shape[1]),
                    "vector": halves[i].tobytes(),
                    "created_at": now,
                }
                for i, (ns, mid) in enumerate(keys)
            ],
        )

    async def done(self, seqs: Sequence[int]) -> None:
        await self.session.execute(delete(PendingEmbedding).where(PendingEmbedding.seq.in_(seqs)))

    async def pending(self) -> int:
        return int(
            await self.session.scalar(select(func.count()).select_from(PendingEmbedding)) or 0
        )

    async def counts(self, model: str) -> tuple[int, int, int]:
        """(memories, vectors of this model, waiting)."""
        memories = await self.session.scalar(select(func.count()).select_from(Memory))
        vectors = await self.session.scalar(
            select(func.count()).select_from(MemoryVector).where(MemoryVector.model == model)
        )
        return int(memories or 0), int(vectors or 0), await self.pending()

    async def enqueue_missing(self, model: str) -> int:
        """Put on the list every memory without a vector of this model that is not on it."""
        has_vector = select(MemoryVector.seq).where(
            MemoryVector.namespace == Memory.namespace,
            MemoryVector.memory_id == Memory.id,
            MemoryVector.model == model,
        )
        waits = select(PendingEmbedding.seq).where(
            PendingEmbedding.namespace == Memory.namespace,
            PendingEmbedding.memory_id == Memory.id,
        )
        missing = (
            select(Memory.namespace, Memory.id)
            .where(~has_vector.exists(), ~waits.exists())
            .order_by(Memory.created_at, Memory.id)
        )
        result = await self.session.execute(
            insert(PendingEmbedding).from_select(["namespace", "memory_id"], missing)
        )
        return int(getattr(result, "rowcount", 0) or 0)
