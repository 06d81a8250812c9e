"""The OpenAPI document describes every route, and every $ref in it resolves."""

from __future__ import annotations

from typing import Any

import httpx


def refs(node: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                found.add(value)
            else:
                found |= refs(value)
    elif isinstance(node, list):
        for item in node:
            found |= refs(item)
    return found


async def test_openapi_document(client: httpx.AsyncClient) -> None:
    r = await client.get("/openapi.json")
    assert r.status_code == 200
    doc = r.json()
    schemas = doc["components"]["schemas"]
    for ref in refs(doc):
        assert ref.startswith("#/components/schemas/")
        assert ref.rsplit("/", 1)[1] in schemas, ref
    create = doc["paths"]["/v1/episodes"]["post"]
    body_ref = create["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    assert body_ref == "#/components/schemas/EpisodeCreate"
    assert "task_id" in schemas["EpisodeCreate"]["required"]
    assert {"201", "409", "413", "422", "503"} <= set(create["responses"])
    assert any(p["name"] == "Idempotency-Key" for p in create["parameters"])
    for path in ("/v1/episodes/{episode_id}", "/v1/episodes/{episode_id}/steps", "/health"):
        assert path in doc["paths"]
    assert doc["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    assert (await client.get("/docs")).status_code == 200


def keys(node: Any) -> set[str]:
    if isinstance(node, dict):
        return set(node).union(*(keys(value) for value in node.values()))
    if isinstance(node, list):
        return set().union(*(keys(item) for item in node))
    return set()


async def test_bounds_are_written_in_json_schemas_words(client: httpx.AsyncClient) -> None:
    """`minimum`/`maximum`, which generators read, never pydantic's own `ge`/`le`."""
    doc = (await client.get("/openapi.json")).json()
    assert not keys(doc) & {"ge", "le", "gt", "lt"}
    episodes = doc["paths"]["/v1/episodes"]["get"]["parameters"]
    (limit,) = [p["schema"] for p in episodes if p["name"] == "limit"]
    assert {"type": "integer", "minimum": 1} in limit["anyOf"]
