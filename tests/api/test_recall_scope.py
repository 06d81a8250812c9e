"""Scoped recall and search on a namespace shared by many scopes: the scope is applied
inside the search, so a scope gets its own best matches even when other scopes hold
better ones (in-memory index and FTS5 on SQLite, tsvector on PostgreSQL)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from app.core.config import Settings
from app.learning.features import scope_compatible
from app.main import create_app
from app.repositories.memories import MemoryRepository, MemoryUsageRepository
from app.schemas.filters import MemoryFilters
from app.services.memories.rows import new_memory
from tests.conftest import running

WORDS = (
    "cache rollback canary schema vacuum replica token budget latency alert snapshot "
    "planner writer reader migration index pool retry timeout backup"
).split()
PER_SCOPE = 300
CONSTRAINTS_PER_SCOPE = 5
GLOBALS = 3
TOTAL = 20 * (PER_SCOPE + CONSTRAINTS_PER_SCOPE) + 2 * GLOBALS


def scopes() -> list[dict[str, str]]:
    """20 scopes: ten conversations, five users, and five projects of those users (a
    user's request without the project must not get the project's memories)."""
    found = [{"level": "session", "session_id": f"conv-{i}"} for i in range(10)]
    found += [{"level": "task", "user_id": f"user-{i}"} for i in range(5)]
    found += [
        {"level": "task", "user_id": f"user-{i}", "project_id": f"proj-{i}"} for i in range(5)
    ]
    return found


def request_scope(scope: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in scope.items() if k != "level"}


def rows() -> list[dict[str, Any]]:
    rng = random.Random(19)
    now = datetime.now(UTC)
    out = []

    def add(i: int, content: str, type_: str, scope: dict[str, str], criticality: float) -> None:
        memory = new_memory(
            "default",
            f"m{i:05d}",
            content=content,
            confidence=0.8,
            sensitivity="low",
            criticality=criticality,
            source_refs=[],
            metadata={},
            now=now,
        )
        out.append(memory | {"type": type_, "scope": scope})

    for s, scope in enumerate(scopes()):
        for _ in range(PER_SCOPE):
            words = " ".join(rng.choice(WORDS) for _ in range(8))
            add(len(out), f"deploy checklist {words}", "fact", scope, 0.5)
        for j in range(CONSTRAINTS_PER_SCOPE):
            # Later scopes' constraints are more critical: the namespace's most critical
            # ones all belong to the last scopes.
            text = f"never force push to the main branch of service {s} rule {j}"
            add(len(out), text, "constraint", scope, 0.7 + s / 100)
    for j in range(GLOBALS):
        add(len(out), f"deploy checklist global note {j}", "fact", {"level": "global"}, 0.5)
        add(len(out), f"never skip code review rule {j}", "constraint", {"level": "global"}, 0.7)
    return out


async def load(app: FastAPI, memories: list[dict[str, Any]]) -> None:
    async with app.state.engram.transactions.write() as session:
        await MemoryRepository(session).insert_many(memories)
        await session.commit()


@pytest.fixture(params=["default", "fts5"])
async def engram(
    request: pytest.FixtureRequest, settings: Settings, backend: str
) -> AsyncIterator[tuple[FastAPI, httpx.AsyncClient]]:
    """The app with its default search (the in-memory index on SQLite, tsvector on
    PostgreSQL), or with FTS5's query (SQLite without the index)."""
    if request.param == "fts5" and backend == "postgresql":
        pytest.skip("FTS5 is SQLite's and libSQL's")
    # epsilon 0: what each scope is given, not what exploration leaves out.
    recall = settings.recall.model_copy(
        update={"search_index": request.param == "default", "epsilon": 0.0}
    )
    app = create_app(settings.model_copy(update={"recall": recall}))
    async with running(app) as client:
        if "search_index" in (await client.get("/ready")).json():
            # Built at start in the background; it then catches up with SQL when asked.
            for _ in range(1000):
                if (await client.get("/ready")).json()["search_index"]["state"] == "ready":
                    break
                await asyncio.sleep(0.01)
        yield app, client


@pytest.fixture
async def scoped_client(
    engram: tuple[FastAPI, httpx.AsyncClient],
) -> AsyncIterator[httpx.AsyncClient]:
    app, client = engram
    await load(app, rows())
    yield client
    body = (await client.get("/ready")).json()
    if "search_index" in body:  # the index answered (it read every memory)
        assert body["search_index"]["documents"] == TOTAL


async def recall(
    client: httpx.AsyncClient, task: str, scope: dict[str, str], **extra: Any
) -> list[dict[str, Any]]:
    body = {"task": task, "scope": scope, "token_budget": 100_000, "k": 10} | extra
    r = await client.post("/v1/recall", json=body)
    assert r.status_code == 200, r.text
    selected: list[dict[str, Any]] = r.json()["selected"]
    return selected


