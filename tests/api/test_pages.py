"""Every listing pages the same way: one `limit` parameter checked by one rule, and a page
of one of two shapes (a cursor, or an offset for ranked lists)."""

from __future__ import annotations

import httpx
import pytest

from tests.api.test_errors import assert_error

CURSOR_LISTINGS = [
    "/v1/episodes",
    "/v1/memories",
    "/v1/rewards",
    "/v1/rl/transitions",
    "/v1/reflections",
    "/v1/jobs",
    "/v1/keys",
    "/v1/audit",
]
OFFSET_LISTINGS = ["/v1/patterns", "/v1/skills"]
LISTINGS = CURSOR_LISTINGS + OFFSET_LISTINGS + ["/v1/skills/{skill_id}/history"]


async def test_every_listing_declares_the_same_limit(client: httpx.AsyncClient) -> None:
    paths = (await client.get("/openapi.json")).json()["paths"]
    limits = {
        path: next(p for p in paths[path]["get"]["parameters"] if p["name"] == "limit")
        for path in LISTINGS
    }
    first = limits["/v1/episodes"]
    assert first["in"] == "query"
    assert not first["required"]
    assert "ENGRAM_LIMITS__MAX_PAGE_SIZE" in first["description"]
    assert {path: limit for path, limit in limits.items() if limit != first} == {}


@pytest.mark.parametrize("path", LISTINGS)
async def test_every_listing_refuses_a_page_too_large(client: httpx.AsyncClient, path: str) -> None:
    url = path.format(skill_id="sk_none")
    assert_error(await client.get(url, params={"limit": "201"}), 422, "InvalidInput", "limit")
    assert_error(await client.get(url, params={"limit": "0"}), 422, "ValidationError", "limit")


@pytest.mark.parametrize("path", CURSOR_LISTINGS + OFFSET_LISTINGS)
async def test_every_listing_answers_a_page(client: httpx.AsyncClient, path: str) -> None:
    r = await client.get(path, params={"limit": "200"})
    assert r.status_code == 200, r.text
    page = r.json()
    assert isinstance(page["items"], list)
    next_key = "next_offset" if path in OFFSET_LISTINGS else "next_cursor"
    assert page[next_key] is None
