"""LevelDB blob store (plyvel). Opened once per process; blocking calls run in threads."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TypeVar

import plyvel

from app.storage.blobs import BlobStoreError
from app.storage.snapshot import LevelDBSnapshot

T = TypeVar("T")


def _prefix_end(prefix: bytes) -> bytes:
    # The first key after every key that starts with prefix (prefixes here end below 0xff).
    return prefix[:-1] + bytes([prefix[-1] + 1])


class LevelDBBlobStore:
    def __init__(self, path: Path) -> None:
        path.mkdir(parents=True, exist_ok=True)
        try:
            self._db: plyvel.DB | None = plyvel.DB(str(path), create_if_missing=True)
        except plyvel.IOError as exc:
            raise BlobStoreError(
                f"cannot open LevelDB at {path}: {exc} (is another Engram process using it?)"
            ) from exc
        self.path = path

    def _require(self) -> plyvel.DB:
        if self._db is None or self._db.closed:
            raise BlobStoreError("blob store is closed")
        return self._db

    async def _run(self, fn: Callable[[], T]) -> T:
        try:
            return await asyncio.to_thread(fn)
        except BlobStoreError:
            raise
        except (plyvel.Error, RuntimeError, OSError) as exc:
            raise BlobStoreError(f"blob store error: {exc}") from exc

    async def write(self, puts: Mapping[bytes, bytes], deletes: Iterable[bytes] = ()) -> None:
        dels = list(deletes)

        def _write() -> None:
            with self._require().write_batch(sync=True) as batch:
                for key, value in puts.items():
                    batch.put(key, value)
                for key in dels:
                    batch.delete(key)

        await self._run(_write)

    async def get(self, key: bytes) -> bytes | None:
        return await self._run(lambda: self._require().get(key))

    async def get_prefix(self, prefix: bytes) -> list[tuple[bytes, bytes]]:
        return await self._run(lambda: list(self._require().iterator(prefix=prefix)))

    async def scan_keys(
        self, prefix: bytes, *, after: bytes | None = None, limit: int = 10_000
    ) -> list[bytes]:
        def _scan() -> list[bytes]:
            db = self._require()
            if after is None:
                it = db.iterator(prefix=prefix, include_value=False)
            else:
                it = db.iterator(
                    start=after, stop=_prefix_end(prefix), include_start=False, include_value=False
                )
            keys: list[bytes] = []
            with it:
                for key in it:
                    keys.append(key)
                    if len(keys) >= limit:
                        break
            return keys

        return await self._run(_scan)

    async def delete_prefix(self, prefix: bytes) -> int:
        def _delete() -> int:
            db = self._require()
            keys = list(db.iterator(prefix=prefix, include_value=False))
            with db.write_batch(sync=True) as batch:
                for key in keys:
                    batch.delete(key)
            return len(keys)

        return await self._run(_delete)

    async def ping(self) -> None:
        await self._run(lambda: self._require().get(b"\x00ping"))

    def snapshot(self) -> LevelDBSnapshot:
        return LevelDBSnapshot(self._require())

    def close(self) -> None:
        if self._db is not None and not self._db.closed:
            self._db.close()
