"""Inputs at the edges that once answered 500 or broke the documented response schema."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.conftest import auth

EDGE_TIMES = ["0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59-05:00"]


def assert_invalid(r: httpx.Response, field: str) -> None:
    assert r.status_code == 422, r.text
    body = r.json()
    assert body["error"] == "ValidationError"
    assert body["field"] == field, body


@pytest.mark.parametrize("when", EDGE_TIMES)
async def test_times_that_leave_the_calendar_in_utc_are_invalid(
    client: httpx.AsyncClient, when: str
) -> None:
    r = await client.post("/v1/episodes", json={"task_id": "t", "started_at": when})
    assert_invalid(r, "started_at")
    step = {"action": "a", "started_at": when}
    r = await client.post("/v1/episodes", json={"task_id": "t", "steps": [step]})
    assert_invalid(r, "steps[0].started_at")
    r = await client.post("/v1/memories", json={"type": "fact", "content": "c", "valid_from": when})
    assert_invalid(r, "valid_from")
    assert_invalid(await client.post("/v1/reflect", json={"since": when}), "since")
    assert_invalid(await client.get("/v1/episodes", params={"until": when}), "until")
    assert_invalid(await client.get("/v1/rl/transitions", params={"since": when}), "since")
    listed = (await client.get("/v1/episodes")).json()["items"]
    assert listed == [], "nothing was half-written"


async def test_times_near_the_edges_are_kept_in_utc(client: httpx.AsyncClient) -> None:
    body = {"task_id": "t", "started_at": "0001-01-01T05:00:00+05:00", "outcome": "success"}
    r = await client.post("/v1/episodes", json=body)
    assert r.status_code == 201, r.text
    stored = (await client.get(f"/v1/episodes/{r.json()['id']}")).json()
    assert stored["started_at"].startswith("0001-01-01T00:00:00")


@pytest.mark.parametrize(
    ("step", "field"),
    [({"latency_ms": 1e308}, "latency_ms"), ({"tokens": 2**62}, "tokens")],
)
async def test_step_figures_beyond_the_bounds_are_invalid(
    client: httpx.AsyncClient, step: dict[str, Any], field: str
) -> None:
    steps = [{"action": "a", **step}, {"action": "b", **step}]
    r = await client.post("/v1/episodes", json={"task_id": "t", "steps": steps})
    assert_invalid(r, f"steps[0].{field}")


async def test_the_largest_step_figures_keep_totals_numeric(client: httpx.AsyncClient) -> None:
    step = {"action": "a", "latency_ms": 365 * 86_400_000.0, "tokens": 10**12}
    r = await client.post("/v1/episodes", json={"task_id": "t", "steps": [step] * 3})
    assert r.status_code == 201, r.text
    appended = await client.post(f"/v1/episodes/{r.json()['id']}/steps", json=step)
    assert appended.status_code == 200, appended.text
    summary = appended.json()
    assert summary["total_latency_ms"] == 4 * 365 * 86_400_000.0
    assert summary["total_tokens"] == 4 * 10**12


@pytest.mark.parametrize("path", ["/v1/memories/search", "/v1/reflect", "/v1/rewards"])
async def test_a_body_that_is_not_utf8_is_invalid_json(
    client: httpx.AsyncClient, path: str
) -> None:
    headers = {"Content-Type": "application/json"}
    r = await client.post(path, content=b'{"task": "\xff\xfe"}', headers=headers)
    assert_invalid(r, "body")
    assert "UTF-8" in r.json()["detail"]


async def test_probes_answer_without_a_key_and_say_so(
    client: httpx.AsyncClient, make_key: Callable[..., Any]
) -> None:
    key = await make_key("ns")
    assert (await client.get("/v1/episodes")).status_code == 401
    assert (await client.get("/health")).status_code == 200
    assert (await client.get("/ready")).status_code == 200
    assert (await client.get("/v1/episodes", headers=auth(key))).status_code == 200
    doc = (await client.get("/openapi.json")).json()
    assert doc["security"] == [{"bearer": []}]
    assert doc["paths"]["/health"]["get"]["security"] == []
    assert doc["paths"]["/ready"]["get"]["security"] == []
    assert "security" not in doc["paths"]["/v1/episodes"]["get"]


BIG = 2**70


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/v1/episodes", {"task_id": "t", "metadata": {"n": [BIG]}}, "metadata"),
        ("/v1/episodes", {"task_id": "t", "context": {"features": {"n": BIG}}}, "context.features"),
        (
            "/v1/episodes",
            {"task_id": "t", "steps": [{"action": "a", "input": BIG}]},
            "steps[0].input",
        ),
        ("/v1/memories", {"type": "fact", "content": "c", "metadata": {"n": BIG}}, "metadata"),
        ("/v1/rewards", {"task_id": "t", "signals": {"tokens_used": BIG}}, "signals.tokens_used"),
    ],
)
async def test_integers_beyond_64_bits_are_invalid(
    client: httpx.AsyncClient, path: str, body: dict[str, Any], field: str
) -> None:
    r = await client.post(path, json=body, headers={"Idempotency-Key": "k1"})
    assert_invalid(r, field)


@pytest.mark.parametrize(
    ("path", "raw", "field"),
    [
        (
            "/v1/episodes",
            '{"task_id": "t", "steps": [{"action": "a", "output": NaN}]}',
            "steps[0].output",
        ),
        ("/v1/memories", '{"type": "fact", "content": "c", "confidence": NaN}', "confidence"),
        (
            "/v1/rewards",
            '{"task_id": "t", "signals": {"latency_ms": Infinity}}',
            "signals.latency_ms",
        ),
    ],
)
async def test_nan_and_infinity_are_not_json(
    client: httpx.AsyncClient, path: str, raw: str, field: str
) -> None:
    headers = {"Content-Type": "application/json"}
    assert_invalid(await client.post(path, content=raw, headers=headers), field)
    assert (await client.get("/v1/rewards")).json()["items"] == []


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/v1/episodes", {"task_id": "a\u0000b"}, "task_id"),
        (
            "/v1/episodes",
            {"task_id": "t", "steps": [{"action": "a", "input": {"k\u0000": 1}}]},
            "steps[0].input.k\u0000",
        ),
        ("/v1/memories", {"type": "fact", "content": "x\u0000y"}, "content"),
        ("/v1/memories/search", {"query": "x\u0000y"}, "query"),
        ("/v1/recall", {"task": "x\u0000y", "token_budget": 10}, "task"),
        ("/v1/rewards", {"task_id": "a\u0000b", "value": 1}, "task_id"),
    ],
)
async def test_nul_characters_are_refused_before_any_write(
    client: httpx.AsyncClient, path: str, body: dict[str, Any], field: str
) -> None:
    # PostgreSQL stores NUL in neither text nor jsonb; refused alike on every backend, and
    # the answer names the field that holds it.
    assert_invalid(await client.post(path, json=body), field)
    assert (await client.get("/v1/episodes")).json()["items"] == []
    assert (await client.get("/v1/memories")).json()["items"] == []


async def test_nul_in_a_query_is_refused_and_an_escaped_backslash_is_text(
    client: httpx.AsyncClient,
) -> None:
    for path in ("/v1/episodes", "/v1/patterns", "/v1/rewards", "/health"):
        assert_invalid(await client.get(path, params={"task_id": "a\u0000b"}), "task_id")
    text = "a literal \\u0000 is six characters"
    r = await client.post("/v1/memories", json={"type": "fact", "content": text})
    assert r.status_code == 201, r.text
    assert r.json()["content"] == text


async def test_min_support_beyond_32_bits_is_invalid(client: httpx.AsyncClient) -> None:
    r = await client.get("/v1/patterns", params={"min_support": 2**40})
    assert_invalid(r, "min_support")


async def test_every_operation_documents_its_422_in_the_error_shape(
    client: httpx.AsyncClient,
) -> None:
    doc = (await client.get("/openapi.json")).json()
    error = {"$ref": "#/components/schemas/ValidationErrorModel"}
    for operations in doc["paths"].values():
        for operation in operations.values():
            assert operation["responses"]["422"]["content"]["application/json"]["schema"] == error
    assert "HTTPValidationError" not in doc["components"]["schemas"]


@pytest.mark.parametrize("when", [1700000000, 2.2e-66, "1700000000", " 1.5e3 "])
async def test_numbers_are_not_timestamps(client: httpx.AsyncClient, when: Any) -> None:
    # Read as Unix times they were accepted (2.2e-66 as 1970), against the document.
    assert_invalid(await client.post("/v1/reflect", json={"since": when}), "since")
    r = await client.post("/v1/episodes", json={"task_id": "t", "started_at": when})
    assert_invalid(r, "started_at")
    assert_invalid(await client.get("/v1/episodes", params={"since": str(when)}), "since")
    r = await client.post("/v1/reflect", json={"since": "2026-01-31T12:00+01:00"})
    assert r.status_code == 200, r.text
