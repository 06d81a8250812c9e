"""Restore: load an archive into stopped, empty (or, when forced, replaced) stores."""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from alembic.script import ScriptDirectory

from app.core.config import Settings
from app.db.backends import create_engine
from app.db.engine import WRITE_OPTION
from app.db.migrate import alembic_config, migrate
from app.repositories.backup import BackupRepository, tables
from app.services.operations.backup_format import (
    PAYLOADS,
    ArchiveError,
    ArchiveReader,
    column_types,
    decode_payloads,
    decode_rows,
)
from app.storage import open_blob_store
from app.storage.blobs import BlobLoad

Progress = Callable[[int], None]


class RestoreRefused(Exception):
    """The target stores are not empty (and --force was not given)."""


@dataclass
class Contents:
    """What a verified archive holds."""

    revision: str
    created_at: str
    rows: dict[str, int]
    payloads: int
    payload_bytes: int
    columns: dict[str, dict[str, str]] = field(repr=False)

    @property
    def records(self) -> int:
        return sum(self.rows.values()) + self.payloads


class _Counting(io.RawIOBase):
    """A file whose reads are reported (for a progress bar over the archive's bytes)."""

    def __init__(self, file: IO[bytes], on_bytes: Progress | None) -> None:
        self._file = file
        self._on_bytes = on_bytes

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        data = self._file.read(size)
        if self._on_bytes is not None:
            self._on_bytes(len(data))
        return data


def verify(path: Path, *, on_bytes: Progress | None = None) -> Contents:
    """Read the whole archive and check it against its manifest; ArchiveError if not."""
    with path.open("rb") as file:
        reader = ArchiveReader(_Counting(file, on_bytes))  # type: ignore[arg-type]
        for _ in reader:
            pass
        reader.check()
    manifest = reader.manifest
    sections = manifest["tables"]
    return Contents(
        revision=str(manifest.get("revision")),
        created_at=str(manifest.get("created_at")),
        rows={name: int(s["rows"]) for name, s in sections.items()},
        payloads=int(manifest["payloads"]["rows"]),
        payload_bytes=int(manifest["payloads"]["bytes"]),
        columns={name: s.get("columns") for name, s in sections.items()},
    )


def check_compatible(contents: Contents) -> None:
    """The archive must be of this code's schema: same revision, same tables and columns."""
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    if contents.revision != head:
        raise ArchiveError(
            f"the archive is of schema revision {contents.revision}; this Engram is at "
            f"{head}: restore it with the Engram version that wrote it, then upgrade"
        )
    expected = {str(t.name): column_types(t) for t in tables()}
    if contents.columns != expected:
        differ = sorted(set(contents.columns) ^ set(expected)) or sorted(
            name for name in expected if contents.columns.get(name) != expected[name]
        )
        raise ArchiveError(f"the archive's tables differ from this schema: {', '.join(differ)}")


async def restore(
    path: Path,
    contents: Contents,
    settings: Settings,
    *,
    force: bool = False,
    on_records: Progress | None = None,
) -> None:
    """Load a verified archive: every table in one transaction, and the payloads into the
    payload store so that they are seen when that transaction commits (`BlobLoad`): a
    failure at any point leaves the target as it was."""
    check_compatible(contents)
    store = open_blob_store(settings)  # LevelDB: held from now on, so no server starts
    engine = create_engine(settings)
    try:
        await migrate(engine)
        async with engine.execution_options(**{WRITE_OPTION: True}).connect() as conn:
            await conn.begin()
            repo = BackupRepository(conn)
            load = store.load(conn)
            try:
                if not await repo.is_empty() or await load.has_payloads():
                    if not force:
                        raise RestoreRefused(
                            f"the target is not empty ({settings.database_url} or "
                            f"{load.location}): restore into empty stores, or pass --force "
                            "to replace them"
                        )
                    await repo.clear()
                await _load(path, repo, load, on_records)
                await load.commit(conn.commit)
            finally:
                load.close()
    finally:
        store.close()
        await engine.dispose()


async def _load(
    path: Path, repo: BackupRepository, load: BlobLoad, on_records: Progress | None
) -> None:
    by_name = {str(t.name): t for t in tables()}
    types = {name: column_types(t) for name, t in by_name.items()}
    with path.open("rb") as file:
        # Read again and checked again: the file could have changed since it was verified.
        reader = ArchiveReader(file)
        for section, data in reader:
            if section == PAYLOADS:
                pairs = decode_payloads(data)
                await load.put(pairs)
                count = len(pairs)
            else:
                rows = decode_rows(data, types[section])
                await repo.insert(by_name[section], rows)
                count = len(rows)
            if on_records is not None:
                on_records(count)
        reader.check()
