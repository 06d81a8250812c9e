"""Job leases owned by one worker: renewed while it runs them, taken by another worker when
they pass, given back when it stops, and never finished by a worker that lost them."""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.core.config import Learning, Settings
from app.db.backends import backend_of, create_engine
from app.db.engine import Transactions
from app.db.migrate import migrate
from app.models import Job
from app.repositories.jobs import JobRepository
from app.services.operations.jobs import job_row
from app.worker.context import JobContext
from app.worker.handlers import REGISTRY, Registered
from app.worker.lease import HOST
from app.worker.runner import Worker
from tests.conftest import ON_POSTGRES

WAIT = "test.wait"


@pytest.fixture
async def transactions(settings: Settings) -> AsyncIterator[Transactions]:
    engine = create_engine(settings)
    await migrate(engine)
    try:
        yield Transactions(engine, one_writer=backend_of(engine).one_writer)
    finally:
        await engine.dispose()


class Gates:
    """Jobs of kind test.wait in a namespace with a gate wait for it to open, inside their
    transaction; `ran` lists the namespaces whose jobs ran."""

    def __init__(self) -> None:
        self.closed: dict[str, asyncio.Event] = {}
        self.ran: list[str] = []

    def close(self, namespace: str) -> asyncio.Event:
        self.closed[namespace] = asyncio.Event()
        return self.closed[namespace]

    async def handler(
        self, session: AsyncSession, namespace: str, jobs: Sequence[Job], context: JobContext
    ) -> dict[str, Any]:
        if namespace in self.closed:
            await self.closed[namespace].wait()
        self.ran.append(namespace)
        return {}


@pytest.fixture
def gates(monkeypatch: pytest.MonkeyPatch) -> Gates:
    found = Gates()
    monkeypatch.setitem(REGISTRY, WAIT, Registered(found.handler))
    return found


async def queue(transactions: Transactions, *namespaces: str) -> None:
    now = datetime.now(UTC)
    rows = [job_row(ns, WAIT, key=ns, payload={}, now=now, max_attempts=5) for ns in namespaces]
    async with transactions.write() as session:
        await JobRepository(session).insert_many(rows)


async def jobs(transactions: Transactions) -> list[Job]:
    async with transactions.read() as session:
        return list(await session.scalars(select(Job).order_by(Job.namespace)))


async def test_a_job_whose_lease_passed_is_run_only_by_the_worker_that_took_it(
    transactions: Transactions, gates: Gates
) -> None:
    await queue(transactions, "a")
    first = Worker(transactions, Learning(lease_s=0.05))
    second = Worker(transactions, Learning())
    taken = await first.claim(limit=10)
    # The first worker stalls past its lease before running the job (its process was
    # stopped, say: no heartbeat ran); the second claims it.
    await asyncio.sleep(0.1)
    taken_again = await second.claim(limit=10)
    assert taken_again == taken
    # The first one comes back and runs what it claimed: no longer its own, it leaves it.
    await first.run_claimed(taken)
    assert gates.ran == []
    await second.run_claimed(taken_again)
    assert gates.ran == ["a"]
    [job] = await jobs(transactions)
    assert (job.status, job.claimed_by, job.attempts) == ("done", second.id, 2)


@pytest.mark.skipif(
    not ON_POSTGRES,
    reason="SQLite: a job's transaction holds the one write lock, so no claim can interleave",
)
async def test_the_heartbeat_keeps_the_jobs_of_a_long_batch(
    transactions: Transactions, gates: Gates
) -> None:
    """A batch that runs longer than the lease: the job being run is locked, the others
    are renewed by the heartbeat, so another worker takes none of them."""
    await queue(transactions, "a", "b")
    gate = gates.close("a")
    first = Worker(transactions, Learning(lease_s=0.3, heartbeat_s=0.1))
    second = Worker(transactions, Learning(lease_s=0.3))
    batch = asyncio.create_task(first.run_once())
    for _ in range(10):  # 1 s: three leases
        await asyncio.sleep(0.1)
        assert await second.run_once() == 0
    gate.set()
    assert await batch == 2
    found = await jobs(transactions)
    assert [(j.status, j.claimed_by, j.attempts) for j in found] == [("done", first.id, 1)] * 2


