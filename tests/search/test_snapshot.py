"""The in-memory search index saved beside the database and read back at start: the same
answers as a build from SQL, what changed while it was stopped caught up, and a file that
does not describe the database (another database, a pruned log, another schema, damage)
never used. Real database files, real index threads."""

from __future__ import annotations

import random
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from app.core.config import Settings
from app.db import probe
from app.search import saver, snapshot
from app.search.index import TermIndex
from app.search.snapshot import path_for
from tests.conftest import DB_URL, running
from tests.search.test_term_index import Db, db, ready, row, same_ranking, sentence, top

pytestmark = [
    pytest.mark.usefixtures("saved_small"),
    pytest.mark.skipif(DB_URL is not None, reason="SQLite's index"),
]
__all__ = ["db"]  # the fixture, imported for these tests

QUERIES = ["pool connection", "retry timeout cache", "deploy release rollback", "agent"]


@pytest.fixture
def saved_small(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every index is saved, however small; while serving, at the first change."""
    monkeypatch.setattr(saver, "SAVE_MIN_SLOTS", 1)
    monkeypatch.setattr(saver, "SAVE_EVERY_S", 0.0)
    return


async def started(db: Db) -> TermIndex:
    index = TermIndex(str(db.path), saved=path_for(str(db.path)))
    index.start()
    await ready(index)
    return index


async def answers(index: TermIndex, namespace: str = "a") -> list[dict[str, float]]:
    return [await top(index, namespace, q, 30) for q in QUERIES]


def scoped(namespace: str, i: int, content: str) -> dict[str, object]:
    return row(namespace, i, content) | {"scope": {"level": "project", "project": f"p{i % 3}"}}


async def test_a_restart_reads_the_saved_index_and_catches_up(db: Db) -> None:
    rng = random.Random(11)
    await db.insert([scoped("a", i, sentence(rng)) for i in range(300)])
    await db.insert([row("b", i, sentence(rng)) for i in range(50)])
    first = await started(db)
    assert not first.stats()["from_file"]
    await db.delete("a", "a-00007")
    before = await answers(first)
    first.close()  # saves what changed since the build's save
    assert path_for(str(db.path)).exists()

    second = await started(db)
    try:
        assert second.stats()["from_file"]
        assert second.stats()["documents"] == 349
        assert await answers(second) == before
        found = await second.top(
            "a", ["pool"], 50, scope={"project": "p1"}, applies_to={"project": "p1"}
        )
        assert found
        assert all(int(mid[-5:]) % 3 == 1 for mid in found)
    finally:
        second.close()

    # Changed while no index ran: new rows, deletions, a rowid handed out again.
    await db.insert([row("a", 400, "quokka habitat survey")])
    await db.delete("a", "a-00010")
    await db.delete("a", "a-00400")
    await db.insert([row("a", 401, "wombat burrow")])
    third = await started(db)
    try:
        assert third.stats()["from_file"]
        assert list(await top(third, "a", "wombat")) == ["a-00401"]
        assert await top(third, "a", "quokka") == {}
        fresh = TermIndex(str(db.path))  # built from SQL
        fresh.start()
        await ready(fresh)
        try:
            assert await answers(third) == await answers(fresh)
            assert await answers(third, "b") == await answers(fresh, "b")
        finally:
            fresh.close()
        terms = ["pool", "connection", "retry"]
        same_ranking(
            await third.top("a", terms, 30, coordinate=False) or {}, db.bm25("a", terms, 30)
        )
    finally:
        third.close()


async def test_a_file_that_does_not_describe_the_database_is_not_used(
    db: Db, tmp_path: Path
) -> None:
    rng = random.Random(12)
    await db.insert([row("a", i, sentence(rng)) for i in range(100)])
    (await started(db)).close()
    saved = path_for(str(db.path))

    # Another database, its own rows: the first one's file copied beside it.
    other = Db(tmp_path / "other.db")
    from app.db.migrate import migrate

    await migrate(other.engine)
    await other.insert([row("a", i, f"platypus {i}") for i in range(100)])
    shutil.copy(saved, path_for(str(other.path)))
    index = await started(other)
    try:
        assert not index.stats()["from_file"]
        assert len(await top(index, "a", "platypus", 200)) == 100
    finally:
        index.close()
    await other.engine.dispose()

    # Deletions it would need were pruned from the log since it was saved.
    shutil.copy(saved, tmp_path / "kept.bm25")
    await db.delete("a", "a-00001")
    await db.delete("a", "a-00002")
    # The log keeps its newest entries only: as if the first had been pruned.
    await db.sql(text("DELETE FROM memories_fts_deletions WHERE seq = 1"))
    shutil.copy(tmp_path / "kept.bm25", saved)
    index = await started(db)
    try:
        assert not index.stats()["from_file"]
        found = await top(index, "a", "pool connection agent memory", 200)
        assert "a-00001" not in found
        assert "a-00002" not in found
    finally:
        index.close()

    # Another schema than the one it was saved under.
    mark, header = snapshot.read_mark(saved, tokenizer=probe.FTS_TOKENIZER) or (None, {})
    assert mark is not None
    await db.sql(text("UPDATE alembic_version SET version_num = 'elsewhere'"))
    try:
        index = await started(db)
        assert not index.stats()["from_file"]
        index.close()
    finally:
        await db.sql(text("UPDATE alembic_version SET version_num = :v"), {"v": mark.revision})


@pytest.mark.parametrize("damage", ["flipped", "cut", "empty", "foreign"])
async def test_a_damaged_file_is_built_again_from_sql(db: Db, damage: str) -> None:
    rng = random.Random(13)
    await db.insert([row("a", i, sentence(rng)) for i in range(200)])
    first = await started(db)
    before = await answers(first)
    first.close()
    saved = path_for(str(db.path))
    body = bytearray(saved.read_bytes())
    if damage == "flipped":
        body[len(snapshot.MAGIC) + 100] ^= 0x40  # inside the first section
    elif damage == "cut":
        body = body[: len(body) // 2]
    elif damage == "empty":
        body = bytearray()
    else:
        body = bytearray(b"SQLite format 3\x00" + bytes(4096))
    saved.write_bytes(bytes(body))
    index = await started(db)
    try:
        assert not index.stats()["from_file"]
        assert await answers(index) == before
    finally:
        index.close()
    # Built again, it was saved again: the next start reads it.
    index = await started(db)
    try:
        assert index.stats()["from_file"]
    finally:
        index.close()


async def test_it_is_saved_while_serving_once_enough_changed(db: Db) -> None:
    rng = random.Random(14)
    await db.insert([row("a", i, sentence(rng)) for i in range(100)])
    index = await started(db)
    saved = path_for(str(db.path))
    try:
        await top(index, "a", "pool")  # queued after the save that follows the build
        mark = snapshot.read_mark(saved, tokenizer=probe.FTS_TOKENIZER)
        assert mark is not None
        assert mark[1]["live"] == 100
        await db.insert([row("a", 100 + i, f"numbat {i}") for i in range(20)])
        assert len(await top(index, "a", "numbat")) == 10
        await top(index, "a", "numbat")  # the save queued after the first answer is done
        mark = snapshot.read_mark(saved, tokenizer=probe.FTS_TOKENIZER)
        assert mark is not None
        assert mark[1]["live"] == 120
    finally:
        index.close()


async def test_the_app_serves_the_same_answers_after_a_restart(settings: Settings) -> None:
    from app.main import create_app

    rng = random.Random(15)
    bodies = [{"type": "fact", "content": sentence(rng)} for _ in range(120)]
    seen: list[list[list[str]]] = []
    for run in range(2):
        app = create_app(settings)
        async with running(app) as client:
            if run == 0:
                for body in bodies:
                    assert (await client.post("/v1/memories", json=body)).status_code == 201
            index = app.state.engram.search.lexical.index
            assert index is not None
            await ready(index)
            assert index.stats()["from_file"] == (run == 1)
            hits = []
            for q in QUERIES:
                r = await client.post("/v1/memories/search", json={"query": q, "limit": 20})
                hits.append([h["memory"]["id"] for h in r.json()["hits"]])
            seen.append(hits)
    assert seen[0] == seen[1]
    assert sum(len(h) for h in seen[0]) > 20
