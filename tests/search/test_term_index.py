"""The in-memory search index (SQLite): the same ranking as FTS5's bm25(), and in step
with every insert, delete and rewrite made in SQL, on a real database file."""

from __future__ import annotations

import asyncio
import random
import sqlite3
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from app.core.config import Settings
from app.db.backends import create_engine
from app.db.migrate import migrate
from app.learning.features import scope_compatible
from app.learning.ranking import query_terms
from app.repositories.memories import MEMORIES
from app.search.index import TermIndex
from app.search.postings import ns_token
from app.services.memories.rows import new_memory
from tests.conftest import DB_URL, running

pytestmark = pytest.mark.skipif(DB_URL is not None, reason="SQLite's index")

WORDS = (
    "pool connection database timeout retry cache index query planner vacuum lock "
    "writer reader snapshot backup restore migrate schema column table row page "
    "deploy release rollback canary metric alert latency budget token memory recall "
    "agent episode reward policy skill reflection pattern constraint preference fact"
).split()
TYPES = ["fact", "procedure", "constraint", "preference"]


def sentence(rng: random.Random) -> str:
    # Some words repeat (term frequency > 1) and inflect ("pools", "retried").
    words = [rng.choice(WORDS) for _ in range(rng.randint(3, 14))]
    return " ".join(w + rng.choice(["", "", "", "s", "ed"]) for w in words)


def row(namespace: str, i: int, content: str) -> dict[str, Any]:
    memory = new_memory(
        namespace,
        f"{namespace}-{i:05d}",
        content=content,
        confidence=0.5,
        sensitivity="low",
        criticality=0.5,
        source_refs=[],
        metadata={},
        now=datetime.now(UTC),
    )
    return memory | {"type": TYPES[i % len(TYPES)], "scope": {"level": "global"}}


class Db:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.engine = create_engine(Settings(database_url=f"sqlite+aiosqlite:///{path}"))

    async def sql(self, statement: Any, params: Any = None) -> None:
        async with self.engine.begin() as conn:
            await conn.execute(statement, params)

    async def insert(self, rows: list[dict[str, Any]]) -> None:
        await self.sql(MEMORIES.insert(), rows)

    async def delete(self, namespace: str, memory_id: str) -> None:
        await self.sql(
            text("DELETE FROM memories WHERE namespace = :ns AND id = :id"),
            {"ns": namespace, "id": memory_id},
        )

    def bm25(self, namespace: str, terms: list[str], limit: int) -> list[tuple[str, float]]:
        """FTS5's own answer: the namespace's best matches by bm25()."""
        words = " OR ".join(f'"{t}"' for t in terms)
        query = f'ns:"{ns_token(namespace)}" AND content:({words})'
        with sqlite3.connect(self.path) as conn:
            rows = conn.execute(
                "SELECT memory_id, -bm25(memories_fts, 1.0, 0.0) AS r FROM memories_fts "
                "WHERE memories_fts MATCH ? ORDER BY r DESC, rowid LIMIT ?",
                (query, limit),
            ).fetchall()
        return [(str(mid), float(r)) for mid, r in rows]


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Db]:
    database = Db(tmp_path / "engram.db")
    await migrate(database.engine)
    yield database
    await database.engine.dispose()


async def built(path: Path) -> TermIndex:
    index = TermIndex(str(path))
    index.start()
    await ready(index)
    return index


async def ready(index: TermIndex) -> None:
    for _ in range(500):
        if index.ready:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"index not ready: {index.stats()}")


async def top(
    index: TermIndex, namespace: str, query: str, limit: int = 10, *, coordinate: bool = True
) -> dict[str, float]:
    """The index's answer, waiting out a rebuild the change in SQL may have started."""
    for _ in range(500):
        found = await index.top(namespace, query_terms(query), limit, coordinate=coordinate)
        if found is not None:
            return found
        await asyncio.sleep(0.01)
    raise AssertionError("index never answered")


