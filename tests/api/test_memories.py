"""Memories: CRUD, lifecycle, expiry, scope filters, search ranked in the database."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import orjson
import pytest
from fastapi import FastAPI

from app.core.config import Settings
from tests.conftest import asgi_request, auth, running


async def create(client: httpx.AsyncClient, **fields: Any) -> dict[str, Any]:
    body = {"type": "fact", "content": "The API uses port 8080 by default."} | fields
    r = await client.post("/v1/memories", json=body)
    assert r.status_code == 201, r.text
    result: dict[str, Any] = r.json()
    assert r.headers["location"] == f"/v1/memories/{result['id']}"
    return result


async def test_create_and_read(client: httpx.AsyncClient) -> None:
    m = await create(
        client,
        type="constraint",
        content="Never push directly to main; open a pull request.",
        scope={"level": "task", "task_id": "t1"},
        criticality=0.9,
        sensitivity="high",
        source_refs=["episode:abc"],
        metadata={"origin": "review"},
    )
    assert m["status"] == "active"
    assert m["version"] == 1
    assert m["token_estimate"] == 13
    assert m["reward_mean"] is None
    got = (await client.get(f"/v1/memories/{m['id']}")).json()
    assert got == m
    assert (await client.get("/v1/memories/nope")).status_code == 404


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"type": "opinion", "content": "x"}, "type"),
        ({"type": "fact"}, "content"),
        ({"type": "fact", "content": "x", "confidence": 1.5}, "confidence"),
        ({"type": "fact", "content": "x", "sensitivity": "secret"}, "sensitivity"),
        ({"type": "fact", "content": "x", "scope": {"Bad Key": "v"}}, "scope.Bad Key"),
    ],
)
async def test_invalid_memories_are_422(
    client: httpx.AsyncClient, body: dict[str, Any], field: str
) -> None:
    r = await client.post("/v1/memories", json=body)
    assert r.status_code == 422, r.text
    assert r.json()["field"] == field
    if field == "type":
        assert "constraint" in r.json()["detail"]


async def test_lifecycle(client: httpx.AsyncClient) -> None:
    m = await create(client)
    mid = m["id"]
    q = await client.post(f"/v1/memories/{mid}/quarantine")
    assert q.json()["status"] == "quarantined"
    assert (await client.post(f"/v1/memories/{mid}/quarantine")).status_code == 200
    r = await client.post(f"/v1/memories/{mid}/restore")
    assert r.json()["status"] == "active"
    assert (await client.post(f"/v1/memories/{mid}/restore")).status_code == 200

    new = await client.post(f"/v1/memories/{mid}/supersede", json={"content": "Port 9090 now."})
    assert new.status_code == 201
    v2 = new.json()
    assert v2["version"] == 2
    assert v2["previous_id"] == mid
    assert v2["type"] == "fact"
    assert v2["confidence"] == m["confidence"]
    old = (await client.get(f"/v1/memories/{mid}")).json()
    assert old["status"] == "superseded"
    assert old["superseded_by"] == v2["id"]
    again = await client.post(f"/v1/memories/{mid}/supersede", json={"content": "again"})
    assert again.status_code == 409

    gone = await client.post(f"/v1/memories/{v2['id']}/forget")
    assert gone.json()["status"] == "deleted"
    assert (await client.post(f"/v1/memories/{v2['id']}/forget")).status_code == 200
    r = await client.post(f"/v1/memories/{v2['id']}/supersede", json={"content": "x"})
    assert r.status_code == 409
    assert r.json()["error"] == "Conflict"
    assert (await client.post(f"/v1/memories/{v2['id']}/quarantine")).status_code == 409
    assert (await client.get(f"/v1/memories/{v2['id']}")).json()["content"] == "Port 9090 now."


async def test_concurrent_supersedes_one_wins(client: httpx.AsyncClient) -> None:
    mid = (await create(client))["id"]
    results = await asyncio.gather(
        *(
            client.post(f"/v1/memories/{mid}/supersede", json={"content": f"version {i}"})
            for i in range(10)
        )
    )
    codes = sorted(r.status_code for r in results)
    assert codes == [201] + [409] * 9
    listed = (await client.get("/v1/memories", params={"status": "active"})).json()["items"]
    assert len(listed) == 1
    assert listed[0]["previous_id"] == mid


async def test_expiry_without_a_job(client: httpx.AsyncClient) -> None:
    past = (datetime.now(UTC) - timedelta(days=1)).isoformat()
    m = await create(
        client, valid_until=past, valid_from=(datetime.now(UTC) - timedelta(days=2)).isoformat()
    )
    assert m["status"] == "expired"
    expired = (await client.get("/v1/memories", params={"status": "expired"})).json()["items"]
    assert [e["id"] for e in expired] == [m["id"]]
    active = (await client.get("/v1/memories", params={"status": "active"})).json()["items"]
    assert active == []
    hits = (await client.post("/v1/memories/search", json={"query": "port default"})).json()
    assert hits["hits"] == []


async def test_list_filters_and_pages(client: httpx.AsyncClient) -> None:
    for i in range(7):
        await create(
            client,
            type="preference" if i % 2 else "fact",
            content=f"memory number {i}",
            scope={"level": "session", "session_id": f"s{i % 3}", "user": "u1"},
            sensitivity="low" if i < 5 else "restricted",
        )

    async def ids(**params: Any) -> list[str]:
        r = await client.get("/v1/memories", params=params)
        assert r.status_code == 200, r.text
        return [m["content"] for m in r.json()["items"]]

    assert len(await ids()) == 7
    assert await ids(type="preference") == ["memory number 5", "memory number 3", "memory number 1"]
    assert await ids(scope=["session_id:s0", "user:u1"]) == [
        "memory number 6",
        "memory number 3",
        "memory number 0",
    ]
    assert await ids(scope="session_id:s9") == []
    assert await ids(sensitivity="restricted") == ["memory number 6", "memory number 5"]
    seen: list[str] = []
    cursor = None
    while True:
        page = (
            await client.get(
                "/v1/memories", params={"limit": 3} | ({"cursor": cursor} if cursor else {})
            )
        ).json()
        seen += [m["id"] for m in page["items"]]
        cursor = page["next_cursor"]
        if not cursor:
            break
    assert len(seen) == len(set(seen)) == 7
    bad = await client.get("/v1/memories", params={"scope": "nocolon"})
    assert bad.status_code == 422
    assert (await client.get("/v1/memories", params={"type": "nope"})).status_code == 422


CORPUS = [
    ("fact", "The deployment pipeline runs integration tests before releasing to production.", 0.5),
    (
        "constraint",
        "Never deploy to production on Fridays without an approved change request.",
        0.9,
    ),
    ("preference", "The user prefers concise answers with code examples in Python.", 0.4),
    ("fact", "Database migrations are applied with Alembic before the service starts.", 0.5),
    ("procedure", "To rotate credentials, revoke the old key and create a new one.", 0.6),
    ("fact", "The office coffee machine is on the third floor.", 0.1),
]


async def test_search_ranks_in_the_database(client: httpx.AsyncClient) -> None:
    ids = [
        (await create(client, type=type_, content=content, criticality=crit))["id"]
        for type_, content, crit in CORPUS
    ]
    r = await client.post(
        "/v1/memories/search", json={"query": "How do we deploy to production?", "limit": 5}
    )
    assert r.status_code == 200, r.text
    result = r.json()
    assert result["query_terms"] == ["deploy", "production"]
    contents = [h["memory"]["content"] for h in result["hits"]]
    # Stemming: "deploy" matches "deployment"; both production memories come first,
    # the more critical constraint ahead.
    assert contents[:2] == [CORPUS[1][1], CORPUS[0][1]]
    assert CORPUS[5][1] not in contents
    scores = [h["score"] for h in result["hits"]]
    assert scores == sorted(scores, reverse=True)
    texts = [h["parts"]["text"] for h in result["hits"]]
    assert all(0 < t <= 1 for t in texts)
    assert max(texts) == 1.0  # relative to the best text match of the query

    only = await client.post(
        "/v1/memories/search", json={"query": "production deploy", "types": ["constraint"]}
    )
    assert [h["memory"]["type"] for h in only.json()["hits"]] == ["constraint"]
    none = await client.post("/v1/memories/search", json={"query": "the and of"})
    assert none.json() == {
        "query_terms": [],
        "hits": [],
        "mode": "lexical",
        "missing_vectors": 0,
    }
    # A forgotten memory is not found any more; a superseded one gives way to its successor.
    await client.post(f"/v1/memories/{ids[1]}/forget")
    await client.post(
        f"/v1/memories/{ids[0]}/supersede",
        json={"content": "The deployment pipeline runs smoke tests after releasing to production."},
    )
    after = (await client.post("/v1/memories/search", json={"query": "deploy production"})).json()
    assert [h["memory"]["content"] for h in after["hits"]] == [
        "The deployment pipeline runs smoke tests after releasing to production."
    ]


async def test_search_sensitivity_and_scope(client: httpx.AsyncClient) -> None:
    await create(client, content="secret rotation schedule", sensitivity="restricted")
    await create(
        client, content="rotation of on-call duty", scope={"level": "session", "session_id": "s1"}
    )
    default = (await client.post("/v1/memories/search", json={"query": "rotation"})).json()
    assert [h["memory"]["content"] for h in default["hits"]] == ["rotation of on-call duty"]
    allowed = (
        await client.post(
            "/v1/memories/search", json={"query": "rotation", "max_sensitivity": "restricted"}
        )
    ).json()
    assert len(allowed["hits"]) == 2
    scoped = (
        await client.post(
            "/v1/memories/search",
            json={
                "query": "rotation",
                "scope": {"session_id": "s2"},
                "max_sensitivity": "restricted",
            },
        )
    ).json()
    assert scoped["hits"] == []


async def test_memories_are_namespaced(
    client: httpx.AsyncClient, make_key: Callable[..., Any]
) -> None:
    a, b = await make_key("ns-a"), await make_key("ns-b")
    r = await client.post(
        "/v1/memories", json={"type": "fact", "content": "alpha secret plan"}, headers=auth(a)
    )
    mid = r.json()["id"]
    assert (await client.get(f"/v1/memories/{mid}", headers=auth(b))).status_code == 404
    assert (await client.post(f"/v1/memories/{mid}/forget", headers=auth(b))).status_code == 404
    hits = await client.post("/v1/memories/search", json={"query": "alpha plan"}, headers=auth(b))
    assert hits.json()["hits"] == []
    assert (await client.get("/v1/memories", headers=auth(b))).json()["items"] == []
    mine = await client.post("/v1/memories/search", json={"query": "alpha plan"}, headers=auth(a))
    assert len(mine.json()["hits"]) == 1


async def test_chosen_ids_are_unique_even_under_concurrency(client: httpx.AsyncClient) -> None:
    # Repeats of the same memory are retries (the first result, replayed); the same id
    # with other content is a conflict.
    body = {"type": "fact", "content": "The build uses make.", "id": "build-tool"}
    other = {**body, "content": "The build uses bazel."}
    results = await asyncio.gather(
        *(client.post("/v1/memories", json=body if i % 2 else other) for i in range(12))
    )
    first = next(
        r for r in results if "idempotent-replayed" not in r.headers and r.status_code == 201
    )
    won = first.json()["content"]
    for r in results:
        if r.status_code == 201:
            assert r.json()["content"] == won
        else:
            assert r.status_code == 409
            assert r.json()["field"] == "id"
    assert sorted(r.status_code for r in results) == [201] * 6 + [409] * 6
    assert sum("idempotent-replayed" not in r.headers for r in results if r.status_code == 201) == 1
    assert (await client.get("/v1/memories/build-tool")).json()["content"] == won
    many = await asyncio.gather(
        *(client.post("/v1/memories", json={"type": "fact", "content": f"n{i}"}) for i in range(40))
    )
    assert {r.status_code for r in many} == {201}
    assert len({r.json()["id"] for r in many}) == 40


async def test_search_beyond_ascii(client: httpx.AsyncClient, backend: str) -> None:
    await create(client, content="Le café est fermé le dimanche.")
    await create(client, content="Die Größe der Datei ist begrenzt.")
    # FTS5 (SQLite, libSQL) folds accents.
    queries = ["café fermé"] + (["cafe ferme"] if backend != "postgresql" else [])
    for query in queries:
        hits = (await client.post("/v1/memories/search", json={"query": query})).json()
        assert [h["memory"]["content"] for h in hits["hits"]] == ["Le café est fermé le dimanche."]
    hits = (await client.post("/v1/memories/search", json={"query": "Größe Datei"})).json()
    assert [h["memory"]["content"] for h in hits["hits"]] == ["Die Größe der Datei ist begrenzt."]


async def test_search_stays_in_its_namespace_whichever_way_it_filters(
    client: httpx.AsyncClient, make_key: Callable[..., Any]
) -> None:
    """A namespace holding most of the index is filtered after ranking, a small one inside
    the full-text engine (SQLite): neither returns another namespace's memories, and each
    finds all of its own."""
    big, small = await make_key("ns-big"), await make_key("ns-small")
    content = "Deploy to production only after the smoke tests pass ({})."
    for i in range(6):
        body = {"type": "fact", "content": content.format(f"big {i}")}
        assert (await client.post("/v1/memories", json=body, headers=auth(big))).status_code == 201
    for i in range(2):
        body = {"type": "fact", "content": content.format(f"small {i}")}
        r = await client.post("/v1/memories", json=body, headers=auth(small))
        assert r.status_code == 201
    for key, marker, count in ((big, "big", 6), (small, "small", 2)):
        r = await client.post(
            "/v1/memories/search", json={"query": "deploy production"}, headers=auth(key)
        )
        hits = [h["memory"]["content"] for h in r.json()["hits"]]
        assert len(hits) == count
        assert all(f"({marker} " in h for h in hits)


async def test_common_query_terms_are_dropped_in_large_namespaces(
    settings: Settings, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The full-text query (SQLite without its in-memory index, or while it builds)."""
    if backend == "postgresql":
        pytest.skip("term pruning reads FTS5's vocabulary (SQLite and libSQL)")
    from app.main import create_app

    recall = settings.recall.model_copy(update={"search_index": False})
    async with running(create_app(settings.model_copy(update={"recall": recall}))) as client:
        await _prune_terms(client, monkeypatch)


