"""SQL for the job queue: enqueue, claim under a lease owned by one worker, renew it,
finish, fail, give back, list."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import (
    ColumnElement,
    Table,
    and_,
    case,
    delete,
    func,
    insert,
    or_,
    select,
    tuple_,
    update,
)
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import Job
from app.repositories import keyset

JOBS = cast(Table, Job.__table__)
WAITING = ("queued", "failed")
Key = tuple[str, str]  # (namespace, id)
Claimed = tuple[str, str, str]  # (namespace, id, kind)
# A job whose worker stopped at each attempt, buried (bury_exhausted): its last error.
BURIED = "its worker stopped while running it at each attempt (a crash or a kill): not run again"


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

    async def bury_exhausted(self, *, now: datetime) -> list[Claimed]:
        """Dead-letter the due jobs whose attempts are used up: only a job whose worker
        stopped while running it (a crash, a kill: no failure was recorded) is due again
        so, and a job that takes its worker down each time would otherwise be claimed,
        and take the next worker down, forever. Their (namespace, id, kind)."""
        query = (
            select(Job.namespace, Job.id, Job.kind)
            .where(_due(now), Job.attempts >= Job.max_attempts)
            .with_for_update(skip_locked=True)
        )
        buried = [(ns, jid, kind) for ns, jid, kind in await self.session.execute(query)]
        await self._set(
            [(ns, jid) for ns, jid, _ in buried],
            status="dead",
            last_error=BURIED,
            locked_until=None,
            claimed_by=None,
            finished_at=now,
            updated_at=now,
        )
        return buried

    async def _set(self, keys: Sequence[Key], **values: Any) -> None:
        """Set `values` on the jobs of `keys`, 500 keys a statement."""
        for start in range(0, len(keys), 500):
            await self.session.execute(
                update(JOBS)
                .where(tuple_(JOBS.c.namespace, JOBS.c.id).in_(list(keys[start : start + 500])))
                .values(**values)
            )

    async def claim(
        self, *, now: datetime, lease_s: float, limit: int, worker: str
    ) -> list[Claimed]:
        """Take up to `limit` due jobs (and running ones whose lease has passed) for
        `worker`: their (namespace, id, kind)."""
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
                claimed_by=worker,
                updated_at=now,
            )
        )
        return claimed

    async def payloads(self, namespace: str, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The payloads of these jobs, read without a lock (what a job prepares from)."""
        query = select(Job.id, Job.payload).where(Job.namespace == namespace, Job.id.in_(list(ids)))
        return {row.id: row.payload for row in await self.session.execute(query)}

    async def owned(self, namespace: str, ids: Sequence[str], *, worker: str) -> list[Job]:
        """The jobs among `ids` that `worker` still holds (running, claimed by it last),
        locked until the transaction ends (PostgreSQL: a claim skips them meanwhile, and a
        worker that lost one to a later claim finds it is no longer its own)."""
        found: list[Job] = []
        for start in range(0, len(ids), 500):
            query = (
                select(Job)
                .where(
                    Job.namespace == namespace,
                    Job.id.in_(list(ids[start : start + 500])),
                    Job.status == "running",
                    Job.claimed_by == worker,
                )
                .order_by(Job.id)
                .with_for_update()
            )
            found.extend(await self.session.scalars(query))
        return found

    async def _held(self, keys: Sequence[Key], worker: str) -> list[Key]:
        """Of `keys`, those `worker` holds, locked; rows a job's transaction has locked are
        skipped (it is running them: no claim can take them meanwhile)."""
        held: list[Key] = []
        for start in range(0, len(keys), 500):
            query = (
                select(Job.namespace, Job.id)
                .where(
                    tuple_(Job.namespace, Job.id).in_(list(keys[start : start + 500])),
                    Job.status == "running",
                    Job.claimed_by == worker,
                )
                .with_for_update(skip_locked=True)
            )
            held.extend((ns, jid) for ns, jid in await self.session.execute(query))
        return held

    async def renew(
        self, keys: Sequence[Key], *, worker: str, now: datetime, lease_s: float
    ) -> int:
        """Push back the lease of the jobs among `keys` that `worker` still holds."""
        held = await self._held(keys, worker)
        for start in range(0, len(held), 500):
            await self.session.execute(
                update(JOBS)
                .where(tuple_(JOBS.c.namespace, JOBS.c.id).in_(held[start : start + 500]))
                .values(locked_until=now + timedelta(seconds=lease_s))
            )
        return len(held)

    async def give_back(self, keys: Sequence[Key], *, worker: str, now: datetime) -> int:
        """Queue again the jobs among `keys` that `worker` holds but will not run (it is
        stopping): due at once, their claim not counted as an attempt."""
        held = await self._held(keys, worker)
        await self._set(
            held,
            status="queued",
            attempts=case((JOBS.c.attempts > 0, JOBS.c.attempts - 1), else_=0),
            locked_until=None,
            claimed_by=None,
            run_after=now,
            updated_at=now,
        )
        return len(held)

    async def running_owners(self) -> list[str | None]:
        """The workers that hold running jobs (None: claimed before jobs had owners)."""
        query = select(Job.claimed_by).where(Job.status == "running").distinct()
        return list(await self.session.scalars(query))

    async def release_claims(self, owners: Sequence[str | None], *, now: datetime) -> int:
        """Queue again the running jobs of these workers (known to be gone), due at once;
        rows a job's transaction has locked are left to it."""
        named = [o for o in owners if o is not None]
        owner: ColumnElement[bool] = JOBS.c.claimed_by.in_(named)
        if None in owners:
            owner = or_(owner, JOBS.c.claimed_by.is_(None))
        query = (
            select(JOBS.c.namespace, JOBS.c.id)
            .where(JOBS.c.status == "running", owner)
            .with_for_update(skip_locked=True)
        )
        keys = [(ns, jid) for ns, jid in await self.session.execute(query)]
        await self._set(
            keys, status="queued", locked_until=None, claimed_by=None, run_after=now, updated_at=now
        )
        return len(keys)

    async def purge_done(self, *, before: datetime) -> int:
        """Delete finished jobs (done) older than `before`; failed and dead ones stay."""
        result = await self.session.execute(
            delete(JOBS).where(JOBS.c.status == "done", JOBS.c.finished_at < before)
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