def same_ranking(got: dict[str, float], expected: list[tuple[str, float]]) -> None:
    assert len(got) == len(expected)
    for (gid, gscore), (eid, escore) in zip(got.items(), expected, strict=True):
        assert gscore == pytest.approx(escore, rel=1e-9)
        if gid != eid:  # equal scores may come in either order
            assert got.get(eid) == pytest.approx(escore, rel=1e-9)


async def test_ranks_as_fts5_bm25_does(db: Db) -> None:
    rng = random.Random(3)
    await db.insert([row("a", i, sentence(rng)) for i in range(600)])
    await db.insert([row("b", i, sentence(rng)) for i in range(300)])
    index = await built(db.path)
    try:
        for _ in range(60):
            query = " ".join(rng.sample(WORDS, rng.randint(1, 5)))
            if rng.random() < 0.3:
                query += " pools retried"  # two terms with one stem each
            terms = query_terms(query)
            for namespace in ("a", "b"):
                got = await index.top(namespace, terms, 25, coordinate=False)
                assert got is not None
                same_ranking(got, db.bm25(namespace, terms, 25))
        assert await index.top("nobody", ["pool"], 10) == {}
        assert await index.top("a", ["zzzunknown"], 10) == {}
    finally:
        index.close()


async def test_coordination_favours_memories_holding_more_of_the_query(db: Db) -> None:
    rng = random.Random(7)
    await db.insert([row("a", i, sentence(rng)) for i in range(300)])
    # BM25 alone ranks a short memory repeating the rarest word above the one memory
    # that holds every word of the query.
    await db.insert(
        [
            row("a", 900, "quokka quokka quokka quokka"),
            row(
                "a",
                901,
                "quokka pool connection retry cache " + " ".join(f"filler{i}" for i in range(60)),
            ),
        ]
    )
    index = await built(db.path)
    try:
        terms = query_terms("quokka pool connection retry cache")
        plain = await index.top("a", terms, 5, coordinate=False)
        assert plain is not None
        assert list(plain)[0] == "a-00900"
        coordinated = await index.top("a", terms, 5)
        assert coordinated is not None
        assert list(coordinated)[0] == "a-00901"
        # The factor is the share of query terms held: 1 of 5 for the repeated word.
        assert coordinated["a-00900"] == pytest.approx(plain["a-00900"] / 5)
        for mid, score in coordinated.items():
            assert score <= plain.get(mid, score) + 1e-12
    finally:
        index.close()


async def test_types_filter(db: Db) -> None:
    rng = random.Random(4)
    await db.insert([row("a", i, sentence(rng) + " pool") for i in range(80)])
    index = await built(db.path)
    try:
        found = await index.top("a", ["pool"], 100, types=["constraint"])
        assert found is not None
        assert found
        assert all(int(mid.split("-")[1]) % len(TYPES) == 2 for mid in found)
        assert len(found) == 20
        assert await index.top("a", ["pool"], 100, types=["skill"]) == {}
    finally:
        index.close()


def random_scope(rng: random.Random) -> dict[str, str]:
    scope: dict[str, str] = {}
    if rng.random() < 0.8:
        scope["level"] = rng.choice(["global", "session", "task"])
    for key in ("session_id", "user_id", "project_id"):
        if rng.random() < 0.4:
            scope[key] = rng.choice(["a", "b"])
    return scope


