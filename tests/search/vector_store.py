"""Memories and their vectors written to a real database as the app writes them, a
deterministic test embedding (words hashed to a few signed dimensions), and brute force
over what was written: what the vector index's tests compare it with."""

from __future__ import annotations

import asyncio
import hashlib
import random
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import Table, text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.learning.features import scope_compatible
from app.models import MemoryVector
from app.repositories.memory_sql import MEMORIES
from app.schemas.filters import MemoryFilters
from app.search.vectors import VectorIndex
from app.services.memories.rows import new_memory

DIM = 384
MODEL = "test-hash-384"
WORDS = (
    "pool connection database timeout retry cache index query planner vacuum lock "
    "writer reader snapshot backup restore migrate schema column table row page "
    "deploy release rollback canary metric alert latency budget token memory recall "
    "agent episode reward policy skill reflection pattern constraint preference fact"
).split()
TYPES = ["fact", "procedure", "constraint", "preference"]
SCOPES: list[dict[str, str]] = [
    {"level": "global"},
    {"level": "task", "task_id": "t1"},
    {"level": "task", "task_id": "t2"},
    {"level": "session", "session_id": "s1", "task_id": "t1"},
]
NO_FILTER = MemoryFilters()
VECTORS: Table = MemoryVector.__table__  # type: ignore[assignment]


def embed(words: str) -> np.ndarray[Any, Any]:
    """A deterministic test embedding: each word hashed to a few signed dimensions."""
    vector = np.zeros(DIM, dtype=np.float32)
    for word in words.split():
        digest = hashlib.sha256(word.encode()).digest()
        for i in range(0, 12, 3):
            vector[int.from_bytes(digest[i : i + 2], "little") % DIM] += (
                1.0 if digest[i + 2] & 1 else -1.0
            )
    norm = np.linalg.norm(vector)
    return vector / norm if norm else vector


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 8)))


class Store:
    """Memories and their vectors written as the app writes them, and brute force."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self.memories: dict[tuple[str, str], dict[str, Any]] = {}
        self.vectors: dict[tuple[str, str], np.ndarray[Any, Any]] = {}

    async def add(
        self, namespace: str, n: int, rng: random.Random, *, start: int = 0, model: str = MODEL
    ) -> list[str]:
        now = datetime.now(UTC)
        rows, keys, texts = [], [], []
        for i in range(start, start + n):
            content = sentence(rng)
            memory = new_memory(
                namespace,
                f"{namespace}-{i:05d}",
                content=content,
                confidence=0.5,
                sensitivity="low",
                criticality=0.5,
                source_refs=[],
                metadata={},
                now=now,
            ) | {"type": TYPES[i % len(TYPES)], "scope": SCOPES[(i // len(TYPES)) % len(SCOPES)]}
            rows.append(memory)
            keys.append((namespace, memory["id"]))
            texts.append(content)
        vectors = np.stack([embed(t) for t in texts])
        async with self.engine.begin() as conn:
            await conn.execute(MEMORIES.insert(), rows)
        await self.embed(keys, vectors, model=model)
        for row, key, vector in zip(rows, keys, vectors, strict=True):
            self.memories[key] = row
            if model == MODEL:  # what the index holds: float16's rounding
                self.vectors[key] = vector.astype("<f2").astype(np.float32)
        return [k[1] for k in keys]

    async def embed(self, keys: list[tuple[str, str]], vectors: Any, *, model: str) -> None:
        """Their vectors' rows as the embedding loop stores them (float16, little-endian)."""
        now = datetime.now(UTC)
        rows = [
            {
                "namespace": ns,
                "memory_id": mid,
                "model": model,
                "dim": DIM,
                "vector": np.asarray(vector, dtype="<f2").tobytes(),
                "created_at": now,
            }
            for (ns, mid), vector in zip(keys, vectors, strict=True)
        ]
        async with self.engine.begin() as conn:
            await conn.execute(VECTORS.insert(), rows)

    async def delete(self, namespace: str, memory_id: str) -> None:
        async with self.engine.begin() as conn:
            await conn.execute(
                text("DELETE FROM memories WHERE namespace = :ns AND id = :id"),
                {"ns": namespace, "id": memory_id},
            )
        self.memories.pop((namespace, memory_id))
        self.vectors.pop((namespace, memory_id))

    def brute(
        self, namespace: str, query: Any, filters: MemoryFilters = NO_FILTER, limit: int = 10
    ) -> list[tuple[str, float]]:
        """Every allowed memory of the namespace by cosine, best first (ties by id)."""
        scored = []
        for (ns, mid), vector in self.vectors.items():
            row = self.memories[(ns, mid)]
            if ns != namespace or (filters.types is not None and row["type"] not in filters.types):
                continue
            if filters.scope is not None and any(
                row["scope"].get(k) != v for k, v in filters.scope.items()
            ):
                continue
            if filters.applies_to is not None and not scope_compatible(
                row["scope"], dict(filters.applies_to)
            ):
                continue
            scored.append((mid, float(vector @ query)))
        scored.sort(key=lambda p: (-p[1], p[0]))
        return scored[:limit]


async def opened(
    store: Store, *, exact_max: int = 10_000, cache_dir: Path | None = None
) -> VectorIndex:
    index = VectorIndex(
        store.engine, model=MODEL, dim=DIM, exact_max=exact_max, cache_dir=cache_dir
    )
    index.start()
    await index.refresh()
    return index


async def built(index: VectorIndex) -> None:
    """Wait until every HNSW graph covers its namespace (the build runs in steps)."""
    for _ in range(6000):
        if index.stats()["building"] == 0:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"graph never built: {index.stats()}")


def queries(rng: random.Random, n: int) -> list[np.ndarray[Any, Any]]:
    return [embed(sentence(rng)) for _ in range(n)]
