"""Semantic search through the app: memories embedded in the background by the local model,
found by meaning (dense), fused with BM25 (hybrid), the parts logged with each recall; the
vector index rebuilt from SQL; what happens without an embedder or before the backlog is
done. SQLite by default, PostgreSQL and libSQL with ENGRAM_TEST_DATABASE_URL."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson
import pytest
from fastapi import FastAPI

from app.core.config import Embeddings, Settings
from app.embeddings import start_embedder
from app.worker.embeddings import Backlog
from tests.conftest import running
from tests.embeddings.openai_standin import DEFAULT_DIM, StandIn
from tests.embeddings.test_local import MISSING

# The local model's files (its tokenizer comes without pip's help): CI installs them.
pytestmark = pytest.mark.skipif(MISSING is not None, reason=f"local embedder: {MISSING}")

MEMORIES = {
    "car": "The car would not start this morning because the battery was flat.",
    "bread": "Baked a sourdough loaf; the starter needs feeding twice a day.",
    "deploy": "Deploy the API with the blue-green script, never by hand.",
    "cat": "The cat hides under the bed when the vacuum cleaner runs.",
}


@pytest.fixture
def local(settings: Settings) -> Settings:
    return settings.model_copy(update={"embeddings": Embeddings(provider="local")})


async def write(client: httpx.AsyncClient) -> dict[str, str]:
    ids = {}
    for name, content in MEMORIES.items():
        r = await client.post(
            "/v1/memories", json={"type": "fact", "content": content, "scope": {"level": "global"}}
        )
        assert r.status_code == 201, r.text
        ids[name] = r.json()["id"]
    return ids


async def embedded(client: httpx.AsyncClient) -> dict[str, Any]:
    """/ready's embeddings once nothing waits and the index holds every vector (a search
    lets the index catch up with vectors another process stored)."""
    for _ in range(600):
        await client.post("/v1/memories/search", json={"query": "catch up", "mode": "dense"})
        body = (await client.get("/ready")).json()["search"]["embeddings"]
        if body["pending"] == 0 and body["index"]["vectors"] >= len(MEMORIES):
            return body
        await asyncio.sleep(0.05)
    raise AssertionError(f"the backlog did not drain: {body}")


async def search(client: httpx.AsyncClient, query: str, mode: str | None) -> dict[str, Any]:
    body: dict[str, Any] = {"query": query, "limit": 4}
    if mode is not None:
        body["mode"] = mode
    r = await client.post("/v1/memories/search", json=body)
    assert r.status_code == 200, r.text
    return dict(r.json())


@pytest.fixture
async def hybrid_app(local: Settings) -> AsyncIterator[FastAPI]:
    from app.main import create_app

    application = create_app(local)
    async with application.router.lifespan_context(application):
        yield application


@pytest.fixture
async def client(hybrid_app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=hybrid_app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as c:
        yield c


async def test_meaning_is_found_where_words_are_not(client: httpx.AsyncClient) -> None:
    ids = await write(client)
    status = await embedded(client)
    assert status["model"].startswith("local:")
    assert status["dim"] == 384
    # No word of the query is in the memory: BM25 cannot find it, the vectors do.
    lexical = await search(client, "my sedan refused to crank", "lexical")
    assert ids["car"] not in [h["memory"]["id"] for h in lexical["hits"]]
    dense = await search(client, "my sedan refused to crank", "dense")
    assert dense["hits"][0]["memory"]["id"] == ids["car"]
    assert dense["hits"][0]["retrieval"]["dense_rank"] == 1
    assert dense["hits"][0]["retrieval"]["lexical"] is None
    hybrid = await search(client, "my sedan refused to crank", None)  # the default
    assert hybrid["mode"] == "hybrid"
    assert hybrid["hits"][0]["memory"]["id"] == ids["car"]
    assert hybrid["missing_vectors"] == 0
    # A word match keeps its place: both rankings agree, and the fused score says so.
    both = await search(client, "sourdough starter", "hybrid")
    top = both["hits"][0]
    assert top["memory"]["id"] == ids["bread"]
    assert top["retrieval"]["lexical_rank"] == 1
    assert top["retrieval"]["dense_rank"] == 1
    assert top["retrieval"]["fused"] == pytest.approx((1 + 0.8) / 11)  # k 10, dense weight 0.8


async def test_recall_logs_each_candidates_retrieval_parts(
    client: httpx.AsyncClient, hybrid_app: FastAPI
) -> None:
    ids = await write(client)
    await embedded(client)
    r = await client.post(
        "/v1/recall", json={"task": "my sedan refused to crank", "token_budget": 500, "k": 3}
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["retrieval"] == {"mode": "hybrid", "missing_vectors": 0}
    assert ids["car"] in [m["memory_id"] for m in body["selected"]]
    from app.repositories.transitions import TransitionRepository

    async with hybrid_app.state.engram.transactions.read() as session:
        row = await TransitionRepository(session).get("default", body["recall_id"])
    assert row is not None
    assert row.state["retrieval"] == {"mode": "hybrid", "missing_vectors": 0}
    car = next(c for c in row.state["candidates"] if c["memory_id"] == ids["car"])
    assert car["retrieval"]["dense_rank"] == 1
    assert car["retrieval"]["dense"] > 0.3
    assert set(car["retrieval"]) == {"lexical", "lexical_rank", "dense", "dense_rank", "fused"}
    # Rewarded, it is in the dataset: one row per candidate, with how it was found.
    reward = {"recall_id": body["recall_id"], "value": 1.0}
    assert (await client.post("/v1/rewards", json=reward)).status_code == 201
    r = await client.get("/v1/rl/dataset", params={"table": "candidates"})
    rows = [orjson.loads(line) for line in r.text.splitlines()]
    row = next(x for x in rows if x["memory_id"] == ids["car"])
    assert row["retrieval_dense_rank"] == 1
    assert row["retrieval_dense"] == pytest.approx(car["retrieval"]["dense"])
    assert row["retrieval_fused"] == pytest.approx(car["retrieval"]["fused"])


async def test_dense_without_an_embedder_is_a_clear_422(client_lexical: httpx.AsyncClient) -> None:
    r = await client_lexical.post("/v1/memories/search", json={"query": "car", "mode": "dense"})
    assert r.status_code == 422
    assert r.json()["field"] == "mode"
    assert "ENGRAM_EMBEDDINGS__PROVIDER" in r.json()["detail"]
    ready = (await client_lexical.get("/ready")).json()
    assert ready["search"] == {"mode": "lexical"}


@pytest.fixture
async def client_lexical(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    from app.main import create_app

    async with running(create_app(settings)) as c:
        yield c


async def test_memories_not_embedded_yet_are_counted_then_found(local: Settings) -> None:
    """With the worker (and so the backlog) in another process, the API embeds queries
    only: new memories wait, recall says so, and they are found once the backlog runs."""
    from app.main import create_app

    detached = local.model_copy(
        update={"learning": local.learning.model_copy(update={"worker": False})}
    )
    application = create_app(detached)
    async with running(application) as client:
        ids = await write(client)
        ready = (await client.get("/ready")).json()["search"]["embeddings"]
        assert ready["pending"] == len(MEMORIES)
        found = await search(client, "car battery", "hybrid")
        assert found["hits"][0]["memory"]["id"] == ids["car"]  # BM25 still finds it
        assert found["missing_vectors"] == 1
        # `engram worker`'s backlog, here in the test's process, on the same database.
        state = application.state.engram
        embedder = await start_embedder(detached.embeddings)
        assert embedder is not None
        try:
            backlog = Backlog(
                embedder, state.transactions, settings=detached.embeddings, learning=local.learning
            )
            assert await backlog.drain() == len(MEMORIES)
        finally:
            await embedder.close()
        await embedded(client)
        found = await search(client, "my sedan refused to crank", "hybrid")
        assert found["hits"][0]["memory"]["id"] == ids["car"]
        assert found["missing_vectors"] == 0


async def test_the_vector_index_is_rebuilt_from_sql(local: Settings) -> None:
    from app.main import create_app

    async with running(create_app(local)) as client:
        ids = await write(client)
        await embedded(client)
        before = await search(client, "my sedan refused to crank", "dense")
    async with running(create_app(local)) as client:
        status = await embedded(client)
        assert status["pending"] == 0
        after = await search(client, "my sedan refused to crank", "dense")
    assert [h["memory"]["id"] for h in after["hits"]] == [h["memory"]["id"] for h in before["hits"]]
    assert after["hits"][0]["memory"]["id"] == ids["car"]


async def test_another_model_embeds_every_memory_again(local: Settings) -> None:
    """Vectors of one model are never compared with another's: a new model (here an
    OpenAI-compatible endpoint) puts every memory back on the list, its index holds only
    its own vectors, and a query is embedded by that endpoint."""
    from app.main import create_app

    async with running(create_app(local)) as client:
        await write(client)
        first = await embedded(client)
    with StandIn().serve() as standin:
        other = local.model_copy(
            update={
                "embeddings": Embeddings(
                    provider="openai", base_url=standin.base_url, model="standin-embed"
                )
            }
        )
        async with running(create_app(other)) as client:
            status = await embedded(client)
            assert status["model"] == f"openai:standin-embed@{DEFAULT_DIM}"
            assert status["model"] != first["model"]
            assert status["index"]["vectors"] == len(MEMORIES)
            found = await search(client, MEMORIES["cat"], "dense")
            assert found["hits"][0]["memory"]["content"] == MEMORIES["cat"]


async def test_an_embedder_that_fails_leaves_recall_lexical(local: Settings) -> None:
    """The embedding endpoint down: searches and recalls still answer, by BM25, and the
    memories wait for their vectors instead of being lost."""
    from app.main import create_app

    with StandIn().serve() as standin:
        settings = local.model_copy(
            update={
                "embeddings": Embeddings(
                    provider="openai",
                    base_url=standin.base_url,
                    model="standin-embed",
                    max_retries=0,
                )
            }
        )
        async with running(create_app(settings)) as client:
            standin.then(*["500"] * 1000)
            ids = await write(client)
            found = await search(client, "car battery", "hybrid")
            assert found["hits"][0]["memory"]["id"] == ids["car"]
            assert found["mode"] == "lexical"  # what it was, not what was asked
            r = await client.post("/v1/memories/search", json={"query": "car", "mode": "dense"})
            assert r.status_code == 503
            assert r.json()["field"] == "mode"
            r = await client.post(
                "/v1/recall", json={"task": "car battery", "k": 2, "token_budget": 500}
            )
            assert r.status_code == 200, r.text
            assert r.json()["retrieval"]["mode"] == "lexical"
            assert ids["car"] in [m["memory_id"] for m in r.json()["selected"]]
            ready = (await client.get("/ready")).json()["search"]["embeddings"]
            assert ready["pending"] == len(MEMORIES)
            # The endpoint answers again: the backlog drains by itself, searches are hybrid.
            standin.script.clear()
            for _ in range(200):
                ready = (await client.get("/ready")).json()["search"]["embeddings"]
                if ready["pending"] == 0:
                    break
                await asyncio.sleep(0.05)
            assert ready["pending"] == 0, ready
            assert (await search(client, "car battery", "hybrid"))["mode"] == "hybrid"
