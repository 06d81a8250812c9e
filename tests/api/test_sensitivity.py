"""A key's maximum sensitivity is access control: requests are capped at it and listings
redact what is above it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
from fastapi import FastAPI

from tests.conftest import auth

SECRET = "the production database password is hunter2"


async def _memories(client: httpx.AsyncClient, key: str) -> dict[str, str]:
    ids = {}
    for level in ("low", "high", "restricted"):
        body = {"type": "fact", "content": f"{level}: {SECRET}", "sensitivity": level}
        r = await client.post("/v1/memories", json=body, headers=auth(key))
        assert r.status_code == 201, r.text
        ids[level] = r.json()["id"]
    return ids


async def test_recall_and_search_are_capped_at_the_keys_sensitivity(
    client: httpx.AsyncClient, make_key: Callable[..., Any]
) -> None:
    owner = await make_key("ns", "admin", max_sensitivity="restricted")
    agent = await make_key("ns", "agent")  # the default: up to high
    ids = await _memories(client, owner)
    ask = {"task": "production database password", "token_budget": 4000, "k": 10}
    wide = {**ask, "max_sensitivity": "restricted"}
    r = await client.post("/v1/recall", json=wide, headers=auth(agent))
    assert r.status_code == 200, r.text
    chosen = {m["memory_id"] for m in r.json()["selected"]}
    assert chosen == {ids["low"], ids["high"]}
    assert all("restricted" not in m["content"] for m in r.json()["selected"])
    r = await client.post("/v1/recall", json=wide, headers=auth(owner))
    assert {m["memory_id"] for m in r.json()["selected"]} == set(ids.values())
    search = {"query": "production database password", "max_sensitivity": "restricted"}
    hits = (await client.post("/v1/memories/search", json=search, headers=auth(agent))).json()
    assert {h["memory"]["id"] for h in hits["hits"]} == {ids["low"], ids["high"]}


async def test_listings_redact_content_above_the_keys_sensitivity(
    client: httpx.AsyncClient, make_key: Callable[..., Any]
) -> None:
    owner = await make_key("ns", "admin", max_sensitivity="restricted")
    reader = await make_key("ns", "reader", max_sensitivity="low")
    ids = await _memories(client, owner)
    listed = (await client.get("/v1/memories", headers=auth(reader))).json()["items"]
    by_id = {m["id"]: m for m in listed}
    assert by_id[ids["low"]]["content"].startswith("low: ")
    assert not by_id[ids["low"]]["redacted"]
    for level in ("high", "restricted"):
        assert by_id[ids[level]]["content"] == ""
        assert by_id[ids[level]]["redacted"] is True
        one = (await client.get(f"/v1/memories/{ids[level]}", headers=auth(reader))).json()
        assert (one["content"], one["metadata"], one["redacted"]) == ("", {}, True)
    full = (await client.get(f"/v1/memories/{ids['restricted']}", headers=auth(owner))).json()
    assert full["content"].startswith("restricted: ")
    assert not full["redacted"]


async def test_a_key_cannot_create_a_key_that_reads_more(
    client: httpx.AsyncClient, make_key: Callable[..., Any]
) -> None:
    admin = await make_key("ns", "admin")  # up to high
    r = await client.post(
        "/v1/keys", json={"role": "reader", "max_sensitivity": "restricted"}, headers=auth(admin)
    )
    assert r.status_code == 403, r.text
    assert r.json()["field"] == "max_sensitivity"
    r = await client.post("/v1/keys", json={"role": "agent"}, headers=auth(admin))
    assert r.status_code == 201, r.text
    assert r.json()["max_sensitivity"] == "high"
    low = await client.post(
        "/v1/keys", json={"role": "reader", "max_sensitivity": "low"}, headers=auth(admin)
    )
    assert low.json()["max_sensitivity"] == "low"
    listed = (await client.get("/v1/keys", headers=auth(admin))).json()["items"]
    assert {k["max_sensitivity"] for k in listed} == {"high", "low"}


async def test_a_key_writes_and_acts_only_at_or_below_its_cap(
    client: httpx.AsyncClient, make_key: Callable[..., Any]
) -> None:
    owner = await make_key("ns", "admin", max_sensitivity="restricted")
    agent = await make_key("ns", "agent")  # up to high
    ids = await _memories(client, owner)
    secret = ids["restricted"]
    # Every way of acting on a memory above the cap is refused, naming the field...
    for action in ("quarantine", "forget", "restore"):
        r = await client.post(f"/v1/memories/{secret}/{action}", headers=auth(agent))
        assert r.status_code == 403, (action, r.text)
        assert r.json()["field"] == "sensitivity"
        assert "up to high" in r.json()["detail"]
    r = await client.post(
        f"/v1/memories/{secret}/supersede", json={"content": "hunter3"}, headers=auth(agent)
    )
    assert r.status_code == 403, r.text
    # ...and none of them changed it: the owner's recall still gets its own text.
    full = (await client.get(f"/v1/memories/{secret}", headers=auth(owner))).json()
    assert (full["status"], full["content"]) == ("active", f"restricted: {SECRET}")
    # Nor can it write above the cap, or raise a memory it may act on above it.
    body = {"type": "fact", "content": "a new secret", "sensitivity": "restricted"}
    r = await client.post("/v1/memories", json=body, headers=auth(agent))
    assert (r.status_code, r.json()["field"]) == (403, "sensitivity")
    r = await client.post(
        f"/v1/memories/{ids['high']}/supersede",
        json={"content": "raised", "sensitivity": "restricted"},
        headers=auth(agent),
    )
    assert (r.status_code, r.json()["field"]) == (403, "sensitivity")
    # At or below the cap, all of it works.
    r = await client.post(f"/v1/memories/{ids['high']}/quarantine", headers=auth(agent))
    assert r.status_code == 200, r.text
    r = await client.post("/v1/memories", json={**body, "sensitivity": "high"}, headers=auth(agent))
    assert r.status_code == 201, r.text
    listed = (await client.get("/v1/memories", headers=auth(owner))).json()["items"]
    assert sum(m["sensitivity"] == "restricted" for m in listed) == 1


async def test_recall_does_not_tell_a_capped_key_what_hidden_memories_match(
    client: httpx.AsyncClient, make_key: Callable[..., Any]
) -> None:
    owner = await make_key("ns", "admin", max_sensitivity="restricted")
    reader = await make_key("ns", "agent", max_sensitivity="low")
    ids = await _memories(client, owner)
    ask = {"task": "production database password", "token_budget": 4000, "k": 10}
    body = (await client.post("/v1/recall", json=ask, headers=auth(reader))).json()
    shown = {m["memory_id"] for m in body["selected"]} | {
        s["memory_id"] for s in body["suppressed"]
    }
    assert shown == {ids["low"]}
    # The key's own ask below its cap still says what it left out, and why.
    owned = (await client.post("/v1/recall", json=ask, headers=auth(owner))).json()
    suppressed = {s["memory_id"]: s["reason"] for s in owned["suppressed"]}
    assert "restricted sensitivity" in suppressed[ids["restricted"]]


async def test_ready_shows_its_counts_to_an_operator_only(
    app: FastAPI, client: httpx.AsyncClient, make_key: Callable[..., Any]
) -> None:
    owner = await make_key("ns", "admin", max_sensitivity="restricted")
    operator = await make_key("ops", "operator", max_sensitivity="restricted")
    await _memories(client, owner)
    bare = {
        "status": "ready",
        "stores": {"sql": "ok", "blobs": "ok"},
        "search": {"mode": "lexical"},
    }
    for headers in ({}, auth(owner), auth("egk_not-a-key")):
        r = await client.get("/ready", headers=headers)
        assert (r.status_code, r.json()) == (200, bare)
    full = (await client.get("/ready", headers=auth(operator))).json()
    index = app.state.engram.search.lexical.stats()  # kept in process: SQLite's
    assert full.get("search_index") == index
    assert {k: v for k, v in full.items() if k != "search_index"} == bare
