"""HNSW graphs saved beside the database: a restart reads its graph instead of building
it again and answers as before; a graph whose rows changed in SQL meanwhile is not used."""

from __future__ import annotations

import random
from pathlib import Path

from app.schemas.filters import MemoryFilters
from tests.search.vector_store import NO_FILTER, Store, built, opened, queries


async def test_a_restart_reads_the_saved_graph_and_answers_the_same(
    store: Store, tmp_path: Path
) -> None:
    cache = tmp_path / "vectors"
    rng = random.Random(11)
    await store.add("a", 600, rng)
    first = await opened(store, exact_max=50, cache_dir=cache)
    await built(first)
    assert (first.stats()["builds"], first.stats()["restored"]) == (1, 0)
    asked = queries(rng, 20)
    before = [await first.top("a", q, NO_FILTER, limit=10) for q in asked]
    await first.close()
    assert len(list(cache.glob("*.usearch"))) == 1

    second = await opened(store, exact_max=50, cache_dir=cache)
    try:
        stats = second.stats()
        assert (stats["builds"], stats["restored"], stats["building"]) == (0, 1, 0)
        for q, answer in zip(asked, before, strict=True):
            assert await second.top("a", q, NO_FILTER, limit=10) == answer
        # The saved graph holds the vectors it was built from: exact search over a few
        # allowed memories reads them from it.
        few = MemoryFilters(types=["fact"], scope={"task_id": "t1"})
        query = asked[0]
        expected = [mid for mid, _ in store.brute("a", query, few, limit=5)]
        assert len(expected) == 5
        assert list(await second.top("a", query, few, limit=5)) == expected
        # New rows join the restored graph.
        added = await store.add("a", 20, rng, start=1000)
        await second.refresh()
        await built(second)
        for mid in added[:5]:
            assert mid in await second.top("a", store.vectors[("a", mid)], NO_FILTER, limit=3)
    finally:
        await second.close()


async def test_a_graph_whose_rows_changed_is_built_again(store: Store, tmp_path: Path) -> None:
    cache = tmp_path / "vectors"
    rng = random.Random(12)
    ids = await store.add("a", 300, rng)
    first = await opened(store, exact_max=50, cache_dir=cache)
    await built(first)
    await first.close()
    await store.delete("a", ids[3])  # while no index runs

    second = await opened(store, exact_max=50, cache_dir=cache)
    try:
        await built(second)
        stats = second.stats()
        assert (stats["restored"], stats["builds"], stats["vectors"]) == (0, 1, 299)
        query = store.vectors[("a", ids[4])]
        found = await second.top("a", query, NO_FILTER, limit=10)
        assert ids[3] not in found
        assert next(iter(found)) == ids[4]
    finally:
        await second.close()
    # Rows written while no index ran come after the saved graph's: it is read back and
    # grown by them.
    added = await store.add("a", 30, rng, start=1000)
    third = await opened(store, exact_max=50, cache_dir=cache)
    try:
        assert third.stats()["restored"] == 1
        await built(third)
        for mid in added[:5]:
            assert mid in await third.top("a", store.vectors[("a", mid)], NO_FILTER, limit=3)
    finally:
        await third.close()
