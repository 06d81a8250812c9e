"""A key's maximum sensitivity is access control: requests are capped at it and listings
redact what is above it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx

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
