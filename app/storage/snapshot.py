"""Point-in-time reads of a LevelDB directory, and opening one for exclusive use."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import plyvel

from app.storage.blobs import BlobStoreError


class StoreInUse(BlobStoreError):
    """Another process holds the LevelDB directory (a running Engram)."""


class LevelDBSnapshot:
    """Every key of the database as it was when the snapshot was taken, in key order."""

    def __init__(self, db: plyvel.DB) -> None:
        self._snapshot: Any = db.snapshot()
        self._items: Iterator[tuple[bytes, bytes]] | None = self._snapshot.iterator()
        self.closed = False

    async def read(self, max_bytes: int) -> list[tuple[bytes, bytes]]:
        return await asyncio.to_thread(self._read, max_bytes)

    def _read(self, max_bytes: int) -> list[tuple[bytes, bytes]]:
        pairs: list[tuple[bytes, bytes]] = []
        if self._items is None:
            return pairs
        size = 0
        for key, value in self._items:
            pairs.append((key, value))
            size += len(key) + len(value)
            if size >= max_bytes:
                return pairs
        self._items = None
        return pairs

    async def close(self) -> None:
        await asyncio.to_thread(self._close)

    def _close(self) -> None:
        if self._items is not None:
            self._items.close()  # type: ignore[attr-defined]
            self._items = None
        self._snapshot.close()
        self.closed = True


def open_exclusive(path: Path) -> plyvel.DB:
    """Open a LevelDB directory (created if missing); StoreInUse if a process holds it."""
    path.mkdir(parents=True, exist_ok=True)
    try:
        return plyvel.DB(str(path), create_if_missing=True)
    except plyvel.IOError as exc:
        if "lock" in str(exc).lower():
            raise StoreInUse(
                f"the payload store {path} is in use by another Engram process "
                "(a running `engram serve`?)"
            ) from exc
        raise BlobStoreError(f"cannot open LevelDB at {path}: {exc}") from exc
