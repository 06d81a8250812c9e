"""Backups: one consistent snapshot of every table and payload, streamed as an archive.

Consistency: the SQL read transaction (SQLite: one read transaction; PostgreSQL:
REPEATABLE READ) and the payload snapshot are both taken while the episode writer is
paused (`Writer.run_paused`), when no payload or episode write is in flight.
LevelDB's payloads are written before the SQL commit that points to them and deleted
only after that row's deletion commits, so every row of the SQL snapshot finds its
payload in the LevelDB one, and a delete or sweep that runs while the archive streams
cannot break it. Payloads kept in SQL are read in the same transaction as the rows.
Either way they travel as the archive's payloads section: an archive made with one
store restores into the other.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson
from sqlalchemy import Table
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.core.errors import StoreUnavailable
from app.db.backends import backend_of
from app.repositories.backup import BackupRepository, tables
from app.services.operations.backup_format import (
    FORMAT,
    HEADER,
    MANIFEST,
    PAYLOADS,
    ArchiveWriter,
    column_types,
    encode_payloads,
    encode_rows,
)
from app.storage.blobs import BlobSnapshot

RunPaused = Callable[[Callable[[], Awaitable[Any]]], Awaitable[Any]]
# Called with a section (a table's name or PAYLOADS) and the records just written.
Progress = Callable[[str, int], None]
MEMBER_BYTES = 1 << 20
ROW_BATCH = 500


@dataclass
class Snapshot:
    """An open SQL read transaction and a payload snapshot of the same moment."""

    conn: AsyncConnection
    blobs: BlobSnapshot
    revision: str
    counts: dict[str, int]
    created_at: datetime = field(default_factory=lambda: datetime.now(UTC))

    @property
    def rows(self) -> int:
        return sum(self.counts.values())

    async def close(self) -> None:
        try:
            await self.blobs.close()
        finally:
            await self.conn.close()


async def open_snapshot(
    engine: AsyncEngine,
    take_blobs: Callable[[AsyncConnection], BlobSnapshot],
    *,
    run_paused: RunPaused | None = None,
) -> Snapshot:
    """Begin the SQL snapshot and take the payload snapshot at one quiet moment."""
    conn = await engine.connect()
    try:
        await conn.begin()
        repo = BackupRepository(conn)
        await repo.set_snapshot_isolation()

        async def take() -> tuple[str, BlobSnapshot]:
            # The first read fixes the transaction's snapshot.
            revision = await repo.revision()
            if revision is None:
                raise StoreUnavailable("the database has no schema yet: run `engram migrate`")
            return revision, take_blobs(conn)

        revision, blobs = await (run_paused(take) if run_paused is not None else take())
        try:
            counts = {table.name: await repo.count(table) for table in tables()}
        except BaseException:
            await blobs.close()
            raise
    except BaseException:
        await conn.close()
        raise
    return Snapshot(conn=conn, blobs=blobs, revision=revision, counts=counts)


def _describe(table: Table) -> dict[str, Any]:
    return {"columns": column_types(table)}


async def archive(
    snapshot: Snapshot, *, on_records: Progress | None = None
) -> AsyncIterator[bytes]:
    """The archive's bytes, member by member; closes the snapshot when done or abandoned."""
    try:
        writer = ArchiveWriter(mtime=snapshot.created_at.timestamp())
        header = {
            "format": FORMAT,
            "revision": snapshot.revision,
            "created_at": snapshot.created_at.isoformat(),
            "backend": backend_of(snapshot.conn).name,
            "tables": {
                str(t.name): {**_describe(t), "rows": snapshot.counts[t.name]} for t in tables()
            },
        }
        yield writer.add(HEADER, orjson.dumps(header))
        sections: dict[str, dict[str, Any]] = {}
        for table in tables():
            section = _Section(writer, str(table.name), on_records)
            columns = [str(c.name) for c in table.columns]
            async for batch in BackupRepository(snapshot.conn).rows(table, batch=ROW_BATCH):
                if data := await section.add(encode_rows(columns, batch), len(batch)):
                    yield data
            if data := await section.flush():
                yield data
            sections[str(table.name)] = {**_describe(table), **section.summary()}
        payloads = _Section(writer, PAYLOADS, on_records)
        while pairs := await snapshot.blobs.read(MEMBER_BYTES):
            if data := await payloads.add(encode_payloads(pairs), len(pairs)):
                yield data
        if data := await payloads.flush():
            yield data
        manifest = {**header, "tables": sections, "payloads": payloads.summary()}
        yield writer.add(MANIFEST, orjson.dumps(manifest, option=orjson.OPT_INDENT_2))
        yield writer.close()
    finally:
        await snapshot.close()


class _Section:
    """One table's (or the payloads') members, cut at about MEMBER_BYTES, and checksum."""

    def __init__(self, writer: ArchiveWriter, section: str, on_records: Progress | None) -> None:
        self._writer = writer
        self._section = section
        self._prefix, self._suffix = (
            (f"{PAYLOADS}/", ".bin") if section == PAYLOADS else (f"tables/{section}/", ".ndjson")
        )
        self._on_records = on_records
        self._digest = hashlib.sha256()
        self._pending: list[bytes] = []
        self._size = 0
        self._records = 0
        self._unreported = 0
        self._bytes = 0
        self._members = 0

    async def add(self, data: bytes, records: int) -> bytes:
        self._pending.append(data)
        self._size += len(data)
        self._records += records
        self._unreported += records
        return await self.flush() if self._size >= MEMBER_BYTES else b""

    async def flush(self) -> bytes:
        if not self._pending:
            return b""
        data = b"".join(self._pending)
        self._pending, self._size = [], 0
        self._digest.update(data)
        self._bytes += len(data)
        self._members += 1
        name = f"{self._prefix}{self._members:06d}{self._suffix}"
        # Compression is CPU work: off the event loop.
        out = await asyncio.to_thread(self._writer.add, name, data)
        if self._on_records is not None:
            self._on_records(self._section, self._unreported)
        self._unreported = 0
        return out

    def summary(self) -> dict[str, Any]:
        return {"rows": self._records, "bytes": self._bytes, "sha256": self._digest.hexdigest()}
