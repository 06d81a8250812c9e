"""Where episode payloads are kept: the protocol (`blobs.py`) and its stores."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.config import Settings
from app.storage.blobs import EPISODE_PREFIX, BlobStore


def open_blob_store(settings: Settings) -> BlobStore:
    """The payload store the settings name: LevelDB in `settings.blob_dir` (the default;
    StoreInUse when another process holds it), or rows of the SQL database."""
    if settings.blob_store == "sql":
        from app.storage.sql import SQLBlobStore

        return SQLBlobStore()
    from app.storage.leveldb import LevelDBBlobStore

    return LevelDBBlobStore(settings.blob_dir)


async def misplaced_payloads(
    settings: Settings, blobs: BlobStore, session: AsyncSession
) -> str | None:
    """Why the store cannot serve the stored episodes, if it holds none of their payloads
    (ENGRAM_BLOB_STORE changed without moving them): every episode has a payload."""
    from app.repositories.episodes import EpisodeRepository

    if not await EpisodeRepository(session).any():
        return None
    if await blobs.scan_keys(EPISODE_PREFIX, session=session, limit=1):
        return None
    return (
        f"episodes are stored, but the payload store ENGRAM_BLOB_STORE={settings.blob_store} "
        "names holds none of their payloads: set it back to the store that holds them, or "
        "move them (engram backup with that store, then engram restore --force with this one)"
    )


__all__ = ["BlobStore", "misplaced_payloads", "open_blob_store"]
