"""The writer: one task that owns every episode write (and memory creation), with
group commit.

Concurrent requests queue commands; the writer takes whatever is queued (up to
`max_batch`), decides each command against the stored state, writes all new
payloads to LevelDB in one synced batch, then applies all SQL changes in one
transaction, and only then answers the requests. One fsync pair serves many
requests, and because a single task performs every payload write, there are no
races between appends, deletes and the orphan sweep.

Like a worker job, the writer opens and commits its own sessions.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from app.core.errors import AppError, Conflict, NotFound, PayloadTooLarge, StoreUnavailable
from app.core.logging import batch_request_ids_var, request_id_var
from app.core.metrics import Metrics
from app.db import sqlite_driver
from app.db.engine import create_sessionmaker
from app.db.errors import is_store_outage, outage_reason
from app.db.rows import as_sqlalchemy_error, compiled_insert
from app.repositories.episode_learning import EpisodeLearningRepository
from app.repositories.episodes import EpisodeRepository, Key
from app.repositories.jobs import JobRepository
from app.repositories.memories import MEMORIES, MemoryRepository, MemoryUsageRepository
from app.repositories.rl import LINK_PREVIOUS_SQLITE, TRANSITIONS, TransitionRepository, chain
from app.services.episode_records import NewEpisode, StepsPayload, step_totals
from app.services.jobs import LEARN, job_row
from app.storage.blobs import (
    EPISODE_PREFIX,
    BlobStore,
    BlobStoreError,
    episode_chunk_key,
    episode_prefix,
    parse_episode_key,
)

log = logging.getLogger("engram.writer")
GATHER_IDLE_ROUNDS = 10
GATHER_MAX_ROUNDS = 64

T = TypeVar("T")
# What a request to create a memory sets: a repeat with the same values is a retry.
MEMORY_REQUEST_FIELDS = (
    "type",
    "scope",
    "content",
    "confidence",
    "sensitivity",
    "criticality",
    "valid_from",
    "valid_until",
    "source_refs",
    "metadata",
)


@dataclass(slots=True)
class Replayed:
    row: dict[str, Any]
    replayed: bool


@dataclass(slots=True)
class _Command:
    kind: str
    key: Key
    data: Any
    future: asyncio.Future[Any]
    request_id: str | None = None


@dataclass
class _Batch:
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
    results: list[tuple[asyncio.Future[Any], Any]] = field(default_factory=list)


class EpisodeWriter:
    def __init__(
        self,
        engine: AsyncEngine,
        blobs: BlobStore,
        *,
        max_batch: int,
        queue_size: int,
        max_steps: int,
        max_attempts: int = 5,
        on_completed: Callable[[], None] | None = None,
        lock: asyncio.Lock | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        self._engine = engine
        self._metrics = metrics
        # SQLite: the process's writers (requests, the worker, this writer) take turns on
        # one asyncio lock instead of meeting in SQLite's busy handler, which sleeps.
        self._lock = lock
        # Completing an episode queues its learning job in the same transaction.
        self._max_attempts = max_attempts
        self._on_completed = on_completed
        self._blobs = blobs
        self._max_batch = max_batch
        self._max_steps = max_steps
        self._queue_size = queue_size
        self._sessionmaker: async_sessionmaker[AsyncSession] | None = None
        self._queue: asyncio.Queue[_Command | None] | None = None
        self._task: asyncio.Task[None] | None = None
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

    # -- commands --------------------------------------------------------------

    async def _submit(self, kind: str, key: Key, data: Any) -> Any:
        if self._task is None or self._task.done() or self._queue is None:
            raise StoreUnavailable("episode writer is not running")
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        await self._queue.put(_Command(kind, key, data, future, request_id_var.get()))
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

    async def exclusive(self, fn: Callable[[], Awaitable[T]]) -> T:
        """Run fn between two batches: no payload or episode write happens while it runs."""
        result: T = await self._submit("exclusive", ("", ""), fn)
        return result

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
                log.exception("episode writer batch failed")
                self._count_store_error(exc)
                for cmd in commands:
                    if not cmd.future.done():
                        cmd.future.set_exception(_as_app_error(exc))
            finally:
                batch_request_ids_var.reset(ids)

    async def _gather(self, queue: asyncio.Queue[_Command | None]) -> None:
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

    async def _process(self, commands: list[_Command]) -> None:
        while commands:
            sweeps = [c for c in commands if c.kind in OUTSIDE_BATCHES]
            writes = [c for c in commands if c.kind not in OUTSIDE_BATCHES]
            if writes:
                rest = await self._apply(writes)
                commands = rest + sweeps
            else:
                for cmd in sweeps:
                    await (self._sweep_chunk(cmd) if cmd.kind == "sweep" else _run_alone(cmd))
                commands = []

    @property
    def queue_depth(self) -> int:
        """Commands waiting for the writer."""
        return self._queue.qsize() if self._queue is not None else 0

    def _count_store_error(self, exc: Exception) -> None:
        if self._metrics is None:
            return
        if isinstance(exc, BlobStoreError):
            self._metrics.store_error("leveldb")
        elif is_store_outage(exc):
            self._metrics.store_error("sql")

    def _turn(self) -> contextlib.AbstractAsyncContextManager[Any]:
        return self._lock if self._lock is not None else contextlib.nullcontext()

    async def _apply(self, commands: list[_Command]) -> list[_Command]:
        """Apply a prefix of commands as one group commit; return those left for later."""
        async with self._turn():
            left = await self._apply_batch(commands)
        if left is None:
            # Someone else wrote the same keys; isolate each command to give each its answer.
            for cmd in commands:
                await self._process([cmd])
            return []
        return left

    async def _apply_batch(self, commands: list[_Command]) -> list[_Command] | None:
        """The group commit; None when the batch conflicted and must run command by command."""
        assert self._sessionmaker is not None
        batch = _Batch()
        try:
            if self._direct(commands):
                done = self._decide(batch, commands)
                await self._write_direct(batch)
            else:
                async with self._sessionmaker() as session:
                    try:
                        await self._load(session, commands, batch)
                        done = self._decide(batch, commands)
                        await self._write(session, batch)
                    except Exception:
                        await session.rollback()
                        raise
        except IntegrityError:
            if len(commands) == 1:
                _settle([(commands[0].future, Conflict("conflicting concurrent write"))])
                return []
            return None
        except BlobStoreError as exc:
            self._count_store_error(exc)
            _fail(commands, StoreUnavailable(f"payload store unavailable: {exc}"))
            return []
        except Exception as exc:
            self._count_store_error(exc)
            if not is_store_outage(exc):  # a defect: its requests only see "internal"
                log.exception("episode writer batch failed")
            _fail(commands, _as_app_error(exc))
            return []
        _settle(batch.results)
        self.batches += 1
        self.commands += done
        if self._metrics is not None:
            self._metrics.ingest_batch.observe(done)
        return commands[done:]

    def _decide(self, batch: _Batch, commands: list[_Command]) -> int:
        """Decide each command against the batch's state; returns how many were decided
        (a command after a delete of the same episode waits a round)."""
        done = 0
        for cmd in commands:
            if _touches_deleted(batch, cmd):
                break
            try:
                _DECIDE[cmd.kind](self, batch, cmd)
            except AppError as exc:
                batch.results.append((cmd.future, exc))
            done += 1
        return done

    def _direct(self, commands: list[_Command]) -> bool:
        """SQLite, and only new memories whose ids the service chose and recall logs: the
        batch reads nothing before its decisions, so it is written as one transaction in
        one call to the connection's thread (`_write_direct`)."""
        return self._engine.dialect.name == "sqlite" and all(
            c.kind == "transition" or (c.kind == "memory" and not c.data["client_id"])
            for c in commands
        )

    async def _write_direct(self, batch: _Batch) -> None:
        """`_write` of a `_direct` batch: the same rows, through
        `sqlite_driver.Connection.write`."""
        async with self._engine.connect() as conn:
            statements = _direct_statements(conn.dialect, batch.memories, batch.transitions)
            adapter = (await conn.get_raw_connection()).dbapi_connection
            assert isinstance(adapter, sqlite_driver.Connection)
            try:
                await adapter.write(statements)
            except sqlite3.Error as exc:
                notes = "; ".join(getattr(exc, "__notes__", ()))
                raise as_sqlalchemy_error(notes, exc) from exc

    async def _load(self, session: AsyncSession, commands: list[_Command], batch: _Batch) -> None:
        chosen = {c.key for c in commands if c.kind == "memory" and c.data["client_id"]}
        batch.memory_rows = await MemoryRepository(session).existing(chosen)
        repo = EpisodeRepository(session)
        commands = [c for c in commands if c.kind in EPISODE_KINDS]
        keys = {c.key for c in commands if c.kind != "create" or c.data.client_id}
        idem = {
            (c.key[0], c.data.idempotency_key)
            for c in commands
            if c.kind == "create" and c.data.idempotency_key
        }
        batch.state.update(dict.fromkeys(keys))
        for record in await repo.rows_for_write(keys, idem):
            key = (record["namespace"], record["id"])
            batch.state[key] = record
            if record["idempotency_key"]:
                batch.by_idem[(key[0], record["idempotency_key"])] = key

    # -- deciding each command against the batch state ---------------------------

    def _decide_create(self, batch: _Batch, cmd: _Command) -> None:
        new: NewEpisode = cmd.data
        ns = new.namespace
        existing_key = batch.by_idem.get((ns, new.idempotency_key)) if new.idempotency_key else None
        if existing_key is None and new.client_id:
            existing_key = new.key if batch.state.get(new.key) is not None else None
        if existing_key is not None:
            existing = batch.state[existing_key]
            assert existing is not None
            other_id = new.client_id and existing_key != new.key
            if other_id or existing["request_hash"] != new.row["request_hash"]:
                raise Conflict(
                    "an episode with this idempotency key or id exists with different content",
                    id=existing_key[1],
                )
            batch.results.append((cmd.future, Replayed(existing, replayed=True)))
            return
        row = dict(new.row)
        batch.state[new.key] = row
        if new.idempotency_key:
            batch.by_idem[(ns, new.idempotency_key)] = new.key
        batch.inserts.append(row)
        batch.puts.update(new.puts)
        if new.client_id:
            batch.reused.append(new.key)
        batch.results.append((cmd.future, Replayed(row, replayed=False)))

    def _existing(self, batch: _Batch, key: Key) -> dict[str, Any]:
        row = batch.state.get(key)
        if row is None:
            raise NotFound(f"episode {key[1]!r} not found")
        return row

    def _decide_append(self, batch: _Batch, cmd: _Command) -> None:
        row = self._existing(batch, cmd.key)
        steps: StepsPayload = cmd.data
        if row["status"] != "open":
            raise Conflict("the episode is completed; steps can no longer be added", field="steps")
        total = row["step_count"] + len(steps.skeletons)
        if total > self._max_steps:
            raise PayloadTooLarge(
                f"steps: the episode would have {total} steps, the limit is {self._max_steps}",
                field="steps",
            )
        ns, eid = cmd.key
        batch.puts[episode_chunk_key(ns, eid, row["step_count"])] = steps.chunk
        added = step_totals(steps.skeletons)
        changes = {
            "steps": [*row["steps"], *steps.skeletons],
            "step_count": total,
            "payload_bytes": row["payload_bytes"] + steps.nbytes,
            "updated_at": datetime.now(UTC),
            **{name: row[name] + value for name, value in added.items()},
        }
        self._change(batch, cmd, row, changes)

    def _decide_complete(self, batch: _Batch, cmd: _Command) -> None:
        row = self._existing(batch, cmd.key)
        values: dict[str, Any] = cmd.data
        if row["status"] == "completed":
            same = row["outcome"] == values["outcome"] and all(
                row[k] == values[k] for k in ("verdict", "progress") if values.get(k) is not None
            )
            if not same:
                raise Conflict(
                    f"the episode is already completed with outcome {row['outcome']!r}",
                    field="outcome",
                )
            batch.results.append((cmd.future, dict(row)))
            return
        now = datetime.now(UTC)
        self._change(
            batch,
            cmd,
            row,
            {**values, "status": "completed", "completed_at": now, "updated_at": now},
        )

    def _decide_memory(self, batch: _Batch, cmd: _Command) -> None:
        row = cmd.data["row"]
        existing = batch.memory_rows.get(cmd.key)
        if existing is not None:
            if any(existing[name] != row[name] for name in MEMORY_REQUEST_FIELDS):
                raise Conflict(
                    f"memory {cmd.key[1]!r} exists with different content (a chosen id or "
                    "an Idempotency-Key names one memory)",
                    field="id",
                    id=cmd.key[1],
                )
            batch.results.append((cmd.future, Replayed(existing, replayed=True)))
            return
        if cmd.data["client_id"]:
            batch.memory_rows[cmd.key] = row
        batch.memories.append(row)
        batch.results.append((cmd.future, Replayed(row, replayed=False)))

    def _decide_transition(self, batch: _Batch, cmd: _Command) -> None:
        batch.transitions.append(cmd.data)
        batch.results.append((cmd.future, cmd.data))

    async def _log_transitions(self, session: AsyncSession, rows: list[dict[str, Any]]) -> None:
        """Recall decisions: the rows, the link from each task's previous recall, and the
        chosen memories' use counts."""
        transitions = TransitionRepository(session)
        usage = MemoryUsageRepository(session)
        new = [r["row"] for r in rows]
        for namespace, task_id, first in chain(new):
            await transitions.link_previous(namespace, task_id, first)
        await transitions.insert_many(new)
        # Transitions first, then memories in id order, as a reward takes them.
        chosen: dict[str, set[str]] = {}
        for r in rows:
            chosen.setdefault(r["row"]["namespace"], set()).update(r["selected"])
        for namespace in sorted(chosen):
            await usage.lock(namespace, chosen[namespace])
        for r in rows:
            row = r["row"]
            await usage.mark_used(row["namespace"], r["selected"], now=row["created_at"])

    def _decide_delete(self, batch: _Batch, cmd: _Command) -> None:
        self._existing(batch, cmd.key)
        batch.state[cmd.key] = None
        batch.deletes.append(cmd.key)
        batch.results.append((cmd.future, None))

    def _change(
        self, batch: _Batch, cmd: _Command, row: dict[str, Any], changes: dict[str, Any]
    ) -> None:
        row.update(changes)
        batch.updates.setdefault(cmd.key, {}).update(changes)
        batch.results.append((cmd.future, dict(row)))

    # -- writing ---------------------------------------------------------------

    async def _write(self, session: AsyncSession, batch: _Batch) -> None:
        if batch.puts:
            # A chosen id may be one whose payload a crash left behind (deleted row, payload
            # not yet swept): those chunks go in the same batch, or they would read as steps.
            stale = [
                key
                for ns, eid in batch.reused
                for key in await self._blobs.scan_keys(episode_prefix(ns, eid))
                if key not in batch.puts
            ]
            await self._blobs.write(batch.puts, stale)  # synced before the rows that point to it
        repo = EpisodeRepository(session)
        await repo.insert_many(batch.inserts)
        await MemoryRepository(session).insert_many(batch.memories)
        if batch.transitions:
            await self._log_transitions(session, batch.transitions)
        for key, values in batch.updates.items():
            if key not in batch.deletes:
                await repo.update_values(key, values)
        learning = EpisodeLearningRepository(session)
        for key in batch.deletes:
            await repo.delete(key)
            await learning.forget_reflection(*key, now=datetime.now(UTC))
        completed = _completed(batch)
        now = datetime.now(UTC)
        await JobRepository(session).insert_many(
            [
                job_row(
                    ns,
                    LEARN,
                    key=eid,
                    payload={"episode_id": eid},
                    now=now,
                    max_attempts=self._max_attempts,
                )
                for ns, eid in completed
            ]
        )
        if batch.inserts or batch.updates or batch.deletes or batch.memories or batch.transitions:
            await session.commit()
        if completed and self._on_completed is not None:
            self._on_completed()
        for ns, eid in batch.deletes:
            # Rows are gone and committed; a crash before this leaves orphans for the sweep.
            try:
                await self._blobs.delete_prefix(episode_prefix(ns, eid))
            except BlobStoreError:
                log.warning(
                    "payload delete failed; the sweep removes it", extra={"episode_id": eid}
                )

    async def _sweep_chunk(self, cmd: _Command) -> None:
        after, limit = cmd.data
        try:
            keys = await self._blobs.scan_keys(EPISODE_PREFIX, after=after, limit=limit)
            parsed = [(key, *parse_episode_key(key)) for key in keys]
            pairs = list({(ns, eid) for _, ns, eid, _ in parsed})
            assert self._sessionmaker is not None
            async with self._turn(), self._sessionmaker() as session:
                counts = await EpisodeRepository(session).step_counts(pairs)
                await session.rollback()
            orphans = [
                key
                for key, ns, eid, seq in parsed
                if (ns, eid) not in counts or (seq is not None and seq >= counts[(ns, eid)])
            ]
            if orphans:
                await self._blobs.write({}, deletes=orphans)
                log.info("swept orphan payloads", extra={"keys": len(orphans)})
            next_after = keys[-1] if len(keys) >= limit else None
            cmd.future.set_result((len(orphans), next_after))
        except Exception as exc:
            cmd.future.set_exception(_as_app_error(exc))


