"""The writer's task: take what is queued, decide it, write it as one group commit, then
answer; a batch that fails is answered with its error and the task goes on."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from app.core.errors import AppError, Conflict, StoreUnavailable
from app.core.logging import batch_request_ids_var
from app.core.metrics import Metrics
from app.db.backends import backend_of
from app.db.engine import create_sessionmaker
from app.db.errors import is_store_outage
from app.services.writer.commands import Commands, Paused, Sweep, as_app_error, fail, settle
from app.services.writer.direct import write_direct
from app.services.writer.handler import Batch, Command, Writes
from app.services.writer.sweep import sweep_chunk
from app.storage.blobs import BlobStore, BlobStoreError

log = logging.getLogger("engram.writer")
GATHER_IDLE_ROUNDS = 10
GATHER_MAX_ROUNDS = 64
# Commands that run on their own, after the write batches queued with them.
OUTSIDE_BATCHES = (Sweep, Paused)


class Writer(Commands):
    """The one task that writes episodes, new memories and recall logs, in group commits.

    `handlers`: each domain's handler of its commands, in the order their writes go in a
    batch's transaction."""

    def __init__(
        self,
        engine: AsyncEngine,
        handlers: Sequence[Writes[Any, Any]],
        *,
        blobs: BlobStore,
        max_batch: int,
        queue_size: int,
        lock: asyncio.Lock | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        self._engine = engine
        self._metrics = metrics
        # SQLite: the process's writers (requests, the worker, this writer) take turns on
        # one asyncio lock instead of meeting in SQLite's busy handler, which sleeps.
        self._lock = lock
        self._blobs = blobs  # for the sweep
        self._max_batch = max_batch
        self._queue_size = queue_size
        self._handlers = list(handlers)
        self._handler_of = {kind: h for h in self._handlers for kind in h.commands}
        self._direct_writes = backend_of(engine).direct_writes
        self._sessionmaker: async_sessionmaker[AsyncSession] | None = None
        self._queue = None
        self._task = None
        self.batches = 0
        self.commands = 0

    # -- lifecycle -------------------------------------------------------------

    def start(self) -> None:
        self._sessionmaker = create_sessionmaker(self._engine, write=True)
        self._queue = asyncio.Queue(maxsize=self._queue_size)
        self._task = asyncio.create_task(self._run(), name="engram-episode-writer")

    async def stop(self) -> None:
        """Finish every queued command, then stop."""
        if self._task is None or self._queue is None:
            return
        await self._queue.put(None)
        await self._task
        self._task = None

    # -- the loop --------------------------------------------------------------

    async def _run(self) -> None:
        queue = self._queue
        assert queue is not None
        stopping = False
        while not stopping:
            first = await queue.get()
            if first is None:
                break
            commands = [first]
            await self._gather(queue)
            while len(commands) < self._max_batch and not queue.empty():
                nxt = queue.get_nowait()
                if nxt is None:
                    stopping = True
                    break
                commands.append(nxt)
            # The writer's log lines name the requests of the batch they concern.
            ids = batch_request_ids_var.set([c.request_id for c in commands if c.request_id])
            try:
                await self._process(commands)
            except Exception as exc:  # never let the writer die; fail the batch instead
                log.exception("writer batch failed")
                self._count_store_error(exc)
                for cmd in commands:
                    if not cmd.future.done():
                        cmd.future.set_exception(as_app_error(exc))
            finally:
                batch_request_ids_var.reset(ids)

    async def _gather(self, queue: asyncio.Queue[Command[Any] | None]) -> None:
        """Let requests already in the event loop reach the queue before a batch starts.

        One batch of thirty costs one payload sync and one commit; thirty batches of
        one cost thirty. Each yield lets every ready request run up to its submit; the
        writer stops yielding once GATHER_IDLE_ROUNDS pass with nothing new queued.
        """
        idle = rounds = 0
        while idle < GATHER_IDLE_ROUNDS and rounds < GATHER_MAX_ROUNDS:
            if queue.qsize() >= self._max_batch:
                return
            before = queue.qsize()
            await asyncio.sleep(0)
            rounds += 1
            idle = idle + 1 if queue.qsize() == before else 0

    async def _process(self, commands: list[Command[Any]]) -> None:
        while commands:
            alone: list[Command[Any]] = [c for c in commands if isinstance(c, OUTSIDE_BATCHES)]
            writes = [c for c in commands if not isinstance(c, OUTSIDE_BATCHES)]
            if writes:
                rest = await self._apply(writes)
                commands = rest + alone
            else:
                for cmd in alone:
                    if isinstance(cmd, Sweep):
                        await self._sweep_chunk(cmd)
                    elif isinstance(cmd, Paused):
                        await _run_alone(cmd)
                commands = []

    def _count_store_error(self, exc: Exception) -> None:
        if self._metrics is None:
            return
        if isinstance(exc, BlobStoreError):
            self._metrics.store_error("leveldb")
        elif is_store_outage(exc):
            self._metrics.store_error("sql")

    def _turn(self) -> contextlib.AbstractAsyncContextManager[Any]:
        return self._lock if self._lock is not None else contextlib.nullcontext()

    async def _apply(self, commands: list[Command[Any]]) -> list[Command[Any]]:
        """Apply a prefix of commands as one group commit; return those left for later."""
        async with self._turn():
            left = await self._apply_batch(commands)
        if left is None:
            # Someone else wrote the same keys, or one command failed the group: isolate
            # each command to give each its answer.
            for cmd in commands:
                await self._process([cmd])
            return []
        return left

    async def _apply_batch(self, commands: list[Command[Any]]) -> list[Command[Any]] | None:
        """The group commit; None when the batch conflicted, or failed but for an outage,
        and must run command by command."""
        assert self._sessionmaker is not None
        groups: dict[Writes[Any, Any], list[Command[Any]]] = {}
        for cmd in commands:
            groups.setdefault(self._handler_of[type(cmd)], []).append(cmd)
        batch = Batch({h: h.part() for h in self._handlers if h in groups})
        try:
            if self._direct_writes and all(h.direct(c) for h, cs in groups.items() for c in cs):
                done = self._decide(batch, commands)
                dialect = self._engine.dialect
                await write_direct(
                    self._engine,
                    [s for h, part in batch.parts.items() for s in h.statements(dialect, part)],
                )
                for handler, part in batch.parts.items():
                    await handler.committed(None, part)
            else:
                async with self._sessionmaker() as session:
                    try:
                        for handler, part in batch.parts.items():
                            await handler.load(session, groups[handler], part)
                        done = self._decide(batch, commands)
                        wrote = False
                        for handler, part in batch.parts.items():
                            wrote = await handler.write(session, part) or wrote
                        if wrote:
                            await session.commit()
                        for handler, part in batch.parts.items():
                            await handler.committed(session, part)
                    except Exception:
                        await session.rollback()
                        raise
        except IntegrityError:
            if len(commands) == 1:
                settle([(commands[0].future, Conflict("conflicting concurrent write"))])
                return []
            return None
        except BlobStoreError as exc:
            self._count_store_error(exc)
            fail(commands, StoreUnavailable(f"payload store unavailable: {exc}"))
            return []
        except Exception as exc:
            self._count_store_error(exc)
            if len(commands) > 1 and not is_store_outage(exc):
                # One command's data may have failed the group: each on its own, so that
                # the others commit and only that one gets the error.
                return None
            if not is_store_outage(exc):  # a defect: its requests only see "internal"
                log.exception("writer batch failed")
            fail(commands, as_app_error(exc))
            return []
        settle(batch.results)
        self.batches += 1
        self.commands += done
        if self._metrics is not None:
            self._metrics.ingest_batch.observe(done)
        return commands[done:]

    def _decide(self, batch: Batch, commands: list[Command[Any]]) -> int:
        """Decide each command against the batch's state; returns how many were decided
        (a command after a delete of the same episode waits a round)."""
        done = 0
        for cmd in commands:
            handler = self._handler_of[type(cmd)]
            part = batch.parts[handler]
            if handler.waits(part, cmd):
                break
            try:
                batch.results.append((cmd.future, handler.decide(part, cmd)))
            except AppError as exc:
                batch.results.append((cmd.future, exc))
            done += 1
        return done

    async def _sweep_chunk(self, cmd: Sweep) -> None:
        assert self._sessionmaker is not None
        await sweep_chunk(
            cmd, blobs=self._blobs, sessionmaker=self._sessionmaker, turn=self._turn()
        )


async def _run_alone(cmd: Paused) -> None:
    try:
        cmd.future.set_result(await cmd.fn())
    except Exception as exc:
        cmd.future.set_exception(exc)
