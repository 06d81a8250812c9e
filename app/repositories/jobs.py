"""SQL for the job queue: enqueue, claim with a lease, finish, fail, list."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import ColumnElement, Table, and_, delete, func, insert, or_, select, tuple_, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import Job
from app.repositories import keyset

JOBS = cast(Table, Job.__table__)
WAITING = ("queued", "failed")


def _due(now: datetime) -> ColumnElement[bool]:
    return or_(
        and_(Job.status.in_(WAITING), Job.run_after <= now),
        and_(Job.status == "running", Job.locked_until < now),
    )


class JobRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def insert_many(self, rows: Sequence[dict[str, Any]]) -> None:
        if rows:
            await self.session.execute(insert(JOBS), list(rows))

    async def waiting(self, namespace: str, kind: str, key: str) -> Job | None:
        """A job of this kind and key that has not started yet (so a new one is redundant).

        Locked (PostgreSQL) until the caller commits: work folded into it then cannot be
        lost to a worker that claims it in between, since claim() skips locked rows."""
        query = select(Job).where(
            Job.namespace == namespace,
            Job.kind == kind,
            Job.key == key,
            Job.status.in_(WAITING),
        )
        return (await self.session.scalars(query.limit(1).with_for_update())).first()

    async def any_due(self, *, now: datetime) -> bool:
        """Whether claim() would find something (a read, without taking the write lock)."""
        query = select(Job.id).where(_due(now)).limit(1)
        return (await self.session.scalars(query)).first() is not None

    async def claim(
        self, *, now: datetime, lease_s: float, limit: int
    ) -> list[tuple[str, str, str]]:
        """Take up to `limit` due jobs (and running ones whose lease has passed):
        their (namespace, id, kind)."""
        query = (
            select(Job.namespace, Job.id, Job.kind)
            .where(_due(now))
            .order_by(Job.run_after)
            .limit(limit)
        )
        # Where rows lock (PostgreSQL), concurrent workers skip each other's claims; SQLite
        # has one writer at a time and renders no FOR UPDATE.
        query = query.with_for_update(skip_locked=True)
        claimed = [(ns, jid, kind) for ns, jid, kind in await self.session.execute(query)]
        if not claimed:
            return []
        keys = [(ns, jid) for ns, jid, _ in claimed]
        await self.session.execute(
            update(JOBS)
            .where(tuple_(JOBS.c.namespace, JOBS.c.id).in_(keys))
            .values(
                status="running",
                attempts=JOBS.c.attempts + 1,
                locked_until=now + timedelta(seconds=lease_s),
                updated_at=now,
            )
        )
        return claimed

    async def purge_done(self, *, before: datetime) -> int:
        """Delete finished jobs (done) older than `before`; failed and dead ones stay."""
        result = await self.session.execute(
            delete(JOBS).where(JOBS.c.status == "done", JOBS.c.finished_at < before)
        )
        return int(getattr(result, "rowcount", 0) or 0)

    async def release_running(self, *, now: datetime) -> int:
        """Put every running job back in the queue (their worker is known to be gone)."""
        result = await self.session.execute(
            update(JOBS)
            .where(JOBS.c.status == "running")
            .values(status="queued", locked_until=None, run_after=now, updated_at=now)
        )
        return int(getattr(result, "rowcount", 0) or 0)

    async def finish(
        self, jobs: Sequence[Job], *, now: datetime, result: dict[str, Any] | None
    ) -> None:
        """Mark jobs done (one statement for the whole group)."""
        if not jobs:
            return
        namespace = jobs[0].namespace
        await self.session.execute(
            update(JOBS)
            .where(JOBS.c.namespace == namespace, JOBS.c.id.in_([j.id for j in jobs]))
            .values(
                status="done",
                finished_at=now,
                updated_at=now,
                locked_until=None,
                last_error=None,
                result=result,
            )
        )

    async def get_many(self, namespace: str, ids: Sequence[str]) -> list[Job]:
        found: list[Job] = []
        for start in range(0, len(ids), 500):
            query = select(Job).where(
                Job.namespace == namespace, Job.id.in_(list(ids[start : start + 500]))
            )
            found.extend(await self.session.scalars(query))
        return found

    async def fail(self, job: Job, *, error: str, now: datetime, retry_base_s: float) -> None:
        """Back off exponentially; dead-letter once the attempts are used up."""
        job.last_error = error[:2000]
        job.updated_at = now
        job.locked_until = None
        if job.attempts >= job.max_attempts:
            job.status = "dead"
            job.finished_at = now
        else:
            job.status = "failed"
            job.run_after = now + timedelta(seconds=retry_base_s * 2 ** (job.attempts - 1))
        await self.session.flush()

    async def depth(self) -> list[tuple[str, str, int]]:
        """Jobs not done, counted by status and kind over all namespaces (one grouped scan)."""
        query = (
            select(Job.status, Job.kind, func.count())
            .where(Job.status.in_((*WAITING, "running", "dead")))
            .group_by(Job.status, Job.kind)
        )
        return [(status, kind, count) for status, kind, count in await self.session.execute(query)]

    async def get(self, namespace: str, job_id: str) -> Job | None:
        return await self.session.get(Job, (namespace, job_id))

    async def page(
        self,
        namespace: str,
        *,
        status: str | None,
        kind: str | None,
        before: keyset.Key | None,
        limit: int,
    ) -> list[Job]:
        query = select(Job).where(Job.namespace == namespace)
        if status is not None:
            query = query.where(Job.status == status)
        if kind is not None:
            query = query.where(Job.kind == kind)
        if before is not None:
            query = query.where(keyset.before(Job.created_at, Job.id, before))
        query = query.order_by(Job.created_at.desc(), Job.id.desc()).limit(limit)
        return list(await self.session.scalars(query))

    async def counts(self, namespace: str) -> dict[str, int]:
        query = (
            select(Job.status, func.count()).where(Job.namespace == namespace).group_by(Job.status)
        )
        return dict((await self.session.execute(query)).all())