_DECIDE: dict[str, Callable[[EpisodeWriter, _Batch, _Command], None]] = {
    "create": EpisodeWriter._decide_create,
    "append": EpisodeWriter._decide_append,
    "complete": EpisodeWriter._decide_complete,
    "delete": EpisodeWriter._decide_delete,
    "memory": EpisodeWriter._decide_memory,
    "transition": EpisodeWriter._decide_transition,
}
EPISODE_KINDS = {"create", "append", "complete", "delete"}
# Commands that run on their own, after the write batches queued with them.
OUTSIDE_BATCHES = {"sweep", "exclusive"}


async def _run_alone(cmd: _Command) -> None:
    try:
        cmd.future.set_result(await cmd.data())
    except Exception as exc:
        cmd.future.set_exception(exc)


def _direct_statements(
    dialect: Any, memories: list[dict[str, Any]], logs: list[dict[str, Any]]
) -> list[tuple[str, Any]]:
    """A `_direct` batch as SQLite statements, each an executemany: the new memories (in
    multi-row INSERTs, for their full-text trigger), then the recall logs as
    `_log_transitions` writes them."""
    statements: list[tuple[str, Any]] = []
    if memories:
        statements += compiled_insert(MEMORIES, dialect).multi(memories)
    if logs:
        new = [log["row"] for log in logs]
        links = [(first, ns, task_id, first) for ns, task_id, first in chain(new)]
        if links:
            statements.append((LINK_PREVIOUS_SQLITE, links))
        statements.append(compiled_insert(TRANSITIONS, dialect).many(new))
        uses = [
            (log["row"]["namespace"], log["selected"], log["row"]["created_at"]) for log in logs
        ]
        sql, params = MemoryUsageRepository.mark_used_sqlite(uses)
        if params:
            statements.append((sql, params))
    return statements


