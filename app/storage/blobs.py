"""Blob store protocol and the episode payload key layout.

Invariant: no SQL row points to a missing payload. A store either writes in the SQL
transaction it is given, so payloads commit with the rows (`transactional`: SQL), or
syncs each write before returning (LevelDB): then payloads are written before the
transaction that references them commits and deleted only after the row is gone, and
payloads without a row are removed by the sweep.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Protocol

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

# The transaction a store's calls run in (a store that keeps its payloads elsewhere
# takes it too, and leaves it alone).
Transaction = AsyncSession | AsyncConnection


class BlobStoreError(Exception):
    """The blob store cannot serve the call (closed, unwritable, full, corrupt)."""


class BlobSnapshot(Protocol):
    """A point-in-time view of every key."""

    async def read(self, max_bytes: int) -> list[tuple[bytes, bytes]]:
        """The next pairs in key order, about max_bytes of them; empty at the end."""
        ...

    async def close(self) -> None: ...


class BlobLoad(Protocol):
    """An archive's payloads on their way into a store (a restore): none is seen before
    `commit`, which commits them together with the restore's rows."""

    location: str  # where they go, for messages

    async def has_payloads(self) -> bool:
        """Whether the store holds payloads already."""
        ...

    async def put(self, pairs: list[tuple[bytes, bytes]]) -> None: ...

    async def commit(self, commit_rows: Callable[[], Awaitable[None]]) -> None:
        """Commit the rows (`commit_rows`) and the payloads put, both or neither."""
        ...

    def close(self) -> None:
        """Drop what was put and not committed."""
        ...


class BlobStore(Protocol):
    # True: writes join the transaction given and commit with it. False: each write is
    # synced on its own before returning, so a delete waits for its rows' commit.
    transactional: bool

    async def write(
        self, puts: Mapping[bytes, bytes], deletes: Iterable[bytes] = (), *, session: Transaction
    ) -> None:
        """Remove deletes, then store puts, atomically (synced, or in the session)."""
        ...

    async def get(self, key: bytes, *, session: Transaction) -> bytes | None: ...

    async def get_prefix(
        self, prefix: bytes, *, session: Transaction
    ) -> list[tuple[bytes, bytes]]: ...

    async def scan_keys(
        self,
        prefix: bytes,
        *,
        session: Transaction,
        after: bytes | None = None,
        limit: int = 10_000,
    ) -> list[bytes]:
        """Keys under prefix in the store's order, starting after `after`, at most `limit`."""
        ...

    async def delete_prefix(self, prefix: bytes, *, session: Transaction) -> int: ...

    async def ping(self) -> None: ...

    def snapshot(self, conn: AsyncConnection) -> BlobSnapshot:
        """A consistent view of the store as it is now, taken while `conn`'s read
        transaction sees the same moment (cheap; does not block writers)."""
        ...

    def load(self, conn: AsyncConnection) -> BlobLoad:
        """Where a restore in `conn`'s transaction puts an archive's payloads (the service
        is stopped; what the store holds is replaced when the restore commits)."""
        ...

    def close(self) -> None: ...


# Key layout. Namespaces and episode ids are restricted to [A-Za-z0-9._:-], so
# "/" separates fields unambiguously. An episode is a document (context,
# metadata) plus one chunk per write of steps: the chunk holds a JSON array of
# the steps seq first_seq, first_seq+1, ...
EPISODE_PREFIX = b"ep/"


def episode_prefix(namespace: str, episode_id: str) -> bytes:
    return f"ep/{namespace}/{episode_id}/".encode()


def episode_doc_key(namespace: str, episode_id: str) -> bytes:
    return episode_prefix(namespace, episode_id) + b"doc"


def episode_chunk_key(namespace: str, episode_id: str, first_seq: int) -> bytes:
    return episode_prefix(namespace, episode_id) + f"c{first_seq:06d}".encode()


def split_episode_key(key: bytes) -> tuple[str, str, str]:
    """(namespace, episode_id, leaf): the leaf is "doc" or a chunk's "c{first_seq}";
    `episode_prefix(namespace, episode_id) + leaf` is the key again."""
    _, namespace, episode_id, leaf = key.decode().split("/", 3)
    return namespace, episode_id, leaf


def parse_episode_key(key: bytes) -> tuple[str, str, int | None]:
    """(namespace, episode_id, first seq of the chunk, or None for the document)."""
    namespace, episode_id, leaf = split_episode_key(key)
    return namespace, episode_id, (int(leaf[1:]) if leaf.startswith("c") else None)
