"""The vector index over a real database (a SQLite file, or PostgreSQL when
ENGRAM_TEST_DATABASE_URL names one): exact answers equal brute force over the stored
vectors, filters keep exactly the allowed memories, the index follows inserts, deletions
and late commits, the HNSW path finds what exact search finds, and a new index rebuilt
from SQL answers the same."""

from __future__ import annotations

import asyncio
import random

import numpy as np
import pytest
from sqlalchemy import text

from app.schemas.filters import MemoryFilters
from app.search import vectors
from tests.search.vector_store import (
    MODEL,
    NO_FILTER,
    Store,
    built,
    embed,
    opened,
    queries,
)


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
        # A query the index cannot compare (another size, no direction): no matches.
        assert await index.top("a", np.ones(16), NO_FILTER, limit=10) == {}
        assert await index.top("a", np.zeros(384), NO_FILTER, limit=10) == {}
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
            assert len(everything) < 400  # the filter leaves some out
            assert everything or filters.types == ["skill"]
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


async def test_queries_alone_find_deletions_in_the_background(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vectors, "VERIFY_S", 0.0)  # instead of every 30 s
    rng = random.Random(13)
    ids = await store.add("a", 40, rng)
    index = await opened(store)
    try:
        query = store.vectors[("a", ids[0])]
        assert next(iter(await index.top("a", query, NO_FILTER, limit=1))) == ids[0]
        await store.delete("a", ids[0])
        for _ in range(500):
            if ids[0] not in await index.top("a", query, NO_FILTER, limit=5):
                break
            await asyncio.sleep(0.01)
        else:
            raise AssertionError("a deleted memory stayed in the index")
        assert index.stats()["vectors"] == 39
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
