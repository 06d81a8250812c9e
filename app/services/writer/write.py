"""The session path: read the stored state a batch is decided against, then write the
batch in one SQL transaction, payloads first (synced before it commits, or in it)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime

from sqlalchemy.ext.asyncio import AsyncSession

from app.repositories.episode_learning import EpisodeLearningRepository
from app.repositories.episodes import EpisodeRepository
from app.repositories.jobs import JobRepository
from app.repositories.memories import MemoryRepository
from app.services.operations.jobs import CREDIT, LEARN, job_row
from app.services.writer.commands import Batch, Command
from app.services.writer.episodes import EPISODE_KINDS, completed
from app.services.writer.transitions import log_transitions
from app.storage.blobs import BlobStore, BlobStoreError, episode_prefix

log = logging.getLogger("engram.writer")


async def load(session: AsyncSession, commands: list[Command], batch: Batch) -> None:
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


async def write(
    session: AsyncSession,
    batch: Batch,
    *,
    blobs: BlobStore,
    max_attempts: int,
    on_completed: Callable[[], None] | None,
) -> None:
    if batch.puts:
        # A chosen id may be one whose payload a crash left behind (deleted row, payload
        # not yet swept): those chunks go in the same batch, or they would read as steps.
        # (A transactional store's payloads go with their rows: it has no such leftovers.)
        reused = [] if blobs.transactional else batch.reused
        stale = [
            key
            for ns, eid in reused
            for key in await blobs.scan_keys(episode_prefix(ns, eid), session=session)
        ]
        # Synced before the rows that point to it, or written with them.
        await blobs.write(batch.puts, stale, session=session)
    repo = EpisodeRepository(session)
    await repo.insert_many(batch.inserts)
    await MemoryRepository(session).insert_many(batch.memories)
    if batch.transitions:
        await log_transitions(session, batch.transitions)
    for key, values in batch.updates.items():
        if key not in batch.deletes:
            await repo.update_values(key, values)
    learning = EpisodeLearningRepository(session)
    for key in batch.deletes:
        await repo.delete(key)
        await learning.forget_reflection(*key, now=datetime.now(UTC))
        if blobs.transactional:  # gone with the row
            await blobs.delete_prefix(episode_prefix(*key), session=session)
    # Completing an episode queues its learning job in the same transaction.
    done = completed(batch)
    now = datetime.now(UTC)
    await JobRepository(session).insert_many(
        [
            job_row(
                ns,
                LEARN,
                key=eid,
                payload={"episode_id": eid},
                now=now,
                max_attempts=max_attempts,
            )
            for ns, eid in done
        ]
        + [
            job_row(
                ns,
                CREDIT,
                key=f"revised:{eid}",
                payload={"episode_ids": [eid]},
                now=now,
                max_attempts=max_attempts,
            )
            for ns, eid in batch.revised
            if (ns, eid) not in batch.deletes
        ]
    )
    if batch.inserts or batch.updates or batch.deletes or batch.memories or batch.transitions:
        await session.commit()
    if (done or batch.revised) and on_completed is not None:
        on_completed()
    if blobs.transactional:
        return
    for ns, eid in batch.deletes:
        # Rows are gone and committed; a crash before this leaves orphans for the sweep.
        try:
            await blobs.delete_prefix(episode_prefix(ns, eid), session=session)
        except BlobStoreError:
            log.warning("payload delete failed; the sweep removes it", extra={"episode_id": eid})
