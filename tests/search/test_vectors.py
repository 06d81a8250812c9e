"""The vector index over a real database (a SQLite file, or PostgreSQL when
ENGRAM_TEST_DATABASE_URL names one): exact answers equal brute force over the stored
vectors, filters keep exactly the allowed memories, the index follows inserts, deletions
and late commits, the HNSW path finds what exact search finds, and a new index rebuilt
from SQL answers the same."""

from __future__ import annotations

import asyncio
import hashlib
import random
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest
from sqlalchemy import Table, text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.core.config import Settings
from app.db.backends import create_engine
from app.db.migrate import migrate
from app.learning.features import scope_compatible
from app.models import MemoryVector
from app.repositories.memory_sql import MEMORIES
from app.schemas.filters import MemoryFilters
from app.search.vectors import VectorIndex
from app.services.memory_rows import new_memory

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
            ) | {"type": TYPES[i % len(TYPES)], "scope": SCOPES[i % len(SCOPES)]}
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


@pytest.fixture
async def store(settings: Settings) -> AsyncIterator[Store]:
    engine = create_engine(settings)
    await migrate(engine)
    yield Store(engine)
    await engine.dispose()


async def opened(store: Store, *, exact_max: int = 10_000) -> VectorIndex:
    index = VectorIndex(store.engine, model=MODEL, dim=DIM, exact_max=exact_max)
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


def same_ranking(got: dict[str, float], expected: list[tuple[str, float]]) -> None:
    """The same scores in the same order; the same memories but among ties at the cut."""
    assert list(got.values()) == pytest.approx([score for _, score in expected], abs=1e-5)
    last = expected[-1][1] if expected else 0.0
    assert {mid for mid, score in got.items() if score > last + 1e-5} == {
        mid for mid, score in expected if score > last + 1e-5
    }


async def test_exact_top_k_is_brute_force(store: Store) -> None:
    rng = random.Random(1)
    await store.add("a", 300, rng)
    await store.add("b", 120, rng)
    index = await opened(store)
    try:
        for query in queries(rng, 30):
            for namespace in ("a", "b"):
                got = await index.top(namespace, query, NO_FILTER, limit=10)
                same_ranking(got, store.brute(namespace, query))
        assert await index.top("nobody", queries(rng, 1)[0], NO_FILTER, limit=10) == {}
        stats = index.stats()
        assert (stats["vectors"], stats["namespaces"], stats["approximate_namespaces"]) == (
            420,
            2,
            0,
        )
        assert await index.holds("a", ["a-00001", "b-00001", "zzz"]) == {"a-00001"}
    finally:
        await index.close()


@pytest.mark.parametrize("exact_max", [10_000, 50])
async def test_filters_give_exactly_the_allowed_memories(store: Store, exact_max: int) -> None:
    rng = random.Random(2)
    await store.add("a", 400, rng)
    index = await opened(store, exact_max=exact_max)
    await built(index)
    cases = [
        MemoryFilters(types=["constraint"]),
        MemoryFilters(types=["fact", "preference"]),
        MemoryFilters(types=["skill"]),
        MemoryFilters(scope={"task_id": "t1"}),
        MemoryFilters(scope={"task_id": "t1", "session_id": "s1"}),
        MemoryFilters(applies_to={"level": "task", "task_id": "t2"}),
        MemoryFilters(applies_to={"level": "session", "task_id": "t1", "session_id": "s1"}),
        MemoryFilters(types=["procedure"], applies_to={"level": "task", "task_id": "t1"}),
    ]
    try:
        for filters in cases:
            query = queries(rng, 1)[0]
            everything = store.brute("a", query, filters, limit=1000)
            got = await index.top("a", query, filters, limit=1000)
            assert set(got) == {mid for mid, _ in everything}, filters
            top = await index.top("a", query, filters, limit=5)
            assert set(top) <= set(got)
            assert len(top) == min(5, len(everything))
    finally:
        await index.close()


