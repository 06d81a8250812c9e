"""The background worker: claims due jobs, runs them, retries with backoff.

Jobs are claimed in batches under a lease owned by this worker (app/worker/lease.py),
renewed while it holds them; jobs of one kind and namespace run together in one
transaction that first checks (and locks) that the worker still holds them and ends by
marking them done, so a job's effects and its completion commit together (a crash loses
neither half alone, a job claimed again after a crash finds its work not done, and a
worker whose lease passed leaves the job to the worker that took it). When a batch
fails, each of its jobs runs on its own so that one bad job cannot hold back the others;
a failing job is retried with exponential backoff and dead-lettered after
`max_attempts`. Several workers, in one process or many, may share a database.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.config import Learning
from app.core.metrics import Metrics
from app.db.engine import Transactions
from app.models import Job
from app.repositories.episode_learning import EpisodeLearningRepository
from app.repositories.jobs import Claimed, JobRepository, Key
from app.worker.context import JobContext
from app.worker.handlers import REGISTRY
from app.worker.lease import gone, heartbeat, new_worker_id, stopped

log = logging.getLogger("engram.worker")
DEFER_CHECK_S = 0.05


def _order(kind: str) -> int:
    registered = REGISTRY.get(kind)
    return registered.order if registered is not None else 9


class Worker:
    def __init__(
        self,
        transactions: Transactions,
        settings: Learning,
        *,
        pressure: Callable[[], bool] | None = None,
        batch_size: int | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        self.transactions = transactions
        self.metrics = metrics
        self.batch_size = batch_size or settings.batch_size
        self.pressure = pressure or (lambda: False)
        self.settings = settings
        # Kept between jobs for the worker's life.
        self.context = JobContext(settings)
        self.id = new_worker_id()
        # Jobs claimed and not yet run (or given up): the heartbeat renews their leases.
        self._held: set[Key] = set()
        self._wake = asyncio.Event()
        self._last_pass = 0.0
        self._busy_since: float | None = None

    def wake(self) -> None:
        self._wake.set()

    def session(self) -> contextlib.AbstractAsyncContextManager[AsyncSession]:
        """A job's write transaction, committed with the job's completion."""
        return self.transactions.write()

    def reader(self) -> contextlib.AbstractAsyncContextManager[AsyncSession]:
        return self.transactions.read()

    async def recover(self) -> int:
        """At start: queue again at once the running jobs of workers known to be gone
        (lease.gone: a process of this host that no longer runs); the jobs of any other
        worker come back when their lease passes. Not every running job: several processes
        may serve a database, and that would take jobs from workers that are running them."""
        async with self.session() as session:
            repo = JobRepository(session)
            owners = [o for o in await repo.running_owners() if gone(o)]
            return await repo.release_claims(owners, now=datetime.now(UTC)) if owners else 0

    async def run_once(self, *, limit: int | None = None) -> int:
        """Claim one batch of due jobs and run it; the number of jobs handled."""
        async with self.reader() as session:
            if not await JobRepository(session).any_due(now=datetime.now(UTC)):
                return 0
        claimed = await self.claim(limit=limit or self.batch_size)
        await self.run_claimed(claimed)
        return len(claimed)

    async def claim(self, *, limit: int) -> list[Claimed]:
        """Take up to `limit` due jobs: this worker's until their lease passes."""
        now = datetime.now(UTC)
        async with self.session() as session:
            repo = JobRepository(session)
            buried = await repo.bury_exhausted(now=now)
            claimed = await repo.claim(
                now=now, lease_s=self.settings.lease_s, limit=limit, worker=self.id
            )
        for namespace, job_id, kind in buried:
            log.error(
                "job dead-lettered: its worker stopped while running it at each attempt",
                extra={"job_id": job_id, "namespace": namespace, "kind": kind},
            )
            if self.metrics is not None:
                self.metrics.job_failed(kind, dead=True)
        self._held.update((namespace, job_id) for namespace, job_id, _ in claimed)
        return claimed

    async def run_claimed(self, claimed: list[Claimed]) -> None:
        """Run jobs this worker claimed, renewing their leases meanwhile (those it no
        longer holds are left to the worker that took them)."""
        groups: dict[tuple[str, str], list[str]] = {}
        for namespace, job_id, kind in claimed:
            groups.setdefault((namespace, kind), []).append(job_id)
        try:
            async with heartbeat(self._renew, self.settings.heartbeat_interval_s):
                for (namespace, kind), ids in sorted(groups.items(), key=lambda g: _order(g[0][1])):
                    await self._run_group(namespace, kind, ids)
                    self._held.difference_update((namespace, job_id) for job_id in ids)
        except Exception:
            # Not even recorded as failed (the database went away): their lease runs out.
            # (Cancelled, the worker is stopping and gives them back.)
            self._held.difference_update((namespace, job_id) for namespace, job_id, _ in claimed)
            raise

    async def _renew(self) -> None:
        if held := sorted(self._held):
            async with self.session() as session:
                await JobRepository(session).renew(
                    held, worker=self.id, now=datetime.now(UTC), lease_s=self.settings.lease_s
                )

    async def _give_back(self) -> None:
        """Stopping: queue again the jobs claimed and not run, for another worker now."""
        held, self._held = sorted(self._held), set()
        if not held:
            return
        try:
            async with self.session() as session:
                n = await JobRepository(session).give_back(
                    held, worker=self.id, now=datetime.now(UTC)
                )
            log.info("jobs given back", extra={"jobs": n})
        except Exception:
            log.warning("jobs not given back: they return when their lease passes", exc_info=True)

    async def _run_group(self, namespace: str, kind: str, ids: list[str]) -> None:
        try:
            await self._run(namespace, kind, ids)
        except Exception as exc:
            if len(ids) == 1:
                await self._failed(namespace, ids[0], exc)
                return
            log.warning("job batch failed; running its jobs one by one", extra={"kind": kind})
            for job_id in ids:
                try:
                    await self._run(namespace, kind, [job_id])
                except Exception as one:
                    await self._failed(namespace, job_id, one)

    async def _run(self, namespace: str, kind: str, ids: list[str]) -> None:
        context = self.context
        registered = REGISTRY.get(kind)
        if registered is None:
            raise ValueError(f"no handler for job kind {kind!r}")
        if registered.prepare is not None:
            # Long reads and computing, outside the job's transaction (on SQLite, writes
            # wait while a write transaction is open); the lease stays renewed meanwhile.
            async with self.reader() as session:
                payloads = await JobRepository(session).payloads(namespace, ids)
            context = replace(
                context,
                prepared=await registered.prepare(self.transactions, namespace, payloads),
            )
        async with self.session() as session:
            repo = JobRepository(session)
            jobs = await repo.owned(namespace, ids, worker=self.id)
            if len(jobs) < len(ids):
                # The lease passed (the heartbeat could not renew it) and another worker
                # took them: they are its to run.
                log.warning("jobs taken by another worker", extra={"jobs": len(ids) - len(jobs)})
            if not jobs:
                return
            result = await registered.handler(session, namespace, jobs, context)
            await repo.finish(jobs, now=datetime.now(UTC), result=result)

    async def _failed(self, namespace: str, job_id: str, exc: Exception) -> None:
        log.exception("job failed", extra={"job_id": job_id}, exc_info=exc)
        async with self.session() as session:
            repo = JobRepository(session)
            owned = await repo.owned(namespace, [job_id], worker=self.id)
            job: Job | None = owned[0] if owned else None
            if job is not None:
                await repo.fail(
                    job,
                    error=f"{type(exc).__name__}: {exc}",
                    now=datetime.now(UTC),
                    retry_base_s=self.settings.retry_base_s,
                )
        if job is not None and self.metrics is not None:
            self.metrics.job_failed(job.kind, dead=job.status == "dead")

    async def periodic_pass(self) -> int:
        """Queue a learning pass for each namespace with completed episodes not learned yet
        (those whose job was lost, or that predate the worker)."""
        from app.services.operations.jobs import PASS, enqueue

        async with self.session() as session:
            before = datetime.now(UTC) - timedelta(seconds=self.settings.keep_done_s)
            purged = await JobRepository(session).purge_done(before=before)
            if purged:
                log.info("finished jobs purged", extra={"jobs": purged})
            names = await EpisodeLearningRepository(session).namespaces_with_unlearned(limit=1000)
            for namespace in names:
                await enqueue(
                    session, namespace, PASS, key="periodic", payload={}, settings=self.settings
                )
        return len(names)

    async def drain(self, *, max_rounds: int = 1_000_000) -> int:
        """Run until no job is due (tests and the CLI's --once)."""
        total = 0
        for _ in range(max_rounds):
            n = await self.run_once()
            if n == 0:
                break
            total += n
        return total

    async def run(self, *, resume: bool = False) -> None:
        """Poll for jobs until cancelled, then give back the jobs not run; a periodic pass
        every pass_interval_s. `resume`: first take back the jobs of workers known gone."""
        log.info("worker started", extra={"worker": self.id})
        try:
            if resume:
                resumed = await self.recover()
                if resumed:
                    log.info("resumed jobs left running", extra={"jobs": resumed})
            await self._poll()
        finally:
            await self._give_back()
            stopped(self.id)

    async def _poll(self) -> None:
        while True:
            try:
                interval = self.settings.pass_interval_s
                if interval > 0 and time.monotonic() - self._last_pass >= interval:
                    self._last_pass = time.monotonic()
                    await self.periodic_pass()
                busy = self.pressure()
                now = time.monotonic()
                if not busy:
                    self._busy_since = None
                elif self._busy_since is None:
                    self._busy_since = now
                if busy and now - (self._busy_since or now) < self.settings.max_defer_s:
                    # A burst of writes: learning waits for it to pass (up to max_defer_s).
                    await asyncio.sleep(DEFER_CHECK_S)
                    continue
                started = time.perf_counter()
                limit = self.settings.busy_batch_size if busy else None
                if await self.run_once(limit=limit):
                    # Under sustained write load, pause so that learning takes at most
                    # busy_share of the time; otherwise let requests in between batches.
                    took = time.perf_counter() - started
                    share = self.settings.busy_share
                    await asyncio.sleep(took * (1 - share) / share if busy else 0)
                    continue
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("worker round failed")
            self._wake.clear()
            # asyncio.timeout, not wait_for: on Python 3.11, wait_for returns when the
            # wake-up and a cancellation arrive together and drops the cancellation, so
            # the worker would go on polling and shutdown would wait for it forever.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.settings.poll_interval_s):
                    await self._wake.wait()
