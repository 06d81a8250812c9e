"""Enqueueing background work and reading the queue. Never commits."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.config import Learning
from app.core.errors import NotFound
from app.core.ids import uuid7
from app.models import Job
from app.repositories.jobs import JobRepository
from app.schemas.learning import JobPage, JobRead
from app.services import pagination

EVOLVE = "skills.evolve"
LEARN = "episode.learn"
CREDIT = "reward.credit"
PASS = "reflect.pass"
POLICY_TRAIN = "policy.train"
POLICY_EVALUATE = "policy.evaluate"
POLICY_CHECK = "policy.check"
KINDS = (LEARN, CREDIT, EVOLVE, PASS, POLICY_TRAIN, POLICY_EVALUATE, POLICY_CHECK)


def job_row(
    namespace: str,
    kind: str,
    *,
    key: str,
    payload: dict[str, Any],
    now: datetime,
    max_attempts: int,
) -> dict[str, Any]:
    return {
        "namespace": namespace,
        "id": uuid7(),
        "kind": kind,
        "key": key,
        "payload": payload,
        "status": "queued",
        "attempts": 0,
        "max_attempts": max_attempts,
        "run_after": now,
        "locked_until": None,
        "claimed_by": None,
        "last_error": None,
        "result": None,
        "created_at": now,
        "updated_at": now,
        "finished_at": None,
    }


async def enqueue(
    session: AsyncSession,
    namespace: str,
    kind: str,
    *,
    key: str,
    payload: dict[str, Any],
    settings: Learning,
) -> Job | dict[str, Any]:
    """Queue a job, or fold its payload into the same job that has not started yet."""
    repo = JobRepository(session)
    waiting = await repo.waiting(namespace, kind, key)
    if waiting is not None:
        merged = dict(waiting.payload)
        for name, value in payload.items():
            if isinstance(value, list):
                merged[name] = sorted({*merged.get(name, []), *value})
            else:
                merged[name] = value
        waiting.payload = merged
        return waiting
    (row,) = await enqueue_new(
        session, [(namespace, kind, key, payload)], max_attempts=settings.max_attempts
    )
    return row


async def enqueue_new(
    session: AsyncSession,
    jobs: list[tuple[str, str, str, dict[str, Any]]],
    *,
    max_attempts: int,
) -> list[dict[str, Any]]:
    """Queue jobs with nothing waiting to fold into, (namespace, kind, key, payload) each,
    in one insert: the writer's learning jobs for the episodes a batch completes."""
    now = datetime.now(UTC)
    rows = [
        job_row(ns, kind, key=key, payload=payload, now=now, max_attempts=max_attempts)
        for ns, kind, key, payload in jobs
    ]
    await JobRepository(session).insert_many(rows)
    return rows


def to_read(job: Job) -> JobRead:
    return JobRead.model_validate(job, from_attributes=True)


class JobService:
    def __init__(self, session: AsyncSession) -> None:
        self.repo = JobRepository(session)

    async def depth(self) -> list[tuple[str, str, int]]:
        """(status, kind, count) of the jobs not done, over all namespaces."""
        return await self.repo.depth()

    async def get(self, namespace: str, job_id: str) -> JobRead:
        job = await self.repo.get(namespace, job_id)
        if job is None:
            raise NotFound(f"job {job_id!r} not found")
        return to_read(job)

    async def list(
        self,
        namespace: str,
        *,
        status: str | None,
        kind: str | None,
        cursor: str | None,
        limit: int,
    ) -> JobPage:
        rows, next_cursor = await pagination.page(
            lambda key, n: self.repo.page(namespace, status=status, kind=kind, before=key, limit=n),
            cursor=cursor,
            limit=limit,
        )
        counts = await self.repo.counts(namespace)
        return JobPage(items=[to_read(j) for j in rows], counts=counts, next_cursor=next_cursor)