async def test_follows_new_rows_deletions_and_late_commits(store: Store) -> None:
    rng = random.Random(3)
    await store.add("a", 50, rng)
    index = await opened(store)
    try:
        added = await store.add("a", 20, rng, start=50)
        await index.refresh()
        assert await index.holds("a", added) == set(added)
        query = store.vectors[("a", added[0])]
        assert next(iter(await index.top("a", query, NO_FILTER, limit=3))) == added[0]

        # Without refresh(): a query catches up by itself (at most every quarter second).
        more = await store.add("a", 1, rng, start=70)
        for _ in range(200):
            if more[0] in await index.top("a", store.vectors[("a", more[0])], NO_FILTER, limit=1):
                break
            await asyncio.sleep(0.01)
        else:
            raise AssertionError("a new row never reached a query")

        await store.delete("a", added[0])
        await index.refresh()
        assert added[0] not in await index.top("a", query, NO_FILTER, limit=100)
        assert await index.holds("a", [added[0]]) == set()
        assert index.stats()["vectors"] == 70

        # A row committed after the index read past its seq (concurrent writers): made
        # here by giving an older row this model once the index has read a newer one.
        late = (await store.add("a", 1, rng, start=90, model="other"))[0]
        await store.add("a", 1, rng, start=91)
        await index.refresh()
        assert await index.holds("a", [late]) == set()
        vector = embed("late commit arrival")
        async with store.engine.begin() as conn:
            await conn.execute(
                text(
                    "UPDATE memory_vectors SET model = :model, vector = :vector "
                    "WHERE memory_id = :id"
                ),
                {"model": MODEL, "vector": vector.astype("<f2").tobytes(), "id": late},
            )
        store.vectors[("a", late)] = vector.astype("<f2").astype(np.float32)
        await index.refresh()
        assert await index.holds("a", [late]) == {late}
        assert next(iter(await index.top("a", vector, NO_FILTER, limit=1))) == late
    finally:
        await index.close()


async def test_other_models_rows_are_ignored(store: Store) -> None:
    rng = random.Random(4)
    mine = await store.add("a", 30, rng)
    theirs = await store.add("a", 30, rng, start=100, model="another-model")
    index = await opened(store)
    try:
        assert index.stats()["vectors"] == 30
        got = await index.top("a", queries(rng, 1)[0], NO_FILTER, limit=100)
        assert set(got) == set(mine)
        assert await index.holds("a", theirs) == set()
    finally:
        await index.close()


async def test_hnsw_finds_what_exact_search_finds(store: Store) -> None:
    rng = random.Random(5)
    await store.add("a", 2000, rng)
    await store.add("b", 40, rng)  # small: stays exact
    index = await opened(store, exact_max=50)
    await built(index)
    try:
        stats = index.stats()
        assert stats["approximate_namespaces"] == 1
        assert stats["builds"] == 1
        found = 0
        for query in queries(rng, 50):
            got = await index.top("a", query, NO_FILTER, limit=10)
            assert len(got) == 10
            found += len(set(got) & {mid for mid, _ in store.brute("a", query)})
            for mid, score in got.items():  # int8 cosines, near the exact ones
                assert score == pytest.approx(float(store.vectors[("a", mid)] @ query), abs=0.03)
        assert found / 500 >= 0.9
        # Filters over the graph: over-fetched, still only allowed memories, and the ten.
        filters = MemoryFilters(types=["fact"], applies_to={"level": "task", "task_id": "t1"})
        allowed = {mid for mid, _ in store.brute("a", queries(rng, 1)[0], filters, limit=5000)}
        assert len(allowed) > 50  # more than exact_max: the graph answers
        for query in queries(rng, 10):
            got = await index.top("a", query, filters, limit=10)
            assert len(got) == 10
            assert set(got) <= allowed
        # Rows added after the build join the graph.
        added = await store.add("a", 30, rng, start=5000)
        await index.refresh()
        await built(index)
        for mid in added[:5]:
            top = await index.top("a", store.vectors[("a", mid)], NO_FILTER, limit=3)
            assert mid in top
    finally:
        await index.close()


async def test_a_new_index_rebuilt_from_sql_answers_the_same(store: Store) -> None:
    rng = random.Random(6)
    await store.add("a", 200, rng)
    await store.add("b", 600, rng)
    first = await opened(store, exact_max=300)
    await built(first)
    asked = queries(rng, 20)
    before = [
        (await first.top("a", q, NO_FILTER, limit=10), await first.top("b", q, NO_FILTER, limit=10))
        for q in asked
    ]
    await first.close()
    second = await opened(store, exact_max=300)
    await built(second)
    try:
        overlap = 0
        for q, (exact, approximate) in zip(asked, before, strict=True):
            assert await second.top("a", q, NO_FILTER, limit=10) == exact
            overlap += len(set(await second.top("b", q, NO_FILTER, limit=10)) & set(approximate))
        assert overlap / 200 >= 0.9
        assert second.stats()["vectors"] == 800
    finally:
        await second.close()
