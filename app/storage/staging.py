"""A restore's payloads for LevelDB: written to a staging directory beside the store,
which replaces the store just before the restore's SQL commit and is put back if that
commit fails, so a failure at any point leaves the target as it was."""

from __future__ import annotations

import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path

import plyvel


class LevelDBLoad:
    def __init__(self, target: plyvel.DB, path: Path) -> None:
        # The target stays open (and locked) until the swap: no server starts meanwhile.
        self._target = target
        self._path = path
        self.location = str(path)
        self._staging = path.with_name(path.name + ".restoring")
        self._replaced = path.with_name(path.name + ".replaced")
        shutil.rmtree(self._staging, ignore_errors=True)
        self._staged = plyvel.DB(str(self._staging), create_if_missing=True, error_if_exists=True)

    async def has_payloads(self) -> bool:
        with self._target.iterator(include_value=False) as keys:
            return next(keys, None) is not None

    async def put(self, pairs: list[tuple[bytes, bytes]]) -> None:
        with self._staged.write_batch(sync=True) as batch:
            for key, value in pairs:
                batch.put(key, value)

    async def commit(self, commit_rows: Callable[[], Awaitable[None]]) -> None:
        self._staged.close()
        self._target.close()
        shutil.rmtree(self._replaced, ignore_errors=True)
        self._path.rename(self._replaced)
        self._staging.rename(self._path)
        try:
            await commit_rows()
        except BaseException:
            self._path.rename(self._staging)
            self._replaced.rename(self._path)
            raise
        shutil.rmtree(self._replaced, ignore_errors=True)

    def close(self) -> None:
        self._staged.close()
        shutil.rmtree(self._staging, ignore_errors=True)