async def test_a_stopping_worker_gives_back_the_jobs_it_did_not_run(
    transactions: Transactions, gates: Gates
) -> None:
    await queue(transactions, "a", "b")
    gates.close("a")
    worker = Worker(transactions, Learning(poll_interval_s=0.05))
    task = asyncio.create_task(worker.run())
    for _ in range(200):
        if any(j.status == "running" for j in await jobs(transactions)):
            break
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.1)  # the first job's transaction is waiting at the gate
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    found = await jobs(transactions)
    # Both due again at once for another worker, the interrupted attempt not counted.
    assert [(j.status, j.claimed_by, j.attempts) for j in found] == [("queued", None, 0)] * 2
    assert gates.ran == []
    assert all(j.run_after <= datetime.now(UTC) for j in found)


async def test_a_starting_worker_takes_back_only_the_jobs_of_workers_known_gone(
    transactions: Transactions,
) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    alive = Worker(transactions, Learning())
    owners = {
        "dead": f"{HOST}:{dead.pid}:0badc0de",  # a process of this host that has exited
        "earlier": f"{HOST}:{os.getpid()}:0badc0de",  # this pid, none of its workers
        "unowned": None,  # claimed before jobs had owners
        "elsewhere": f"another-host:{os.getpid()}:0badc0de",
        "alive": alive.id,
        "parent": f"{HOST}:{os.getppid()}:0badc0de",
    }
    await queue(transactions, *owners)
    later = datetime.now(UTC) + timedelta(hours=1)
    async with transactions.write() as session:
        for namespace, owner in owners.items():
            await session.execute(
                update(Job)
                .where(Job.namespace == namespace)
                .values(status="running", attempts=1, claimed_by=owner, locked_until=later)
            )
    assert await Worker(transactions, Learning()).recover() == 3
    status = {j.namespace: j.status for j in await jobs(transactions)}
    assert status == {
        "dead": "queued",
        "earlier": "queued",
        "unowned": "queued",
        "elsewhere": "running",
        "alive": "running",
        "parent": "running",
    }


def test_the_heartbeat_defaults_to_a_third_of_the_lease_and_must_be_shorter() -> None:
    assert Learning(lease_s=30).heartbeat_interval_s == 10
    assert Learning(lease_s=30, heartbeat_s=5).heartbeat_interval_s == 5
    with pytest.raises(ValueError, match="shorter than the lease"):
        Learning(lease_s=30, heartbeat_s=30)


async def test_a_job_that_takes_its_worker_down_each_time_is_dead_lettered(
    transactions: Transactions, gates: Gates
) -> None:
    """A poison job: each worker that claims it stops without a word (a crash, a kill),
    so no failure is ever recorded. Once its attempts are used up, the next worker buries
    it instead of running it (and going down with it), and says why."""
    row = job_row("p", WAIT, key="p", payload={}, now=datetime.now(UTC), max_attempts=2)
    async with transactions.write() as session:
        await JobRepository(session).insert_many([row])
    for _ in range(2):  # two workers take it and die with it (their leases pass)
        taken = await Worker(transactions, Learning(lease_s=0.05)).claim(limit=1)
        assert [c[0] for c in taken] == ["p"]
        await asyncio.sleep(0.1)
    [job] = await jobs(transactions)
    assert (job.status, job.attempts) == ("running", 2)
    await queue(transactions, "q")
    survivor = Worker(transactions, Learning())
    assert await survivor.run_once() == 1  # "q" ran; "p" did not
    assert gates.ran == ["q"]
    found = {j.namespace: j for j in await jobs(transactions)}
    assert (found["p"].status, found["q"].status) == ("dead", "done")
    assert "its worker stopped while running it" in (found["p"].last_error or "")
    assert await survivor.run_once() == 0  # and it stays buried
