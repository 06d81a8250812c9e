"""GET /metrics: scraped after real requests, parsed with prometheus_client's parser."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from prometheus_client.parser import text_string_to_metric_families
from pydantic import SecretStr

from app.core.config import Settings
from app.main import create_app
from app.models import Job
from app.services.operations.jobs import job_row
from app.worker.runner import Worker
from tests.conftest import DB_KIND, auth, episode_body, running

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]
EPISODE = "/v1/episodes/{episode_id}"


async def scrape(client: httpx.AsyncClient, headers: dict[str, str] | None = None) -> Samples:
    r = await client.get("/metrics", headers=headers)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain; version=")
    samples: Samples = {}
    for family in text_string_to_metric_families(r.text):
        for s in family.samples:
            samples[(s.name, frozenset(s.labels.items()))] = s.value
    return samples


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def requests(samples: Samples, method: str, route: str, status: int) -> float:
    return value(
        samples, "engram_http_requests_total", method=method, route=route, status=str(status)
    )


def worker(app: FastAPI) -> Worker:
    state = app.state.engram
    return Worker(state.transactions, state.settings.learning, metrics=app.state.metrics)


async def test_requests_are_counted_under_their_route_template(client: httpx.AsyncClient) -> None:
    eid = (await client.post("/v1/episodes", json=episode_body())).json()["id"]
    assert (await client.get(f"/v1/episodes/{eid}")).status_code == 200
    assert (await client.get("/v1/episodes/ep_missing_one")).status_code == 404
    assert (await client.get("/v1/episodes/ep_missing_two")).status_code == 404
    assert (await client.get("/wp-admin/setup.php")).status_code == 404
    assert (await client.get("/v1/nothing/here")).status_code == 404
    samples = await scrape(client)

    assert requests(samples, "POST", "/v1/episodes", 201) == 1
    assert requests(samples, "GET", EPISODE, 200) == 1
    assert requests(samples, "GET", EPISODE, 404) == 2
    assert requests(samples, "GET", "unmatched", 404) == 2
    latency = "engram_http_request_duration_seconds_count"
    assert value(samples, latency, method="GET", route=EPISODE, status_class="4xx") == 2
    assert value(samples, latency, method="GET", route=EPISODE, status_class="2xx") == 1
    # Raw paths and ids never become label values.
    labels = {v for _, ls in samples for _, v in ls}
    assert not [v for v in labels if "missing" in v or "wp-admin" in v or eid in v]
    # The scrape itself is the one request in flight while the answer is built.
    assert value(samples, "engram_http_requests_in_flight") == 1
    assert value(samples, "process_resident_memory_bytes") > 0
    assert requests(await scrape(client), "GET", "/metrics", 200) == 1


async def test_an_ingest_fills_the_batch_histogram(client: httpx.AsyncClient) -> None:
    before = await scrape(client)
    bodies = [episode_body(f"task_{i}") for i in range(12)]
    replies = await asyncio.gather(*(client.post("/v1/episodes", json=b) for b in bodies))
    assert [r.status_code for r in replies] == [201] * 12
    after = await scrape(client)

    grew = value(after, "engram_ingest_batch_size_sum") - value(
        before, "engram_ingest_batch_size_sum"
    )
    batches = value(after, "engram_ingest_batch_size_count") - value(
        before, "engram_ingest_batch_size_count"
    )
    assert grew == 12  # one command per created episode
    assert 1 <= batches <= 12
    assert value(after, "engram_ingest_queue_depth") == 0


async def test_job_depth_reflects_queued_jobs(settings: Settings) -> None:
    settings.learning.worker = False
    settings.metrics_cache_s = 0
    app = create_app(settings)
    async with running(app) as client:
        empty = await scrape(client)
        assert value(empty, "engram_jobs", status="queued", kind="episode.learn") == 0
        for i in range(3):
            r = await client.post("/v1/episodes", json=episode_body(f"task_{i}"))
            assert r.status_code == 201
        queued = await scrape(client)
        assert value(queued, "engram_jobs", status="queued", kind="episode.learn") == 3
        assert value(queued, "engram_jobs", status="dead", kind="episode.learn") == 0

        await worker(app).drain()
        drained = await scrape(client)
        assert value(drained, "engram_jobs", status="queued", kind="episode.learn") == 0


async def test_job_depth_is_cached_between_scrapes(settings: Settings) -> None:
    settings.learning.worker = False
    settings.metrics_cache_s = 3600
    app = create_app(settings)
    async with running(app) as client:
        await scrape(client)
        assert (await client.post("/v1/episodes", json=episode_body())).status_code == 201
        cached = await scrape(client)
        assert value(cached, "engram_jobs", status="queued", kind="episode.learn") == 0


async def test_a_failed_job_counts_a_failure_and_a_dead_letter(settings: Settings) -> None:
    settings.learning.worker = False
    settings.metrics_cache_s = 0
    app = create_app(settings)
    async with running(app) as client:
        state = app.state.engram
        async with state.transactions.write() as session:
            row = job_row(
                "default",
                "skills.evolve",
                key="evolve",
                payload={"task_types": 5},  # not a list: the handler fails on it
                now=datetime.now(UTC),
                max_attempts=1,
            )
            await session.execute(Job.__table__.insert(), [row])
            await session.commit()
        await worker(app).run_once()
        samples = await scrape(client)
        assert value(samples, "engram_job_failures_total", kind="skills.evolve") == 1
        assert value(samples, "engram_job_dead_letters_total", kind="skills.evolve") == 1
        assert value(samples, "engram_jobs", status="dead", kind="skills.evolve") == 1


async def test_store_failures_are_counted_by_store(app: FastAPI, client: httpx.AsyncClient) -> None:
    eid = (await client.post("/v1/episodes", json=episode_body())).json()["id"]
    app.state.engram.blobs.close()
    assert (await client.post("/v1/episodes", json=episode_body("after"))).status_code == 503
    assert (await client.get(f"/v1/episodes/{eid}")).status_code == 503
    samples = await scrape(client)
    assert value(samples, "engram_store_errors_total", store="leveldb") == 2
    assert samples[("engram_store_errors_total", frozenset({("store", "sql")}))] == 0
    assert requests(samples, "GET", EPISODE, 503) == 1


async def test_recalls_count_candidates_and_selected(client: httpx.AsyncClient) -> None:
    for text in ("run the tests with pytest -x", "the tests need a database"):
        r = await client.post(
            "/v1/memories", json={"type": "fact", "content": text, "scope": {"level": "global"}}
        )
        assert r.status_code == 201, r.text
    r = await client.post("/v1/recall", json={"task": "run the tests", "token_budget": 500})
    assert r.status_code == 200, r.text
    chosen = len(r.json()["selected"])
    samples = await scrape(client)
    assert value(samples, "engram_recalls_total") == 1
    assert value(samples, "engram_recall_candidates_count") == 1
    assert value(samples, "engram_recall_candidates_sum") == 2
    assert value(samples, "engram_recall_selected_sum") == chosen


async def test_an_unhandled_error_is_a_500_counted_under_its_route(app: FastAPI) -> None:
    async def broken() -> None:
        raise RuntimeError("a defect")

    app.add_api_route("/v1/broken", broken)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://localhost"
    ) as client:
        r = await client.get("/v1/broken", headers={"X-Request-Id": "req-500"})
        assert r.status_code == 500
        assert r.json() == {"error": "InternalError", "detail": "internal error"}
        assert r.headers["x-request-id"] == "req-500"
        assert requests(await scrape(client), "GET", "/v1/broken", 500) == 1


async def test_metrics_need_an_operator_key_once_keys_exist(
    client: httpx.AsyncClient, make_key: Callable[..., Any]
) -> None:
    assert (await client.get("/metrics")).status_code == 200  # open mode on loopback
    agent = await make_key("tenant_a", "agent")
    admin = await make_key("tenant_b", "admin")
    operator = await make_key("tenant_c", "operator")
    assert (await client.get("/metrics")).status_code == 401
    assert (await client.get("/metrics", headers=auth(agent))).status_code == 403
    assert (await client.get("/metrics", headers=auth(admin))).status_code == 403
    samples = await scrape(client, auth(operator))
    # Tenants and keys are never label values.
    text = repr(sorted(samples))
    assert "tenant_" not in text
    assert operator not in text


async def test_the_metrics_token_opens_metrics_only(settings: Settings) -> None:
    settings.metrics_token = SecretStr("scrape-token-of-the-operator")
    app = create_app(settings)
    async with running(app) as client:
        async with app.state.engram.transactions.write() as session:
            from app.services.access.auth import Role, create_key

            await create_key(session, namespace="ns", role=Role.AGENT, name=None)
            await session.commit()
        token = auth("scrape-token-of-the-operator")
        assert (await client.get("/metrics")).status_code == 401
        assert (await client.get("/metrics", headers=auth("scrape-token-wrong"))).status_code == 401
        await scrape(client, token)
        assert (await client.get("/v1/episodes", headers=token)).status_code == 401


async def test_metrics_can_be_turned_off(settings: Settings) -> None:
    settings.metrics_enabled = False
    app = create_app(settings)
    async with running(app) as client:
        assert (await client.get("/metrics")).status_code == 404
        assert (await client.get("/health")).status_code == 200


async def test_each_app_has_its_own_registry(settings: Settings, tmp_path: Any) -> None:
    if not settings.database_url.startswith("sqlite"):
        pytest.skip("a second database is a second SQLite file")
    other = settings.model_copy(
        update={
            "database_url": f"sqlite+aiosqlite:///{tmp_path / 'other.db'}",
            "blob_dir": tmp_path / "other-blobs",
        }
    )
    first, second = create_app(settings), create_app(other)
    async with running(first) as a, running(second) as b:
        assert (await a.post("/v1/episodes", json=episode_body())).status_code == 201
        assert requests(await scrape(a), "POST", "/v1/episodes", 201) == 1
        assert requests(await scrape(b), "POST", "/v1/episodes", 201) == 0


def test_latency_buckets_are_cumulative_and_bounds_inclusive() -> None:
    from prometheus_client import generate_latest

    from app.core.metrics import Metrics

    metrics = Metrics()
    for seconds in (0.001, 0.0011, 0.3, 60.0):
        metrics.http.observe("GET", EPISODE, 200, seconds)
    metrics.http.observe("BREW", "unmatched", 405, 0.002)
    metrics.http.observe("PROPFIND", "unmatched", 405, 0.002)
    text = generate_latest(metrics.registry).decode()
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            samples[(s.name, frozenset(s.labels.items()))] = s.value
    labels = {"method": "GET", "route": EPISODE, "status_class": "2xx"}
    bucket = "engram_http_request_duration_seconds_bucket"
    assert value(samples, bucket, le="0.001", **labels) == 1
    assert value(samples, bucket, le="0.0025", **labels) == 2
    assert value(samples, bucket, le="0.25", **labels) == 2
    assert value(samples, bucket, le="0.5", **labels) == 3
    assert value(samples, bucket, le="10.0", **labels) == 3
    assert value(samples, bucket, le="+Inf", **labels) == 4
    assert value(samples, "engram_http_request_duration_seconds_sum", **labels) == pytest.approx(
        60.3021
    )
    # Unknown methods share one label value.
    assert requests(samples, "OTHER", "unmatched", 405) == 2


@pytest.mark.skipif(DB_KIND != "libsql", reason="round trips to a libSQL server")
async def test_round_trips_to_the_libsql_server_are_counted(client: httpx.AsyncClient) -> None:
    before = value(await scrape(client), "engram_db_round_trips_total")
    r = await client.post("/v1/memories", json={"type": "fact", "content": "counted trips"})
    assert r.status_code == 201, r.text
    found = await client.post("/v1/memories/search", json={"query": "counted"})
    assert found.status_code == 200, found.text
    after = value(await scrape(client), "engram_db_round_trips_total")
    # The write's group commit is one; the search and the scrapes' own reads a few more.
    assert 2 <= after - before < 20, (before, after)