async def test_scope_filters(db: Db) -> None:
    """Only memories that apply to a request scope (`scope_compatible`), or whose scope
    holds the pairs asked for, take places, built or inserted after the build."""
    rng = random.Random(7)
    rows = [
        row("a", i, f"lantern {sentence(rng)}") | {"scope": random_scope(rng)} for i in range(300)
    ]
    rows.append(row("a", 300, "lantern") | {"scope": {"level": "task", "user_id": ["a"]}})
    rows.append(row("b", 301, "lantern") | {"scope": {"level": "global"}})
    await db.insert(rows[:150])
    index = await built(db.path)
    try:
        await db.insert(rows[150:])
        assert len(await top(index, "a", "lantern", 1000)) == 301
        ours = [r for r in rows if r["namespace"] == "a"]
        for _ in range(60):
            request, wanted = random_scope(rng), random_scope(rng)
            applies = {r["id"] for r in ours if scope_compatible(r["scope"], request)}
            holds = {
                r["id"] for r in ours if all(r["scope"].get(k) == v for k, v in wanted.items())
            }
            everything = await index.top("a", ["lantern"], 1000, applies_to=request)
            assert everything is not None
            assert set(everything) == applies
            found = await index.top("a", ["lantern"], 1000, scope=wanted, applies_to=request)
            assert found is not None
            assert set(found) == applies & holds
            # The limit is filled from the memories that pass, the best of them.
            best = await index.top("a", ["lantern"], 5, applies_to=request)
            assert best is not None
            assert list(best) == list(everything)[:5]
    finally:
        index.close()


async def test_follows_inserts_deletes_and_rewrites(db: Db) -> None:
    rng = random.Random(5)
    await db.insert([row("a", i, sentence(rng)) for i in range(50)])
    index = await built(db.path)
    try:
        # Inserted after the build.
        await db.insert([row("a", 100, "quokka habitat survey"), row("b", 101, "quokka")])
        assert list(await top(index, "a", "quokka")) == ["a-00100"]
        # Deleted: gone at once.
        await db.delete("a", "a-00100")
        assert await top(index, "a", "quokka") == {}
        assert list(await top(index, "b", "quokka")) == ["b-00101"]
        # FTS5 gives the next row the highest rowid + 1: deleting the newest row and
        # inserting another reuses its rowid, which the index must still read.
        await db.delete("b", "b-00101")
        await db.insert([row("a", 102, "wombat burrow")])
        assert list(await top(index, "a", "wombat")) == ["a-00102"]
        assert await top(index, "b", "quokka") == {}
        # The same id again, with other text.
        await db.delete("a", "a-00102")
        await db.insert([row("a", 102, "platypus river")])
        assert await top(index, "a", "wombat") == {}
        assert list(await top(index, "a", "platypus")) == ["a-00102"]
        # Content rewritten in place (no API does it; the index rebuilds).
        await db.sql(text("UPDATE memories SET content = 'echidna spines' WHERE id = 'a-00102'"))
        assert await top(index, "a", "platypus") == {}
        assert list(await top(index, "a", "echidna")) == ["a-00102"]
        # After all of it, the ranking is still FTS5's.
        terms = query_terms("pool connection retry")
        found = await top(index, "a", "pool connection retry", 30, coordinate=False)
        same_ranking(found, db.bm25("a", terms, 30))
    finally:
        index.close()


async def test_rebuilds_when_deletions_it_missed_were_pruned(db: Db) -> None:
    await db.insert([row("a", i, f"alpha note {i}") for i in range(10)])
    index = await built(db.path)
    try:
        await db.delete("a", "a-00003")
        await db.delete("a", "a-00004")
        # The log keeps its newest entries only: as if the first had been pruned.
        await db.sql(text("DELETE FROM memories_fts_deletions WHERE seq = 1"))
        assert await index.top("a", ["alpha"], 20) is None  # rebuilding
        found = await top(index, "a", "alpha", 20)
        assert len(found) == 8
        assert "a-00003" not in found
        assert "a-00004" not in found
        assert index.builds == 2
    finally:
        index.close()


async def test_many_deletions_rebuild_the_index_smaller(db: Db) -> None:
    await db.insert([row("a", i, f"beta entry {i}") for i in range(1200)])
    index = await built(db.path)
    try:
        await db.sql(text("DELETE FROM memories WHERE id < 'a-00600'"))
        found = await top(index, "a", "beta", 2000)
        assert len(found) == 600
        assert min(found) == "a-00600"
        await ready(index)
        assert index.builds == 2
        assert index.stats()["documents"] == 600
    finally:
        index.close()


