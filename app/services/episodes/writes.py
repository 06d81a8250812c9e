"""Episode writes as the writer's commands: create (or replay), append steps, complete,
delete; each decided against the batch's state, then written payloads first."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.errors import Conflict, NotFound, PayloadTooLarge
from app.repositories.episode_learning import EpisodeLearningRepository
from app.repositories.episodes import EpisodeRepository, Key
from app.services.episodes.records import NewEpisode, StepsPayload, step_totals
from app.services.operations.jobs import CREDIT, LEARN, enqueue_new
from app.services.writer.handler import Command, Replayed, Writes
from app.storage.blobs import BlobStore, BlobStoreError, episode_chunk_key, episode_prefix

log = logging.getLogger("engram.writer")
APPEND_KEY, APPEND_DIGEST = "append_key", "append_digest"


@dataclass(slots=True, kw_only=True)
class CreateEpisode(Command[Replayed]):
    new: NewEpisode


@dataclass(slots=True, kw_only=True)
class AppendSteps(Command[dict[str, Any]]):
    steps: StepsPayload


@dataclass(slots=True, kw_only=True)
class CompleteEpisode(Command[dict[str, Any]]):
    values: dict[str, Any]


@dataclass(slots=True, kw_only=True)
class DeleteEpisode(Command[None]):
    pass


EpisodeCommand = CreateEpisode | AppendSteps | CompleteEpisode | DeleteEpisode


@dataclass
class Episodes:
    """What a batch's episode commands will change."""

    state: dict[Key, dict[str, Any] | None] = field(default_factory=dict)
    by_idem: dict[tuple[str, str], Key] = field(default_factory=dict)
    inserts: list[dict[str, Any]] = field(default_factory=list)
    updates: dict[Key, dict[str, Any]] = field(default_factory=dict)
    deletes: list[Key] = field(default_factory=list)
    puts: dict[bytes, bytes] = field(default_factory=dict)
    reused: list[Key] = field(default_factory=list)  # new episodes with client-chosen ids
    # Completed episodes whose inferred outcome this batch changed: learning is credited again.
    revised: list[Key] = field(default_factory=list)
    completed: list[Key] = field(default_factory=list)


class EpisodeWrites(Writes[EpisodeCommand, Episodes]):
    commands = (CreateEpisode, AppendSteps, CompleteEpisode, DeleteEpisode)

    def __init__(
        self,
        blobs: BlobStore,
        *,
        max_steps: int,
        max_attempts: int,
        on_completed: Callable[[], None] | None = None,
    ) -> None:
        self._blobs = blobs
        self._max_steps = max_steps
        # Completing an episode queues its learning job in the same transaction.
        self._max_attempts = max_attempts
        self._on_completed = on_completed

    def part(self) -> Episodes:
        return Episodes()

    async def load(
        self, session: AsyncSession, commands: list[EpisodeCommand], part: Episodes
    ) -> None:
        keys = {c.key for c in commands if not isinstance(c, CreateEpisode) or c.new.client_id}
        idem = {
            (c.key[0], c.new.idempotency_key)
            for c in commands
            if isinstance(c, CreateEpisode) and c.new.idempotency_key
        }
        part.state.update(dict.fromkeys(keys))
        for record in await EpisodeRepository(session).rows_for_write(keys, idem):
            key = (record["namespace"], record["id"])
            part.state[key] = record
            if record["idempotency_key"]:
                part.by_idem[(key[0], record["idempotency_key"])] = key

    def waits(self, part: Episodes, cmd: EpisodeCommand) -> bool:
        if cmd.key in part.deletes:
            return True
        if isinstance(cmd, CreateEpisode) and cmd.new.idempotency_key:
            return part.by_idem.get((cmd.key[0], cmd.new.idempotency_key)) in part.deletes
        return False

    def decide(self, part: Episodes, cmd: EpisodeCommand) -> Any:
        if isinstance(cmd, CreateEpisode):
            return _create(part, cmd.new)
        row = part.state.get(cmd.key)
        if row is None:
            raise NotFound(f"episode {cmd.key[1]!r} not found")
        if isinstance(cmd, AppendSteps):
            return self._append(part, cmd.key, row, cmd.steps)
        if isinstance(cmd, CompleteEpisode):
            return _complete(part, cmd.key, row, cmd.values)
        part.state[cmd.key] = None
        part.deletes.append(cmd.key)
        return None

    def _append(
        self, part: Episodes, key: Key, row: dict[str, Any], steps: StepsPayload
    ) -> dict[str, Any]:
        if steps.keyed is not None and _appended(row, *steps.keyed):
            return dict(row)  # a retry: they are there already
        if row["status"] != "open":
            raise Conflict("the episode is completed; steps can no longer be added", field="steps")
        total = row["step_count"] + len(steps.skeletons)
        if total > self._max_steps:
            raise PayloadTooLarge(
                f"steps: the episode would have {total} steps, the limit is {self._max_steps}",
                field="steps",
            )
        part.puts[episode_chunk_key(*key, row["step_count"])] = steps.chunk
        skeletons = steps.skeletons
        if steps.keyed is not None:
            keyed, digest = steps.keyed
            skeletons = [{**skeletons[0], APPEND_KEY: keyed, APPEND_DIGEST: digest}, *skeletons[1:]]
        added = step_totals(steps.skeletons)
        return _change(
            part,
            key,
            row,
            {
                "steps": [*row["steps"], *skeletons],
                "step_count": total,
                "payload_bytes": row["payload_bytes"] + steps.nbytes,
                "updated_at": datetime.now(UTC),
                **{name: row[name] + value for name, value in added.items()},
            },
        )

    async def write(self, session: AsyncSession, part: Episodes) -> bool:
        blobs = self._blobs
        if part.puts:
            # A chosen id may be one whose payload a crash left behind (deleted row, payload
            # not yet swept): those chunks go in the same batch, or they would read as
            # steps. (A transactional store's payloads go with their rows: no leftovers.)
            reused = [] if blobs.transactional else part.reused
            stale = [
                key
                for ns, eid in reused
                for key in await blobs.scan_keys(episode_prefix(ns, eid), session=session)
            ]
            # Synced before the rows that point to it, or written with them.
            await blobs.write(part.puts, stale, session=session)
        repo = EpisodeRepository(session)
        await repo.insert_many(part.inserts)
        for key, values in part.updates.items():
            if key not in part.deletes:
                await repo.update_values(key, values)
        learning = EpisodeLearningRepository(session)
        for key in part.deletes:
            await repo.delete(key)
            await learning.forget_reflection(*key, now=datetime.now(UTC))
            if blobs.transactional:  # gone with the row
                await blobs.delete_prefix(episode_prefix(*key), session=session)
        # Completing an episode queues its learning job in the same transaction.
        part.completed = _completed(part)
        revised = [key for key in part.revised if key not in part.deletes]
        await enqueue_new(
            session,
            [(ns, LEARN, eid, {"episode_id": eid}) for ns, eid in part.completed]
            + [(ns, CREDIT, f"revised:{eid}", {"episode_ids": [eid]}) for ns, eid in revised],
            max_attempts=self._max_attempts,
        )
        return bool(part.inserts or part.updates or part.deletes)

    async def committed(self, session: AsyncSession | None, part: Episodes) -> None:
        if (part.completed or part.revised) and self._on_completed is not None:
            self._on_completed()
        if self._blobs.transactional or not part.deletes:
            return
        assert session is not None  # episode commands read first: never the direct path
        for ns, eid in part.deletes:
            # Rows are gone and committed; a crash before this leaves orphans for the sweep.
            try:
                await self._blobs.delete_prefix(episode_prefix(ns, eid), session=session)
            except BlobStoreError:
                log.warning(
                    "payload delete failed; the sweep removes it", extra={"episode_id": eid}
                )


