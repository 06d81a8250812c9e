"""Episodes round trip through both stores; open episodes, steps, completion, deletion."""

from __future__ import annotations

import asyncio

import httpx
import orjson
from fastapi import FastAPI

from app.storage.blobs import episode_chunk_key, episode_doc_key, episode_prefix
from tests.conftest import episode_body


async def test_whole_episode_round_trip(client: httpx.AsyncClient, app: FastAPI) -> None:
    body = episode_body(steps=10, skills_applied=["grep-first"], metadata={"run": 7})
    created = await client.post("/v1/episodes", json=body)
    assert created.status_code == 201, created.text
    summary = created.json()
    assert summary["status"] == "completed"
    assert summary["outcome"] == "success"
    assert summary["step_count"] == 10
    assert summary["total_tokens"] == 400
    assert summary["total_latency_ms"] == 125.0
    assert created.headers["location"] == f"/v1/episodes/{summary['id']}"

    got = await client.get(f"/v1/episodes/{summary['id']}")
    assert got.status_code == 200
    full = got.json()
    assert [s["action"] for s in full["steps"]] == [f"step_{i}" for i in range(10)]
    assert [s["seq"] for s in full["steps"]] == list(range(10))
    assert full["steps"][3]["input"] == {"cmd": "grep -r config src/3"}
    assert full["steps"][3]["output"] == {"lines": ["src/3/config.py:1"]}
    assert full["context"]["text"] == "monorepo"
    assert full["metadata"] == {"run": 7}
    assert full["skills_applied"] == ["grep-first"]

    # The payload really is in the payload store: the document plus one chunk of steps.
    state = app.state.engram
    async with state.transactions.read() as session:
        stored = dict(
            await state.blobs.get_prefix(episode_prefix("default", summary["id"]), session=session)
        )
    assert set(stored) == {
        episode_doc_key("default", summary["id"]),
        episode_chunk_key("default", summary["id"], 0),
    }
    chunk = orjson.loads(stored[episode_chunk_key("default", summary["id"], 0)])
    assert [s["action"] for s in chunk] == [f"step_{i}" for i in range(10)]


async def test_seed_minimal_form_is_a_one_step_episode(client: httpx.AsyncClient) -> None:
    r = await client.post(
        "/v1/episodes",
        json={"task_id": "task_123", "action": "search_file", "context": "looking for main.py"},
    )
    assert r.status_code == 201, r.text
    assert r.json()["step_count"] == 1
    assert r.json()["status"] == "open"
    full = (await client.get(f"/v1/episodes/{r.json()['id']}")).json()
    assert full["steps"][0]["action"] == "search_file"
    assert full["context"]["text"] == "looking for main.py"


async def test_open_episode_grows_then_completes(client: httpx.AsyncClient) -> None:
    r = await client.post("/v1/episodes", json={"task_id": "t-open", "task_type": "fix_bug"})
    assert r.status_code == 201
    eid = r.json()["id"]
    assert r.json()["status"] == "open"

    one = await client.post(
        f"/v1/episodes/{eid}/steps", json={"action": "read", "tool": "fs", "tokens": 5}
    )
    assert one.status_code == 200, one.text
    assert one.json()["step_count"] == 1
    many = await client.post(
        f"/v1/episodes/{eid}/steps",
        json={
            "steps": [
                {"action": "edit", "status": "error", "error": "conflict"},
                {"action": "edit"},
            ]
        },
    )
    assert many.json()["step_count"] == 3
    assert many.json()["error_count"] == 1
    as_list = await client.post(f"/v1/episodes/{eid}/steps", json=[{"action": "test"}])
    assert as_list.json()["step_count"] == 4

    done = await client.post(
        f"/v1/episodes/{eid}/complete", json={"outcome": "partial", "progress": 0.5}
    )
    assert done.status_code == 200
    assert done.json()["status"] == "completed"
    again = await client.post(
        f"/v1/episodes/{eid}/complete", json={"outcome": "partial", "progress": 0.5}
    )
    assert again.status_code == 200
    assert again.json()["completed_at"] == done.json()["completed_at"]
    other = await client.post(f"/v1/episodes/{eid}/complete", json={"outcome": "success"})
    assert other.status_code == 409
    assert other.json()["error"] == "Conflict"
    late = await client.post(f"/v1/episodes/{eid}/steps", json={"action": "late"})
    assert late.status_code == 409

    full = (await client.get(f"/v1/episodes/{eid}")).json()
    assert [s["action"] for s in full["steps"]] == ["read", "edit", "edit", "test"]
    assert full["steps"][1]["error"] == "conflict"
    assert full["outcome"] == "partial"


