"""The orphan sweep: payloads no row points to (a crash between a payload write and its
SQL commit, or before a deleted episode's payloads went) are removed, a chunk of keys
at a time."""

from __future__ import annotations

import contextlib
import logging
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.repositories.episodes import EpisodeRepository
from app.services.writer.commands import Sweep, as_app_error
from app.storage.blobs import EPISODE_PREFIX, BlobStore, parse_episode_key

log = logging.getLogger("engram.writer")


async def sweep_chunk(
    cmd: Sweep,
    *,
    blobs: BlobStore,
    sessionmaker: async_sessionmaker[AsyncSession],
    turn: contextlib.AbstractAsyncContextManager[Any],
) -> None:
    """Remove the orphans among the chunk of keys after `cmd.after`; answers the number
    removed and the key to continue after (None at the end)."""
    after, limit = cmd.after, cmd.limit
    if blobs.transactional:
        # Its payloads commit and go with their rows: there are no orphans to look for
        # (a restore leaves none either), and sweeping would race other processes.
        cmd.future.set_result((0, None))
        return
    try:
        async with turn, sessionmaker() as session:
            keys = await blobs.scan_keys(EPISODE_PREFIX, session=session, after=after, limit=limit)
            parsed = [(key, *parse_episode_key(key)) for key in keys]
            pairs = list({(ns, eid) for _, ns, eid, _ in parsed})
            counts = await EpisodeRepository(session).step_counts(pairs)
            orphans = [
                key
                for key, ns, eid, seq in parsed
                if (ns, eid) not in counts or (seq is not None and seq >= counts[(ns, eid)])
            ]
            if orphans:
                await blobs.write({}, deletes=orphans, session=session)
                log.info("swept orphan payloads", extra={"keys": len(orphans)})
            await session.commit()
        next_after = keys[-1] if len(keys) >= limit else None
        cmd.future.set_result((len(orphans), next_after))
    except Exception as exc:
        cmd.future.set_exception(as_app_error(exc))