def _create(part: Episodes, new: NewEpisode) -> Replayed:
    ns = new.namespace
    existing_key = part.by_idem.get((ns, new.idempotency_key)) if new.idempotency_key else None
    if existing_key is None and new.client_id:
        existing_key = new.key if part.state.get(new.key) is not None else None
    if existing_key is not None:
        existing = part.state[existing_key]
        assert existing is not None
        other_id = new.client_id and existing_key != new.key
        if other_id or existing["request_hash"] != new.row["request_hash"]:
            raise Conflict(
                "an episode with this idempotency key or id exists with different content",
                id=existing_key[1],
            )
        return Replayed(existing, replayed=True)
    row = dict(new.row)
    part.state[new.key] = row
    if new.idempotency_key:
        part.by_idem[(ns, new.idempotency_key)] = new.key
    part.inserts.append(row)
    part.puts.update(new.puts)
    if new.client_id:
        part.reused.append(new.key)
    return Replayed(row, replayed=False)


def _complete(
    part: Episodes, key: Key, row: dict[str, Any], values: dict[str, Any]
) -> dict[str, Any]:
    now = datetime.now(UTC)
    if row["status"] != "completed":
        changes = {**values, "status": "completed", "completed_at": now, "updated_at": now}
        return _change(part, key, row, changes)
    same = row["outcome"] == values["outcome"] and all(
        row[k] == values[k] for k in ("verdict", "progress") if values.get(k) is not None
    )
    if same:
        return dict(row)
    if row.get("outcome_source") != "inferred":
        raise Conflict(
            f"the episode is already completed with outcome {row['outcome']!r}", field="outcome"
        )
    # An inferred outcome gives way to a reported one or a later inference; learning is
    # credited again for it (write() queues the job).
    part.revised.append(key)
    changes = {"outcome_source": None, "outcome_confidence": None, **values}
    return _change(part, key, row, {**changes, "completed_at": now, "updated_at": now})


def _appended(row: dict[str, Any], key: str, digest: str) -> bool:
    """Whether the episode holds the steps of an append made under `key` already (a 409
    if that append sent other steps, or came from another API key)."""
    for skeleton in row["steps"]:
        if skeleton.get(APPEND_KEY) == key:
            if skeleton.get(APPEND_DIGEST) != digest:
                raise Conflict(
                    "this Idempotency-Key added other steps to the episode", field="Idempotency-Key"
                )
            return True
    return False


def _completed(part: Episodes) -> list[Key]:
    """Episodes this batch completes (created completed, or completed now)."""
    keys = [(r["namespace"], r["id"]) for r in part.inserts if r["status"] == "completed"]
    keys += [k for k, v in part.updates.items() if v.get("status") == "completed"]
    return [k for k in keys if k not in part.deletes]


def _change(
    part: Episodes, key: Key, row: dict[str, Any], changes: dict[str, Any]
) -> dict[str, Any]:
    row.update(changes)
    part.updates.setdefault(key, {}).update(changes)
    return dict(row)