async def test_each_scope_recalls_k_memories_of_its_own(scoped_client: httpx.AsyncClient) -> None:
    for scope in scopes():
        wanted = request_scope(scope)
        task = "deploy checklist cache rollback canary"
        got = [m["scope"] for m in await recall(scoped_client, task, wanted, types=["fact"])]
        assert len(got) == 10, (wanted, got)
        assert all(scope_compatible(m, wanted) for m in got), (wanted, got)
        assert sum(m != {"level": "global"} for m in got) >= 10 - GLOBALS, (wanted, got)


async def test_each_scope_recalls_its_constraints(scoped_client: httpx.AsyncClient) -> None:
    for s, scope in enumerate(scopes()):
        wanted = request_scope(scope)
        got = await recall(scoped_client, "quokka", wanted)  # no text match: constraints only
        found = [m["scope"] for m in got]
        assert all(m["mode"] == "constraint" for m in got)
        assert all(scope_compatible(m, wanted) for m in found), (wanted, found)
        assert found.count(scope) == CONSTRAINTS_PER_SCOPE, (wanted, found)
        # A project's request also fits its user's constraints (k caps it).
        assert len(found) == (10 if s >= 15 else CONSTRAINTS_PER_SCOPE + GLOBALS), found


async def test_search_with_a_scope_filter_finds_limit_hits_of_that_scope(
    scoped_client: httpx.AsyncClient,
) -> None:
    for scope in scopes():
        wanted = request_scope(scope)
        body = {"query": "deploy checklist cache rollback canary", "scope": wanted, "limit": 10}
        r = await scoped_client.post("/v1/memories/search", json=body)
        assert r.status_code == 200, r.text
        hits = [h["memory"]["scope"] for h in r.json()["hits"]]
        assert len(hits) == 10, (wanted, hits)
        assert all(all(h.get(k) == v for k, v in wanted.items()) for h in hits), (wanted, hits)


def random_scope(rng: random.Random) -> dict[str, str]:
    scope: dict[str, str] = {}
    if rng.random() < 0.8:
        scope["level"] = rng.choice(["global", "session", "task"])
    for key in ("session_id", "user_id", "project_id"):
        if rng.random() < 0.4:
            scope[key] = rng.choice(["a", "b"])
    return scope


async def test_the_searches_filter_as_scope_compatible_does(
    engram: tuple[FastAPI, httpx.AsyncClient],
) -> None:
    """Every engine's scope filter (SQL or index) keeps exactly the memories that
    `scope_compatible` keeps, and those whose scope holds the pairs asked for."""
    app, _ = engram
    rng = random.Random(3)
    now = datetime.now(UTC)
    memories = [
        new_memory(
            "default",
            f"r{i:03d}",
            content=f"lantern {rng.choice(WORDS)}",
            confidence=0.8,
            sensitivity="low",
            criticality=0.8,
            source_refs=[],
            metadata={},
            now=now,
        )
        | {"type": rng.choice(["fact", "constraint"]), "scope": random_scope(rng)}
        for i in range(200)
    ]
    await load(app, memories)
    for _ in range(30):
        request, wanted = random_scope(rng), random_scope(rng)
        applies = {m["id"] for m in memories if scope_compatible(m["scope"], request)}
        holds = {
            m["id"] for m in memories if all(m["scope"].get(k) == v for k, v in wanted.items())
        }
        constraints = {m["id"] for m in memories if m["type"] == "constraint"}
        async with app.state.engram.transactions.read_sessions() as session:
            repo = MemoryRepository(session)
            for filters, expected in (
                (MemoryFilters(applies_to=request), applies),
                (MemoryFilters(scope=wanted or None, applies_to=request), applies & holds),
                (MemoryFilters(types=["constraint"], applies_to=request), applies & constraints),
            ):
                search = app.state.engram.search
                found = await search.rank(
                    session, "default", "lantern", filters, now=now, limit=500
                )
                assert {h.memory.id for h in found.hits} == expected, (request, wanted)
                listed = await repo.list("default", filters, now=now, after=None, limit=500)
                assert {m.id for m in listed} == expected, (request, wanted)
            usage = MemoryUsageRepository(session)
            found = await usage.top_constraints("default", now=now, limit=500, applies_to=request)
            assert {m.id for m in found} == applies & constraints, request
    body = (await engram[1].get("/ready")).json()
    if "search_index" in body:  # the index answered (it read every memory)
        assert body["search_index"]["documents"] == len(memories)
