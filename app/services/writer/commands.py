"""The writer's API and its own commands: `submit` queues a command and waits for its
answer; a sweep and a pause run alone between batches; how answers and errors are set."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from app.core.errors import AppError, StoreUnavailable
from app.core.logging import request_id_var
from app.db.errors import is_store_outage, outage_reason
from app.services.writer.handler import Command
from app.storage.blobs import BlobStoreError

A = TypeVar("A")


@dataclass(slots=True, kw_only=True)
class Sweep(Command[tuple[int, bytes | None]]):
    """Remove orphan payloads among `limit` keys after `after`."""

    after: bytes | None
    limit: int


@dataclass(slots=True, kw_only=True)
class Paused(Command[Any]):
    """Run `fn` with no write in flight."""

    fn: Callable[[], Awaitable[Any]]


class Commands:
    """What requests call: each queues one command and waits for its answer."""

    _queue: asyncio.Queue[Command[Any] | None] | None
    _task: asyncio.Task[None] | None

    async def submit(self, cmd: Command[A]) -> A:
        """Queue the command; its answer once the batch that holds it has committed."""
        if self._task is None or self._task.done() or self._queue is None:
            raise StoreUnavailable("the writer is not running")
        cmd.future = asyncio.get_running_loop().create_future()
        cmd.request_id = request_id_var.get()
        await self._queue.put(cmd)
        # Shielded: a client that disconnects does not cancel a write in progress.
        return await asyncio.shield(cmd.future)

    async def sweep(self, *, chunk: int = 5000) -> int:
        """Remove payloads that no row points to; returns the number of keys removed."""
        removed, after = 0, None
        while True:
            count, after = await self.submit(Sweep(key=("", ""), after=after, limit=chunk))
            removed += count
            if after is None:
                return removed

    async def run_paused(self, fn: Callable[[], Awaitable[A]]) -> A:
        """Run fn with the writer paused between two batches: no payload or episode write
        happens while it runs (a backup's snapshots are taken so)."""
        result: A = await self.submit(Paused(key=("", ""), fn=fn))
        return result

    @property
    def queue_depth(self) -> int:
        """Commands waiting for the writer."""
        return self._queue.qsize() if self._queue is not None else 0


def settle(results: list[tuple[asyncio.Future[Any], Any]]) -> None:
    for future, value in results:
        if future.done():
            continue
        if isinstance(value, BaseException):
            future.set_exception(value)
        else:
            future.set_result(value)


def fail(commands: list[Command[Any]], exc: AppError) -> None:
    for cmd in commands:
        if not cmd.future.done():
            cmd.future.set_exception(exc)


def as_app_error(exc: Exception) -> AppError:
    if isinstance(exc, AppError):
        return exc
    if isinstance(exc, BlobStoreError):
        return StoreUnavailable(f"payload store unavailable: {exc}")
    if is_store_outage(exc):
        return StoreUnavailable(f"database unavailable: {outage_reason(exc)}")
    return AppError("internal error while writing")