async def test_concurrent_appends_keep_every_step_in_order(client: httpx.AsyncClient) -> None:
    eid = (await client.post("/v1/episodes", json={"task_id": "t-par"})).json()["id"]
    results = await asyncio.gather(
        *(client.post(f"/v1/episodes/{eid}/steps", json={"action": f"a{i}"}) for i in range(30))
    )
    assert all(r.status_code == 200 for r in results)
    full = (await client.get(f"/v1/episodes/{eid}")).json()
    assert full["step_count"] == 30
    assert [s["seq"] for s in full["steps"]] == list(range(30))
    assert sorted(s["action"] for s in full["steps"]) == sorted(f"a{i}" for i in range(30))


async def test_delete_removes_row_and_payload(client: httpx.AsyncClient, app: FastAPI) -> None:
    eid = (await client.post("/v1/episodes", json=episode_body())).json()["id"]
    r = await client.delete(f"/v1/episodes/{eid}")
    assert r.status_code == 204
    assert (await client.get(f"/v1/episodes/{eid}")).status_code == 404
    assert (await client.delete(f"/v1/episodes/{eid}")).status_code == 404
    state = app.state.engram
    async with state.transactions.read() as session:
        assert await state.blobs.get_prefix(episode_prefix("default", eid), session=session) == []
    listed = (await client.get("/v1/episodes")).json()
    assert listed["items"] == []


async def test_list_filters(client: httpx.AsyncClient) -> None:
    await client.post("/v1/episodes", json=episode_body("a", agent_id="x", task_type="search"))
    await client.post(
        "/v1/episodes", json=episode_body("b", agent_id="y", task_type="fix", outcome="failure")
    )
    await client.post("/v1/episodes", json={"task_id": "c", "agent_id": "x"})

    async def ids(**params: str) -> list[str]:
        r = await client.get("/v1/episodes", params=params)
        assert r.status_code == 200, r.text
        return [e["task_id"] for e in r.json()["items"]]

    assert await ids() == ["c", "b", "a"]
    assert await ids(task_id="b") == ["b"]
    assert await ids(agent_id="x") == ["c", "a"]
    assert await ids(task_type="fix") == ["b"]
    assert await ids(outcome="success") == ["a"]
    assert await ids(status="open") == ["c"]
    first = (await client.get("/v1/episodes", params={"task_id": "a"})).json()["items"][0]
    assert await ids(since=first["created_at"]) == ["c", "b", "a"]
    assert await ids(until=first["created_at"]) == []


async def test_keyset_pagination_visits_every_episode_once(client: httpx.AsyncClient) -> None:
    created = set()
    for batch in range(5):
        rs = await asyncio.gather(
            *(client.post("/v1/episodes", json={"task_id": f"p{batch}-{i}"}) for i in range(10))
        )
        created |= {r.json()["id"] for r in rs}
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        params = {"limit": "7"} | ({"cursor": cursor} if cursor else {})
        page = (await client.get("/v1/episodes", params=params)).json()
        seen += [e["id"] for e in page["items"]]
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert pages == 8
    assert len(seen) == len(set(seen)) == 50
    assert set(seen) == created
