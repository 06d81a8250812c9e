"""Blob store protocol and the episode payload key layout.

Invariant: no SQL row points to a missing payload. Payloads are written (and
synced) before the SQL transaction that references them commits, and deleted
only after the row is gone; payloads without a row are removed by the sweep.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol


class BlobStoreError(Exception):
    """The blob store cannot serve the call (closed, unwritable, full, corrupt)."""


class BlobSnapshot(Protocol):
    """A point-in-time view of every key; its calls block (run them in a thread)."""

    def read(self, max_bytes: int) -> list[tuple[bytes, bytes]]:
        """The next pairs in key order, about max_bytes of them; empty at the end."""
        ...

    def close(self) -> None: ...


class BlobStore(Protocol):
    async def write(self, puts: Mapping[bytes, bytes], deletes: Iterable[bytes] = ()) -> None:
        """Apply puts and deletes atomically, synced to disk before returning."""
        ...

    async def get(self, key: bytes) -> bytes | None: ...

    async def get_prefix(self, prefix: bytes) -> list[tuple[bytes, bytes]]: ...

    async def scan_keys(
        self, prefix: bytes, *, after: bytes | None = None, limit: int = 10_000
    ) -> list[bytes]:
        """Keys under prefix in order, starting after `after`, at most `limit`."""
        ...

    async def delete_prefix(self, prefix: bytes) -> int: ...

    async def ping(self) -> None: ...

    def snapshot(self) -> BlobSnapshot:
        """A consistent view of the store as it is now (cheap; does not block writers)."""
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


def parse_episode_key(key: bytes) -> tuple[str, str, int | None]:
    """(namespace, episode_id, first seq of the chunk, or None for the document)."""
    _, namespace, episode_id, leaf = key.decode().split("/", 3)
    return namespace, episode_id, (int(leaf[1:]) if leaf.startswith("c") else None)
