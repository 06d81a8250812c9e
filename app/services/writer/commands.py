"""The writer's commands: what a request queues, what a batch of them will change, how
each is answered, and the methods requests call to queue one and wait for its answer."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from app.core.errors import AppError, StoreUnavailable
from app.core.logging import request_id_var
from app.core.metrics import Metrics
from app.db.errors import is_store_outage, outage_reason
from app.repositories.episodes import Key
from app.services.episodes.records import NewEpisode, StepsPayload
from app.storage.blobs import BlobStoreError

T = TypeVar("T")


@dataclass(slots=True)
class Replayed:
    row: dict[str, Any]
    replayed: bool


@dataclass(slots=True)
class Command:
    kind: str
    key: Key
    data: Any
    future: asyncio.Future[Any]
    request_id: str | None = None


@dataclass
class Batch:
    """What a batch of commands will change, built while deciding each command."""

    state: dict[Key, dict[str, Any] | None] = field(default_factory=dict)
    by_idem: dict[tuple[str, str], Key] = field(default_factory=dict)
    inserts: list[dict[str, Any]] = field(default_factory=list)
    updates: dict[Key, dict[str, Any]] = field(default_factory=dict)
    deletes: list[Key] = field(default_factory=list)
    puts: dict[bytes, bytes] = field(default_factory=dict)
    reused: list[Key] = field(default_factory=list)  # new episodes with client-chosen ids
    memories: list[dict[str, Any]] = field(default_factory=list)
    # Memories with a chosen id (or an idempotency key): the stored or batched row per id.
    memory_rows: dict[Key, dict[str, Any]] = field(default_factory=dict)
    transitions: list[dict[str, Any]] = field(default_factory=list)
    # Completed episodes whose inferred outcome this batch changed: learning is credited again.
    revised: list[Key] = field(default_factory=list)
    results: list[tuple[asyncio.Future[Any], Any]] = field(default_factory=list)


class Commands:
    """The writer's API: each method queues one command and waits for its answer."""

    _queue: asyncio.Queue[Command | None] | None
    _task: asyncio.Task[None] | None
    _metrics: Metrics | None

    async def _submit(self, kind: str, key: Key, data: Any) -> Any:
        if self._task is None or self._task.done() or self._queue is None:
            raise StoreUnavailable("episode writer is not running")
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        await self._queue.put(Command(kind, key, data, future, request_id_var.get()))
        # Shielded: a client that disconnects does not cancel a write in progress.
        return await asyncio.shield(future)

    async def create(self, new: NewEpisode) -> Replayed:
        result: Replayed = await self._submit("create", new.key, new)
        return result

    async def append(self, key: Key, steps: StepsPayload) -> dict[str, Any]:
        result: dict[str, Any] = await self._submit("append", key, steps)
        return result

    async def complete(self, key: Key, values: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = await self._submit("complete", key, values)
        return result

    async def create_memory(self, row: dict[str, Any], *, client_id: bool) -> Replayed:
        """Insert a memory row in the next group commit. A chosen id that exists is the
        first result replayed when the memory is the same, a 409 when it differs."""
        key = (row["namespace"], row["id"])
        result: Replayed = await self._submit("memory", key, {"row": row, "client_id": client_id})
        return result

    async def log_transition(self, row: dict[str, Any], *, selected: list[str]) -> None:
        """Record a recall decision in the next group commit (answered once committed)."""
        key = (row["namespace"], row["id"])
        await self._submit("transition", key, {"row": row, "selected": selected})
        if self._metrics is not None:
            candidates = row["state"]["request"]["n_candidates"]
            self._metrics.observe_recall(candidates=candidates, selected=len(selected))

    async def delete(self, key: Key) -> None:
        await self._submit("delete", key, None)

    async def sweep(self, *, chunk: int = 5000) -> int:
        """Remove payloads that no row points to; returns the number of keys removed."""
        removed, after = 0, None
        while True:
            count: int
            count, after = await self._submit("sweep", ("", ""), (after, chunk))
            removed += count
            if after is None:
                return removed

    async def run_paused(self, fn: Callable[[], Awaitable[T]]) -> T:
        """Run fn with the writer paused between two batches: no payload or episode write
        happens while it runs (a backup's snapshots are taken so)."""
        result: T = await self._submit("paused", ("", ""), fn)
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


def fail(commands: list[Command], exc: AppError) -> None:
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
