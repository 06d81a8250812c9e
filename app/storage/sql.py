"""Episode payloads as SQL rows (ENGRAM_BLOB_STORE=sql), in the database of the index rows.

Every call runs in the transaction it is given: an episode's payloads commit or roll
back with its row, so no row points to a missing payload and no payload outlives its
row, whichever process wrote them. What lets several processes share one database.

Values are stored compressed (zlib, level 1, as LevelDB stores them with Snappy): an
episode's JSON shrinks several times over for little CPU, and SQLite has that many fewer
pages to log and checkpoint. The protocol's values, and the backup's, are the payloads
themselves."""

from __future__ import annotations

import zlib
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Mapping

from sqlalchemy.ext.asyncio import AsyncConnection

from app.repositories.episode_payloads import EpisodePayloadRepository, Part
from app.storage.blobs import EPISODE_PREFIX, Transaction, episode_prefix, split_episode_key

SNAPSHOT_BATCH = 256
LEVEL = 1


def _pack(value: bytes) -> bytes:
    return zlib.compress(value, LEVEL)


def _unpack(data: bytes) -> bytes:
    return zlib.decompress(data)


_part = split_episode_key


def _key(part: Part) -> bytes:
    namespace, episode_id, leaf = part
    return episode_prefix(namespace, episode_id) + leaf.encode()


def _episode(prefix: bytes) -> tuple[str, str] | None:
    """The episode a prefix names (`ep/{ns}/{episode}/`), or None for every episode (`ep/`)."""
    if prefix == EPISODE_PREFIX:
        return None
    ns, eid, rest = split_episode_key(prefix)
    if rest:
        raise ValueError(f"not an episode's prefix: {prefix!r}")
    return ns, eid


class SQLBlobStore:
    transactional = True

    async def write(
        self, puts: Mapping[bytes, bytes], deletes: Iterable[bytes] = (), *, session: Transaction
    ) -> None:
        await EpisodePayloadRepository(session).write(
            [(_part(key), _pack(value)) for key, value in puts.items()],
            [_part(key) for key in deletes],
        )

    async def get(self, key: bytes, *, session: Transaction) -> bytes | None:
        data = await EpisodePayloadRepository(session).get(*_part(key))
        return None if data is None else _unpack(data)

    async def get_prefix(self, prefix: bytes, *, session: Transaction) -> list[tuple[bytes, bytes]]:
        items = await EpisodePayloadRepository(session).items(_episode(prefix))
        return [(_key(part), _unpack(data)) for part, data in items]

    async def scan_keys(
        self,
        prefix: bytes,
        *,
        session: Transaction,
        after: bytes | None = None,
        limit: int = 10_000,
    ) -> list[bytes]:
        parts = await EpisodePayloadRepository(session).keys(
            _episode(prefix), after=None if after is None else _part(after), limit=limit
        )
        return [_key(part) for part in parts]

    async def delete_prefix(self, prefix: bytes, *, session: Transaction) -> int:
        return await EpisodePayloadRepository(session).delete(_episode(prefix))

    async def ping(self) -> None:
        """The payloads answer when the database does (which /ready checks on its own)."""

    def snapshot(self, conn: AsyncConnection) -> SQLSnapshot:
        return SQLSnapshot(conn)

    def load(self, conn: AsyncConnection) -> SQLLoad:
        return SQLLoad(conn)

    def close(self) -> None:
        """Nothing of its own to close: the engine is the backend's."""


class SQLLoad:
    """A restore's payloads, inserted in its transaction (cleared with the tables); those
    no row points to (an archive of LevelDB may hold some) are left out."""

    location = "the database's episode payloads"

    def __init__(self, conn: AsyncConnection) -> None:
        self._conn = conn

    async def has_payloads(self) -> bool:
        return bool(await EpisodePayloadRepository(self._conn).keys(None, after=None, limit=1))

    async def put(self, pairs: list[tuple[bytes, bytes]]) -> None:
        await EpisodePayloadRepository(self._conn).write(
            [(_part(key), _pack(value)) for key, value in pairs], []
        )

    async def commit(self, commit_rows: Callable[[], Awaitable[None]]) -> None:
        await EpisodePayloadRepository(self._conn).delete_orphans()
        await commit_rows()

    def close(self) -> None:
        """What was put goes with the transaction, if it did not commit."""


class SQLSnapshot:
    """The payloads as `conn`'s read transaction sees them, in key order."""

    def __init__(self, conn: AsyncConnection) -> None:
        self._rows: AsyncGenerator[list[tuple[Part, bytes]]] | None = None
        self._conn = conn

    async def read(self, max_bytes: int) -> list[tuple[bytes, bytes]]:
        """Whole batches of rows until about max_bytes."""
        pairs: list[tuple[bytes, bytes]] = []
        if self._rows is None:
            self._rows = EpisodePayloadRepository(self._conn).stream(batch=SNAPSHOT_BATCH)
        size = 0
        async for rows in self._rows:
            for part, data in rows:
                key, value = _key(part), _unpack(data)
                pairs.append((key, value))
                size += len(key) + len(value)
            if size >= max_bytes:
                break
        return pairs

    async def close(self) -> None:
        if self._rows is not None:
            await self._rows.aclose()
            self._rows = None