async def _prune_terms(client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch) -> None:
    from app.search import fts5 as memories

    for i in range(6):
        await create(client, content=f"The billing service restarts nightly (note {i}).")
    await create(client, content="The kubernetes service mesh terminates TLS.")
    query = {"query": "kubernetes billing service"}
    everything = (await client.post("/v1/memories/search", json=query)).json()["hits"]
    assert len(everything) == 7  # a small namespace matches on every term
    monkeypatch.setattr(memories, "PRUNE_FROM", 1)
    monkeypatch.setattr(memories, "MIN_MATCH_TERMS", 2)
    monkeypatch.setattr(memories, "POSTINGS_BUDGET", 5)
    # The two rarest terms stay (kubernetes: 1 memory, billing: 6); "service", in all
    # seven, would take the postings over the budget and is dropped.
    pruned = (await client.post("/v1/memories/search", json=query)).json()
    assert pruned["query_terms"] == ["kubernetes", "billing", "service"]
    contents = [h["memory"]["content"] for h in pruned["hits"]]
    assert contents[0] == "The kubernetes service mesh terminates TLS."
    assert len(contents) == 7
    monkeypatch.setattr(memories, "MIN_MATCH_TERMS", 1)
    rarest = (await client.post("/v1/memories/search", json=query)).json()["hits"]
    assert [h["memory"]["content"] for h in rarest] == [
        "The kubernetes service mesh terminates TLS."
    ]


async def test_a_body_that_arrives_late_is_read(app: FastAPI) -> None:
    # The body comes after the headers (receive() has to wait): it is read under the
    # body deadline, chunk by chunk, and the memory is stored.
    chunks = [b'{"type": "fact", ', b'"content": "Late bodies are read."}']

    async def receive() -> dict[str, Any]:
        await asyncio.sleep(0.01)
        if chunks:
            return {"type": "http.request", "body": chunks.pop(0), "more_body": bool(chunks)}
        await asyncio.sleep(3600)
        return {"type": "http.disconnect"}

    headers = [(b"host", b"localhost"), (b"content-type", b"application/json")]
    sent = await asgi_request(app, "POST", "/v1/memories", headers, receive)
    assert sent[0]["status"] == 201
    body = orjson.loads(sent[1]["body"])
    assert body["content"] == "Late bodies are read."
