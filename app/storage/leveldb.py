"""LevelDB blob store (plyvel). Opened once per process; blocking calls run in threads.

Its writes are synced on their own: the SQL transaction each call is given is left alone."""

from __future__ import annotations

import asyncio
import logging
import shutil
import time
import weakref
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TypeVar

import plyvel
from sqlalchemy.ext.asyncio import AsyncConnection

from app.storage.blobs import BlobStoreError, Transaction
from app.storage.snapshot import LevelDBSnapshot, open_exclusive
from app.storage.staging import LevelDBLoad

T = TypeVar("T")
log = logging.getLogger("engram.blobs")
REOPEN_INTERVAL_S = 1.0
# Reopening writes a new log and manifest: tried only with this much room on the disk.
# Without it, the store stays open as it is, which still serves reads (LevelDB refuses
# writes after an I/O error, not reads); closed and not reopened, it would serve nothing.
REOPEN_FREE_BYTES = 8 * 1024 * 1024


def _prefix_end(prefix: bytes) -> bytes:
    # The first key after every key that starts with prefix (prefixes here end below 0xff).
    return prefix[:-1] + bytes([prefix[-1] + 1])


class LevelDBBlobStore:
    transactional = False

    def __init__(self, path: Path) -> None:
        self._db: plyvel.DB | None = open_exclusive(path)
        self.path = path
        # After an I/O error (a full or unwritable disk) LevelDB refuses every later write
        # until it is opened again: the store then reopens itself, at most once a second,
        # when nothing else is using it, so that it recovers once the disk is back.
        self.failure: str | None = None
        self._active = 0
        self._reopened: asyncio.Event | None = None
        self._next_reopen = 0.0
        self._snapshots: weakref.WeakSet[LevelDBSnapshot] = weakref.WeakSet()

    def _require(self) -> plyvel.DB:
        if self._db is None or self._db.closed:
            if self.failure is not None:
                raise BlobStoreError(f"payload store failing: {self.failure}")
            raise BlobStoreError("blob store is closed")
        return self._db

    async def _run(self, fn: Callable[[], T]) -> T:
        while self._reopened is not None:
            await self._reopened.wait()
        if self.failure is not None and self._may_reopen():
            await self._reopen()
        self._active += 1
        try:
            return await asyncio.to_thread(fn)
        except BlobStoreError:
            raise
        except plyvel.IOError as exc:
            self.failure = str(exc)
            raise BlobStoreError(f"blob store error: {exc}") from exc
        except (plyvel.Error, RuntimeError, OSError) as exc:
            raise BlobStoreError(f"blob store error: {exc}") from exc
        finally:
            self._active -= 1

    def _may_reopen(self) -> bool:
        return (
            self._active == 0
            and time.monotonic() >= self._next_reopen
            and not any(not s.closed for s in self._snapshots)
            and self._room()
        )

    def _room(self) -> bool:
        try:
            return shutil.disk_usage(self.path).free >= REOPEN_FREE_BYTES
        except OSError:
            return False

    async def _reopen(self) -> None:
        done = self._reopened = asyncio.Event()
        self._next_reopen = time.monotonic() + REOPEN_INTERVAL_S

        def _open_again() -> None:
            if self._db is not None and not self._db.closed:
                self._db.close()
            self._db = None
            self._db = open_exclusive(self.path)

        try:
            await asyncio.to_thread(_open_again)
        except (BlobStoreError, plyvel.Error, OSError) as exc:
            log.warning("payload store still failing", extra={"error": str(exc)})
        else:
            log.warning("payload store reopened", extra={"after": self.failure})
            self.failure = None
        finally:
            self._reopened = None
            done.set()

    async def write(
        self, puts: Mapping[bytes, bytes], deletes: Iterable[bytes] = (), *, session: Transaction
    ) -> None:
        dels = list(deletes)

        def _write() -> None:
            with self._require().write_batch(sync=True) as batch:
                for key in dels:
                    batch.delete(key)
                for key, value in puts.items():
                    batch.put(key, value)

        await self._run(_write)
        self.failure = None

    async def get(self, key: bytes, *, session: Transaction) -> bytes | None:
        return await self._run(lambda: self._require().get(key))

    async def get_prefix(self, prefix: bytes, *, session: Transaction) -> list[tuple[bytes, bytes]]:
        return await self._run(lambda: list(self._require().iterator(prefix=prefix)))

    async def scan_keys(
        self,
        prefix: bytes,
        *,
        session: Transaction,
        after: bytes | None = None,
        limit: int = 10_000,
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

    async def delete_prefix(self, prefix: bytes, *, session: Transaction) -> int:
        def _delete() -> int:
            db = self._require()
            keys = list(db.iterator(prefix=prefix, include_value=False))
            with db.write_batch(sync=True) as batch:
                for key in keys:
                    batch.delete(key)
            return len(keys)

        return await self._run(_delete)

    async def ping(self) -> None:
        """Raise BlobStoreError unless the store answers (and, after a failure, takes writes)."""
        if self.failure is None:
            await self._run(lambda: self._require().get(b"\x00ping"))
            return
        await self._run(lambda: self._require().put(b"\x00ping", b"", sync=True))
        self.failure = None  # a synced write went through: the store works again

    def snapshot(self, conn: AsyncConnection) -> LevelDBSnapshot:
        snap = LevelDBSnapshot(self._require())
        self._snapshots.add(snap)
        return snap

    def load(self, conn: AsyncConnection) -> LevelDBLoad:
        return LevelDBLoad(self._require(), self.path)

    def close(self) -> None:
        if self._db is not None and not self._db.closed:
            self._db.close()
