"""The job queue under a worker claiming jobs while requests fold work into them."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import httpx
import pytest
from sqlalchemy import select

from app.core.config import Learning, Settings
from app.db.backends import create_engine
from app.db.engine import Transactions, create_sessionmaker
from app.db.migrate import migrate
from app.models import Job
from app.repositories.jobs import JobRepository
from app.services.operations.jobs import CREDIT, enqueue, job_row
from app.worker.runner import Worker
from tests.conftest import ON_POSTGRES


@pytest.mark.skipif(
    not ON_POSTGRES,
    reason="SQLite and libSQL run one write transaction at a time: the claim cannot interleave",
)
async def test_work_folded_into_a_job_is_not_lost_to_a_concurrent_claim(
    settings: Settings,
) -> None:
    engine = create_engine(settings)
    await migrate(engine)
    sessions = create_sessionmaker(engine, write=True)
    try:
        async with sessions() as session:
            payload = {"episode_ids": ["e1"]}
            row = job_row("ns", CREDIT, key="credit", payload=payload, now=now(), max_attempts=5)
            await JobRepository(session).insert_many([row])
            await session.commit()
        async with sessions() as request, sessions() as worker:
            # A reward's request finds the waiting credit job and folds its episode in ...
            await enqueue(
                request,
                "ns",
                CREDIT,
                key="credit",
                payload={"episode_ids": ["e2"]},
                settings=Learning(),
            )
            # ... while the worker claims due jobs and reads what they ask for.
            claimed = await JobRepository(worker).claim(
                now=now(), lease_s=60, limit=10, worker="w1"
            )
            await worker.commit()
            seen = {
                eid
                for _, jid, _ in claimed
                for eid in (await worker.get_one(Job, ("ns", jid))).payload["episode_ids"]
            }
            await request.commit()
        async with sessions() as session:
            jobs = list(await session.scalars(select(Job)))
        waiting = {eid for j in jobs if j.status == "queued" for eid in j.payload["episode_ids"]}
        # Every episode is either in what the worker read, or still queued for a next claim.
        assert {"e1", "e2"} <= seen | waiting, (claimed, seen, jobs)
    finally:
        await engine.dispose()


def now() -> datetime:
    return datetime.now(UTC)


async def test_worker_stops_when_cancelled_as_it_is_woken(settings: Settings) -> None:
    """A cancellation that arrives in the same turn as a wake-up (a shutdown just as a
    commit wakes the worker) stops the worker; it used to be dropped, and the worker
    polled on while shutdown waited for it."""
    engine = create_engine(settings)
    await migrate(engine)
    worker = Worker(Transactions(engine), Learning(poll_interval_s=5.0))
    task = asyncio.create_task(worker.run())
    try:
        await asyncio.sleep(0.3)  # idle: nothing to do, waiting to be woken
        worker.wake()
        task.cancel()
        done, _ = await asyncio.wait([task], timeout=3)
        assert task in done
        assert task.cancelled()
    finally:
        task.cancel()
        await engine.dispose()


def test_every_kind_the_worker_runs_is_one_the_api_names() -> None:
    from typing import get_args

    from app.schemas.learning import JobKind
    from app.services.operations.jobs import KINDS
    from app.worker.handlers import REGISTRY

    assert set(get_args(JobKind)) == set(KINDS) == set(REGISTRY)


async def test_the_jobs_listing_filters_on_every_kind(client: httpx.AsyncClient) -> None:
    from typing import get_args

    from app.schemas.learning import JobKind

    for kind in get_args(JobKind):
        r = await client.get("/v1/jobs", params={"kind": kind})
        assert r.status_code == 200, (kind, r.text)
    r = await client.get("/v1/jobs", params={"kind": "nope"})
    assert r.status_code == 422
    assert r.json()["field"] == "kind"
