"""Searching for what lexical search splits or misses, as a user would: `C++` against
`C#`, `.NET`, `node.js`, file paths, error codes, identifiers, prefixes (`mig*`), and
synonyms (`automobile` finds `car`), through /v1/memories/search and /v1/recall, with the
in-memory index and with FTS5's query on SQLite, and on PostgreSQL and libSQL."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from alembic import command
from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

from app.core.config import Settings
from app.db.backends import create_engine
from app.db.migrate import alembic_config, migrate
from app.main import create_app
from tests.conftest import running

MEMORIES = {
    "cpp": "Build the physics engine in C++ with CMake and clang.",
    "csharp": "The billing service is written in C# on .NET 8.",
    "c": "Legacy serial drivers are written in C.",
    "fsharp": "F# scripts generate the quarterly reports.",
    "node": "The API gateway runs on node.js 20 behind nginx.",
    "graph": "Each node of the dependency graph has a handle.",
    "aspnet": "Our admin portal uses ASP.NET Core with Razor pages.",
    "path": "The entry point is src/app/main.py, which builds the app.",
    "folder": "The main app lives in the src folder of the repository.",
    "esm": "Imports fail with ERR_MODULE_NOT_FOUND when the loader path is wrong.",
    "cache": "The module was not found in the cache, so it was fetched again.",
    "rust": "Rust error E0425: cannot find value in this scope.",
    "windows": "Windows returns 0x80070005 (access denied) for the network share.",
    "xz": "Patch CVE-2024-3094 in xz before the next release.",
    "rename": "Rename the variable to snake_case_name in the config loader.",
    "migrate": "We migrate the schema every night.",
    "migration": "The migration of the orders table failed halfway.",
    "migrating": "Migrating users to the new plan takes an hour.",
    "magic": "Magic numbers belong in named constants.",
    "car": "The car would not start in the cold this morning.",
    "automobile": "An automobile insurance quote arrived by mail.",
    "k8s": "The Kubernetes cluster upgrade is scheduled for Tuesday.",
    "database": "The database keeps thirty days of point-in-time backups.",
    "run": "We run the backups at two in the morning.",
    "child": "Each child process inherits the parent's environment.",
}


@pytest.fixture(params=["default", "fts5"])
async def engram(
    request: pytest.FixtureRequest, settings: Settings, backend: str
) -> AsyncIterator[tuple[httpx.AsyncClient, dict[str, str]]]:
    """The app with its default search (the in-memory index on a SQLite file, tsvector on
    PostgreSQL, FTS5's query on libSQL) or FTS5's query, holding MEMORIES: the client
    and each memory's id by name (a test adds those it writes)."""
    if request.param == "fts5" and backend != "sqlite":
        pytest.skip("the default search of this database is the only one")
    recall = settings.recall.model_copy(
        update={"search_index": request.param == "default", "epsilon": 0.0}
    )
    async with running(create_app(settings.model_copy(update={"recall": recall}))) as client:
        ids = {}
        for name, content in MEMORIES.items():
            r = await client.post("/v1/memories", json={"type": "fact", "content": content})
            assert r.status_code == 201, r.text
            ids[name] = r.json()["id"]
        await _index_ready(client)
        yield client, ids
        body = (await client.get("/ready")).json()
        if "search_index" in body:  # the index answered, holding every memory
            assert body["search_index"]["documents"] == len(ids)


async def _index_ready(client: httpx.AsyncClient) -> None:
    if "search_index" not in (await client.get("/ready")).json():
        return
    for _ in range(1000):
        if (await client.get("/ready")).json()["search_index"]["state"] == "ready":
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the search index was never built")


async def search(client: httpx.AsyncClient, query: str) -> dict[str, Any]:
    r = await client.post("/v1/memories/search", json={"query": query, "limit": 10})
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


async def found(client: httpx.AsyncClient, ids: dict[str, str], query: str) -> list[str]:
    """The names of the memories a search finds, best first."""
    names = {mid: name for name, mid in ids.items()}
    return [names[h["memory"]["id"]] for h in (await search(client, query))["hits"]]


async def test_languages_with_symbols_are_told_apart(
    engram: tuple[httpx.AsyncClient, dict[str, str]],
) -> None:
    client, ids = engram
    assert await found(client, ids, "C++") == ["cpp"]
    assert await found(client, ids, "C#") == ["csharp"]
    assert await found(client, ids, "F#") == ["fsharp"]
    assert await found(client, ids, ".NET") == ["csharp"]
    assert await found(client, ids, "ASP.NET") == ["aspnet"]
    assert await found(client, ids, "node.js") == ["node"]
    # One letter is no search term: "C" finds nothing, not every memory saying C++ or C#.
    assert (await search(client, "C"))["query_terms"] == []
    assert await found(client, ids, "C") == []
    assert (await search(client, "is C++ faster than C#?"))["query_terms"] == [
        "c++",
        "faster",
        "c#",
    ]
    assert set(await found(client, ids, "is C++ faster than C#?")) == {"cpp", "csharp"}


async def test_paths_codes_and_identifiers_find_the_memory_holding_them(
    engram: tuple[httpx.AsyncClient, dict[str, str]],
) -> None:
    client, ids = engram
    for query, name in [
        ("src/app/main.py", "path"),
        ("main.py", "path"),
        ("ERR_MODULE_NOT_FOUND", "esm"),
        ("E0425", "rust"),
        ("0x80070005", "windows"),
        ("CVE-2024-3094", "xz"),
        ("snake_case_name", "rename"),
    ]:
        result = await search(client, query)
        assert result["query_terms"] == [query.lower()]
        hits = result["hits"]
        assert hits, query
        assert hits[0]["memory"]["id"] == ids[name], query
        # Its own token ranks it first by a margin: memories holding only a part of it
        # ("main", "app", "module", "found") come after, if at all.
        if len(hits) > 1:
            assert hits[1]["parts"]["text"] < 0.6 * hits[0]["parts"]["text"], query
    others = await found(client, ids, "src/app/main.py")
    assert others[0] == "path"
    assert "folder" in others  # the path's words still count, as before


async def test_prefixes_match_every_word_they_start(
    engram: tuple[httpx.AsyncClient, dict[str, str]],
) -> None:
    client, ids = engram
    result = await search(client, "mig*")
    assert result["query_terms"] == ["mig*"]
    assert set(await found(client, ids, "mig*")) == {"migrate", "migration", "migrating"}
    assert set(await found(client, ids, "migration*")) == {"migrate", "migration", "migrating"}
    assert set(await found(client, ids, "orders mig*")) == {"migrate", "migration", "migrating"}
    assert (await found(client, ids, "orders mig*"))[0] == "migration"
    # A word written after the index was built joins the words a prefix stands for.
    r = await client.post("/v1/memories", json={"type": "fact", "content": "Migratory birds."})
    assert r.status_code == 201, r.text
    ids["birds"] = r.json()["id"]
    assert "birds" in await found(client, ids, "mig*")
    # Without the star, "mig" is a word no memory holds.
    assert await found(client, ids, "mig") == []
    # A bare star or a one-letter prefix would match most memories: they are ignored.
    for query in ("*", "m*"):
        result = await search(client, query)
        assert result["query_terms"] == []
        assert result["hits"] == []


async def test_synonyms_find_the_same_thing_below_the_word_asked_for(
    engram: tuple[httpx.AsyncClient, dict[str, str]],
) -> None:
    client, ids = engram
    assert await found(client, ids, "automobile") == ["automobile", "car"]
    assert await found(client, ids, "car") == ["car", "automobile"]
    assert await found(client, ids, "k8s") == ["k8s"]
    assert (await found(client, ids, "db backups"))[:2] == ["database", "run"]
    assert set(await found(client, ids, "ran")) == {"run", "node"}  # "run", "runs"
    assert await found(client, ids, "children") == ["child"]


async def test_ordinary_words_keep_their_stems(
    engram: tuple[httpx.AsyncClient, dict[str, str]],
) -> None:
    client, ids = engram
    assert set(await found(client, ids, "migrations")) == {"migrate", "migration", "migrating"}
    result = await search(client, "Which backups run at night?")
    assert result["query_terms"] == ["backups", "run", "night"]
    assert (await found(client, ids, "Which backups run at night?"))[0] == "run"


async def test_recall_chooses_by_the_same_tokens(
    engram: tuple[httpx.AsyncClient, dict[str, str]],
) -> None:
    client, ids = engram
    for task, wanted, unwanted in [
        ("fix the C++ build", "cpp", {"csharp", "c", "fsharp"}),
        ("why does src/app/main.py crash", "path", set()),
        ("automobile paperwork", "automobile", set()),
    ]:
        r = await client.post("/v1/recall", json={"task": task, "token_budget": 2000, "k": 10})
        assert r.status_code == 200, r.text
        chosen = [m["memory_id"] for m in r.json()["selected"]]
        assert chosen[0] == ids[wanted], task
        assert not {ids[n] for n in unwanted} & set(chosen), task


async def test_upgrade_indexes_the_tokens_of_memories_written_before(settings: Settings) -> None:
    """A memory stored before search terms existed is found by them after the upgrade
    (and a downgrade leaves a database the previous version searches)."""
    engine = create_engine(settings)
    try:
        await migrate(engine)
        await _downgrade(engine, "7b4d2e9a1c60")
        async with engine.begin() as conn:
            now = (
                "'2026-12-01 10:00:00.000000'"
                if conn.dialect.name == "sqlite"
                else "'2026-12-01 10:00:00+00'"
            )
            await conn.execute(
                text(
                    "INSERT INTO memories (namespace, id, type, scope, content, status, "
                    "confidence, sensitivity, criticality, source_refs, metadata, version, "
                    "token_estimate, use_count, reward_count, reward_sum, created_at, "
                    "updated_at) VALUES ('default', :id, 'fact', '{\"level\": \"global\"}', "
                    ":content, 'active', 0.5, 'low', 0.5, '[]', '{}', 1, 10, 0, 0, 0.0, "
                    f"{now}, {now})"
                ),
                [
                    {"id": "old-cpp", "content": MEMORIES["cpp"]},
                    {"id": "old-c", "content": MEMORIES["c"]},
                ],
            )
        await migrate(engine)
    finally:
        await engine.dispose()
    async with running(create_app(settings)) as client:
        await _index_ready(client)
        result = await search(client, "C++")
        assert [h["memory"]["id"] for h in result["hits"]] == ["old-cpp"]
        result = await search(client, "drivers")
        assert [h["memory"]["id"] for h in result["hits"]] == ["old-c"]


async def _downgrade(engine: AsyncEngine, revision: str) -> None:
    cfg = alembic_config()

    def run(connection: Connection) -> None:
        cfg.attributes["connection"] = connection
        command.downgrade(cfg, revision)

    async with engine.connect() as conn:
        await conn.run_sync(run)
        await conn.commit()
