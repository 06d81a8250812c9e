"""Per-key rate limits: 429 with Retry-After, one key's use never slows another's."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from fastapi import FastAPI

from app.core.config import RateLimit, Settings
from app.main import create_app
from app.services.access.ratelimit import RateLimiter
from tests.conftest import auth, running


@pytest.fixture
async def limited(settings: Settings) -> AsyncIterator[tuple[httpx.AsyncClient, FastAPI]]:
    # A slow refill (one token per 100 s) so that no token comes back during the test.
    settings.rate_limit = RateLimit(
        per_second=0.01, burst=5, auth_failures_per_second=0.01, auth_failures_burst=3
    )
    app = create_app(settings)
    async with running(app) as client:
        yield client, app


async def test_a_key_over_its_rate_gets_429_with_retry_after(
    limited: tuple[httpx.AsyncClient, FastAPI],
) -> None:
    client, app = limited
    from app.services.access.auth import Role, create_key

    async with app.state.engram.transactions.write() as session:
        _, first = await create_key(session, namespace="a", role=Role.AGENT, name=None)
        _, second = await create_key(session, namespace="a", role=Role.AGENT, name=None)
        await session.commit()

    statuses = [
        (await client.get("/v1/memories", headers=auth(first))).status_code for _ in range(5)
    ]
    assert statuses == [200] * 5
    r = await client.post("/v1/memories", json={"content": "x"}, headers=auth(first))
    assert r.status_code == 429, r.text
    body = r.json()
    assert body["error"] == "RateLimited"
    assert int(r.headers["retry-after"]) >= 1
    assert body["retry_after_s"] == int(r.headers["retry-after"])
    # Nothing was written by the refused request.
    r = await client.get("/v1/memories", headers=auth(second))
    assert r.status_code == 200
    assert r.json()["items"] == []
    # The other key of the same namespace has its own bucket; health is never limited.
    assert (await client.get("/health")).status_code == 200


async def test_wrong_keys_from_one_address_become_429(
    limited: tuple[httpx.AsyncClient, FastAPI],
) -> None:
    client, app = limited
    from app.services.access.auth import Role, create_key

    async with app.state.engram.transactions.write() as session:
        _, good = await create_key(session, namespace="a", role=Role.AGENT, name=None)
        await session.commit()
    wrong = [
        (await client.get("/v1/memories", headers=auth(f"egk_wrong{i}"))).status_code
        for i in range(5)
    ]
    assert wrong == [401, 401, 401, 429, 429]
    # A valid key from the same address still works: only failures are counted.
    assert (await client.get("/v1/memories", headers=auth(good))).status_code == 200


def test_token_bucket_refills_at_its_rate() -> None:
    limiter = RateLimiter(per_second=2.0, burst=2)
    assert limiter.wait_s("k", now=0.0) == 0
    assert limiter.wait_s("k", now=0.0) == 0
    assert limiter.wait_s("k", now=0.0) == pytest.approx(0.5)
    assert limiter.wait_s("k", now=0.5) == 0  # one token back after 1/rate seconds
    assert limiter.wait_s("k", now=0.5) > 0
    assert limiter.wait_s("other", now=0.5) == 0
    assert limiter.wait_s("k", now=100.0) == 0  # refills to the burst, not beyond
    assert limiter.wait_s("k", now=100.0) == 0
    assert limiter.wait_s("k", now=100.0) > 0


def test_rate_limit_off() -> None:
    limiter = RateLimiter(per_second=0, burst=1)
    assert all(limiter.wait_s("k", now=0.0) == 0 for _ in range(1000))


def test_bucket_table_is_bounded() -> None:
    limiter = RateLimiter(per_second=1.0, burst=1, max_buckets=3)
    for name in "abcde":
        limiter.wait_s(name, now=0.0)
    assert len(limiter._buckets) == 3