def _completed(batch: _Batch) -> list[Key]:
    """Episodes this batch completes (created completed, or completed now)."""
    keys = [(r["namespace"], r["id"]) for r in batch.inserts if r["status"] == "completed"]
    keys += [k for k, v in batch.updates.items() if v.get("status") == "completed"]
    return [k for k in keys if k not in batch.deletes]


def _touches_deleted(batch: _Batch, cmd: _Command) -> bool:
    if cmd.kind not in EPISODE_KINDS:
        return False
    if cmd.key in batch.deletes:
        return True
    if cmd.kind == "create" and cmd.data.idempotency_key:
        return batch.by_idem.get((cmd.key[0], cmd.data.idempotency_key)) in batch.deletes
    return False


def _settle(results: list[tuple[asyncio.Future[Any], Any]]) -> None:
    for future, value in results:
        if future.done():
            continue
        if isinstance(value, BaseException):
            future.set_exception(value)
        else:
            future.set_result(value)


def _fail(commands: list[_Command], exc: AppError) -> None:
    for cmd in commands:
        if not cmd.future.done():
            cmd.future.set_exception(exc)


def _as_app_error(exc: Exception) -> AppError:
    if isinstance(exc, AppError):
        return exc
    if isinstance(exc, BlobStoreError):
        return StoreUnavailable(f"payload store unavailable: {exc}")
    if is_store_outage(exc):
        return StoreUnavailable(f"database unavailable: {outage_reason(exc)}")
    return AppError("internal error while writing")
