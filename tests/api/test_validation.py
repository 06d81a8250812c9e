"""Nonsense that used to be accepted: each is a 422 naming the field, in the one shape."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.api.test_input_bounds import assert_invalid


async def _nothing_stored(client: httpx.AsyncClient) -> None:
    assert (await client.get("/v1/episodes")).json()["items"] == []
    assert (await client.get("/v1/memories")).json()["items"] == []


@pytest.mark.parametrize(
    ("scope", "field"),
    [
        ({"level": "bogus"}, "scope.level"),
        ({"level": "session"}, "scope.session_id"),
        ({"level": "task", "user_id": "u1"}, "scope.task_id"),
    ],
)
async def test_a_scope_must_be_a_scope(
    client: httpx.AsyncClient, scope: dict[str, str], field: str
) -> None:
    r = await client.post("/v1/memories", json={"type": "fact", "content": "c", "scope": scope})
    assert_invalid(r, field)
    recall = {"task": "t", "token_budget": 100, "scope": scope}
    assert_invalid(await client.post("/v1/recall", json=recall), field)
    assert_invalid(
        await client.post("/v1/memories/search", json={"query": "q", "scope": scope}), field
    )
    await _nothing_stored(client)
    ok = {"level": "session", "session_id": "s1", "user_id": "u1"}
    r = await client.post("/v1/memories", json={"type": "fact", "content": "c", "scope": ok})
    assert r.status_code == 201, r.text


@pytest.mark.parametrize(
    ("outcome", "progress"),
    [("success", 0.1), ("failure", 1.0), ("abstained", 1.0), ("partial", 0.0), ("partial", 1.0)],
)
async def test_progress_must_fit_the_outcome(
    client: httpx.AsyncClient, outcome: str, progress: float
) -> None:
    body = {"task_id": "t", "action": "a", "outcome": outcome, "progress": progress}
    assert_invalid(await client.post("/v1/episodes", json=body), "progress")
    await _nothing_stored(client)
    open_ = (await client.post("/v1/episodes", json={"task_id": "t"})).json()["id"]
    done = {"outcome": outcome, "progress": progress}
    assert_invalid(await client.post(f"/v1/episodes/{open_}/complete", json=done), "progress")
    assert (await client.get(f"/v1/episodes/{open_}")).json()["status"] == "open"


async def test_progress_that_fits_is_accepted(client: httpx.AsyncClient) -> None:
    for outcome, progress in [("success", 1.0), ("partial", 0.4), ("failure", 0.0)]:
        body = {"task_id": "t", "action": "a", "outcome": outcome, "progress": progress}
        assert (await client.post("/v1/episodes", json=body)).status_code == 201


@pytest.mark.parametrize("when", ["9999-01-01T00:00:00Z", "2999-06-01T12:00:00+02:00"])
async def test_events_cannot_happen_in_the_future(client: httpx.AsyncClient, when: str) -> None:
    assert_invalid(
        await client.post("/v1/episodes", json={"task_id": "t", "started_at": when}), "started_at"
    )
    step = {"action": "a", "started_at": when}
    r = await client.post("/v1/episodes", json={"task_id": "t", "steps": [step]})
    assert_invalid(r, "steps[0].started_at")
    await _nothing_stored(client)
    # A memory may be valid until a future date: that is not an event.
    memory = {"type": "fact", "content": "c", "valid_until": when}
    assert (await client.post("/v1/memories", json=memory)).status_code == 201


@pytest.mark.parametrize(
    ("path", "raw", "field"),
    [
        ("/v1/memories", b'{"type": "fact", "type": "constraint", "content": "c"}', "type"),
        (
            "/v1/episodes",
            b'{"task_id": "t", "steps": [{"action": "a"}, {"action": "b", "status": "ok", '
            b'"status": "error"}]}',
            "steps[1].status",
        ),
        ("/v1/recall", b'{"task": "t", "token_budget": 1, "token_budget": 900}', "token_budget"),
        ("/v1/rewards", b'{"task_id": "t", "value": 1, "value": -1}', "value"),
        ("/v1/memories/search", b'{"query": "a", "query": "b"}', "query"),
    ],
)
async def test_duplicate_keys_are_refused(
    client: httpx.AsyncClient, path: str, raw: bytes, field: str
) -> None:
    # Two parsers may read a repeated key differently (a proxy the first, Engram the last).
    r = await client.post(path, content=raw, headers={"Content-Type": "application/json"})
    assert_invalid(r, field)
    assert "twice" in r.json()["errors"][0]["message"]
    await _nothing_stored(client)


@pytest.mark.parametrize(
    ("method", "path", "kwargs"),
    [
        ("GET", "/v1/episodes", {"params": {"limit": "100000"}}),
        ("GET", "/v1/memories", {"params": {"cursor": "not-a-cursor"}}),
        ("GET", "/v1/memories", {"params": {"scope": "nonsense"}}),
        ("POST", "/v1/episodes", {"json": {"task_id": "t", "steps": "x"}}),
        (
            "POST",
            "/v1/episodes",
            {"content": b"{", "headers": {"Content-Type": "application/json"}},
        ),
        (
            "GET",
            "/v1/episodes",
            {"params": {"since": "2026-02-01T00:00Z", "until": "2026-01-01T00:00Z"}},
        ),
    ],
)
async def test_every_422_has_one_shape(
    client: httpx.AsyncClient, method: str, path: str, kwargs: dict[str, Any]
) -> None:
    r = await client.request(method, path, **kwargs)
    assert r.status_code == 422, r.text
    body = r.json()
    assert set(body) == {"error", "detail", "field", "errors"}
    assert body["errors"]
    assert all(set(e) == {"field", "message"} for e in body["errors"])
    assert body["errors"][0]["field"] == body["field"]
    assert body["detail"] == f"{body['field']}: {body['errors'][0]['message']}"


@pytest.mark.parametrize(
    "path",
    ["/v1/rl/dataset?limit=422%20", "/v1/episodes?limit=5%20", "/v1/patterns?offset=%2B3"],
)
async def test_a_query_integer_is_digits_only(client: httpx.AsyncClient, path: str) -> None:
    r = await client.get(path)
    assert r.status_code == 422, r.text
    assert "digits only" in r.text
