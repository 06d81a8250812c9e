"""Where episode payloads are kept: the protocol (`blobs.py`) and its stores."""

from __future__ import annotations

from app.core.config import Settings
from app.storage.blobs import BlobStore


def open_blob_store(settings: Settings) -> BlobStore:
    """The payload store the settings name: LevelDB in `settings.blob_dir` (the default;
    StoreInUse when another process holds it), or rows of the SQL database."""
    if settings.blob_store == "sql":
        from app.storage.sql import SQLBlobStore

        return SQLBlobStore()
    from app.storage.leveldb import LevelDBBlobStore

    return LevelDBBlobStore(settings.blob_dir)


__all__ = ["BlobStore", "open_blob_store"]