async def test_search_finds_the_same_memories_with_and_without_the_index(
    settings: Settings,
) -> None:
    """Both paths find the same memories. The order may differ: the index also weighs
    how many of the query's terms a memory holds, FTS5's query does not."""
    from app.main import create_app

    rng = random.Random(6)
    markers = [f"marker{chr(97 + i)}{chr(97 + j)}" for i in range(6) for j in range(6)]
    bodies = [
        {"type": TYPES[i % 4], "content": f"{sentence(rng)} {rng.choice(markers)}"}
        for i in range(300)
    ]
    # Queries matching fewer memories than a page holds: each path returns all of them.
    queries = [" ".join(rng.sample(markers, 1)) for _ in range(20)]
    answers: list[list[list[str]]] = []
    for enabled in (True, False):
        recall = settings.recall.model_copy(update={"search_index": enabled})
        async with running(create_app(settings.model_copy(update={"recall": recall}))) as client:
            if not answers:
                for body in bodies:
                    assert (await client.post("/v1/memories", json=body)).status_code == 201
            if enabled:  # built at start, in the background
                for _ in range(500):
                    if (await client.get("/ready")).json()["search_index"]["state"] == "ready":
                        break
                    await asyncio.sleep(0.01)
            hits = []
            for q in queries:
                r = await client.post("/v1/memories/search", json={"query": q, "limit": 50})
                hits.append(sorted(h["memory"]["id"] for h in r.json()["hits"]))
            answers.append(hits)
            # The index catches up with SQL when it is asked; /ready tells what it holds.
            body = (await client.get("/ready")).json()
            if enabled:
                assert body["search_index"]["state"] == "ready"
                assert body["search_index"]["documents"] == 300
            else:
                assert "search_index" not in body
    assert answers[0] == answers[1]
    assert sum(len(a) for a in answers[0]) > 100


async def test_the_app_closes_its_index(settings: Settings) -> None:
    from app.main import create_app

    app = create_app(settings)
    async with running(app) as client:
        assert (await client.get("/ready")).json()["search_index"]["state"] in (
            "building",
            "ready",
        )
        index = app.state.engram.search.lexical.index
        assert index is not None
        assert index.stats()["state"] != "closed"
    assert index.stats()["state"] == "closed"


async def test_the_index_never_writes_to_the_database(db: Db) -> None:
    await db.insert([row("a", 1, "gamma ray")])
    await db.engine.dispose()
    before = db.path.stat().st_mtime_ns
    index = await built(db.path)
    try:
        assert list(await top(index, "a", "gamma")) == ["a-00001"]
    finally:
        index.close()
    assert db.path.stat().st_mtime_ns == before


async def test_many_new_rows_are_read_between_queries_and_fts5_answers_meanwhile(
    db: Db, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.search import index as index_module
    from app.search import loading

    await db.insert([row("a", i, f"kiwi note {i}") for i in range(20)])
    index = await built(db.path)
    try:
        monkeypatch.setattr(loading, "INGEST", 10)  # rows read per chunk
        monkeypatch.setattr(index_module, "INLINE_CHUNKS", 2)
        await db.insert([row("a", 100 + i, f"kiwi entry {i}") for i in range(15)])
        assert len(await top(index, "a", "kiwi", 100)) == 35  # two chunks: read at once
        await db.insert([row("a", 200 + i, f"kiwi batch {i}") for i in range(200)])
        # More than two chunks behind: the query does not wait for them.
        assert await index.top("a", ["kiwi"], 500) is None
        assert index.stats()["state"] in ("catching up", "ready")
        found = await top(index, "a", "kiwi", 500)
        assert len(found) == 235
        assert index.stats()["state"] == "ready"
        assert index.builds == 1  # caught up, not rebuilt
    finally:
        index.close()
