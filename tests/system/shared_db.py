"""What the runs of several processes on one PostgreSQL database share: the episodes they
learn, what learning left in the database, a single process's learning of the same
episodes to compare with, and a lock that holds workers in the middle of a batch."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from sqlalchemy import func, select, text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.core.config import Learning, Settings
from app.db.backends import create_engine
from app.main import create_app
from app.models import EpisodeLearning, Job, Memory, Pattern, Skill
from app.worker.runner import Worker
from tests.conftest import running
from tests.server import reset_database

PROCEDURES = {
    "deploy": ["git.pull", "make.build", "make.test", "make.deploy"],
    "triage": ["logs.read", "grep.search", "issue.label", "issue.assign"],
    "migrate": ["db.backup", "alembic.upgrade", "db.check", "svc.restart"],
}
# Workers settings of these runs: a short lease so that a killed worker's jobs come back
# soon; lock waits long enough for a batch held by the test; no periodic pass (the runs
# compare the queue's work with one worker's).
WORKER_ENV = {
    "ENGRAM_LEARNING__LEASE_S": "3",
    "ENGRAM_LEARNING__PASS_INTERVAL_S": "0",
    "ENGRAM_LEARNING__POLL_INTERVAL_S": "0.2",
    "ENGRAM_DB_LOCK_TIMEOUT_MS": "60000",
    "ENGRAM_LOG_REQUESTS": "false",
}


def episodes(n: int) -> list[dict[str, Any]]:
    """`n` episodes of three task types. Each type's successes follow its procedure and its
    failures skip a step; every episode of a type has as many steps and takes as long, so
    an episode's reward does not depend on which others were stored when it was learned."""
    bodies = []
    for i in range(n):
        task_type = list(PROCEDURES)[i % 3]
        success = i % 5 != 4
        actions = PROCEDURES[task_type] if success else [*PROCEDURES[task_type][:2]] * 2
        steps = [
            {"tool": a.split(".")[0], "action": a.split(".")[1], "status": "ok", "latency_ms": 10}
            for a in actions
        ]
        bodies.append(
            {
                "id": f"ep-{i:05d}",
                "task_id": f"task-{i:05d}",
                "task_type": task_type,
                "context": {"domain": "ops", "tags": [task_type]},
                "steps": steps,
                "outcome": "success" if success else "failure",
            }
        )
    return bodies


async def post_all(settings: Settings, bodies: list[dict[str, Any]]) -> None:
    """Store the episodes through an API of this process whose own worker is off."""
    app = create_app(settings.model_copy(update={"learning": Learning(worker=False)}))
    async with running(app) as client:
        for body in bodies:
            r = await client.post("/v1/episodes", json=body)
            assert r.status_code == 201, r.text


async def learned_alone(settings: Settings, bodies: list[dict[str, Any]]) -> dict[str, Any]:
    """What one worker in one process learns from `bodies`, in a database emptied first."""
    await reset_database(settings.database_url)
    await post_all(settings, bodies)
    engine = create_engine(settings)
    try:
        from app.db.engine import Transactions

        await Worker(Transactions(engine), Learning()).drain()
        return await learning_state(engine)
    finally:
        await engine.dispose()


async def learning_state(engine: AsyncEngine) -> dict[str, Any]:
    """What learning left: each episode's record, the reflections, every pattern's counts
    and every skill's steps and support (without ids, times and evidence lists, which
    depend on the order the work was done in)."""
    async with engine.connect() as conn:
        records = {
            r.episode_id: (r.task_type, r.success, round(r.reward, 9), sorted(r.pattern_ids))
            for r in await conn.execute(select(EpisodeLearning))
        }
        reflections = await conn.scalar(
            select(func.count()).select_from(Memory).where(Memory.type == "reflection")
        )
        patterns = {
            p.id: (
                p.kind,
                p.task_type,
                p.support,
                p.successes,
                round(p.reward_sum, 6),
                round(p.lcb, 9),
            )
            for p in await conn.execute(select(Pattern))
        }
        skills = sorted(
            (s.task_type, s.name, s.status, [st["action"] for st in s.steps], s.support)
            for s in await conn.execute(select(Skill))
        )
    return {
        "records": records,
        "reflections": reflections,
        "patterns": patterns,
        "skills": skills,
    }


async def jobs(engine: AsyncEngine) -> list[Any]:
    async with engine.connect() as conn:
        return list(await conn.execute(select(Job)))


async def wait_drained(engine: AsyncEngine, *, timeout: float = 120.0) -> list[Any]:
    """Every job once none is queued, running or waiting to retry."""
    deadline = time.monotonic() + timeout
    while True:
        found = await jobs(engine)
        if all(j.status in ("done", "dead") for j in found):
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"jobs left: {sorted({(j.kind, j.status) for j in found})}")
        await asyncio.sleep(0.2)


@contextlib.asynccontextmanager
async def patterns_held(engine: AsyncEngine) -> AsyncIterator[None]:
    """Hold the patterns table against writes: a worker learning a batch stops at its
    first pattern write, in the middle of the batch's transaction, until the block ends."""
    async with engine.connect() as conn:
        await conn.execute(text("LOCK TABLE patterns IN EXCLUSIVE MODE"))
        try:
            yield
        finally:
            await conn.rollback()


async def wait_held(engine: AsyncEngine, worker_id: str, *, timeout: float = 60.0) -> int:
    """Wait until the worker has claimed jobs and waits at the held patterns table: the
    number of jobs it holds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        async with engine.connect() as conn:
            waiting = await conn.scalar(
                text(
                    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                    "AND query LIKE 'INSERT INTO patterns%'"
                )
            )
            held = await conn.scalar(
                select(func.count())
                .select_from(Job)
                .where(Job.status == "running", Job.claimed_by == worker_id)
            )
        if held and waiting:
            return int(held)
        await asyncio.sleep(0.05)
    raise AssertionError(f"worker {worker_id} did not stop at the held table")


async def running_of(engine: AsyncEngine, worker_id: str) -> list[str]:
    """The ids of the jobs the worker holds."""
    async with engine.connect() as conn:
        query = select(Job.id).where(Job.status == "running", Job.claimed_by == worker_id)
        return list(await conn.scalars(query))


async def wait_claimed(engine: AsyncEngine, worker_id: str, *, timeout: float = 30.0) -> None:
    """Wait until the worker holds jobs."""
    deadline = time.monotonic() + timeout
    while not await running_of(engine, worker_id):
        if time.monotonic() > deadline:
            raise AssertionError(f"worker {worker_id} claimed nothing")
        await asyncio.sleep(0.01)


def logs(*paths: Path) -> str:
    return "\n".join(p.read_text(errors="replace")[-3000:] for p in paths if p.exists())
