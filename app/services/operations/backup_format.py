"""The backup archive: a gzip-compressed tar of NDJSON tables and binary payload chunks.

Members, in order: `header.json` (format, schema revision, row counts at the snapshot),
`tables/<table>/<n>.ndjson` (one JSON object per row, values typed by the column
types listed in the header), `payloads/<n>.bin` (records of key length, value length,
key, value; lengths as 4-byte big-endian) and `manifest.json` last, with each section's
row count and SHA-256 over its members' bytes. A portable logical format: an archive
of a SQLite deployment restores into PostgreSQL and back.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import struct
import tarfile
import zlib
from collections.abc import Iterator
from datetime import datetime
from typing import IO, Any

import orjson
from sqlalchemy import JSON, Boolean, Float, Integer, Table

from app.models.base import UTCDateTime

FORMAT = 1
HEADER = "header.json"
MANIFEST = "manifest.json"
PAYLOADS = "payloads"
_LENGTHS = struct.Struct(">II")


class ArchiveError(Exception):
    """The archive is unreadable, truncated, altered or of another format or schema."""


def column_types(table: Table) -> dict[str, str]:
    """How each column's values are written: datetime, json, float, integer, boolean, text."""
    kinds: dict[str, str] = {}
    for column in table.columns:
        kind = "text"
        if isinstance(column.type, UTCDateTime):
            kind = "datetime"
        elif isinstance(column.type, JSON):
            kind = "json"
        elif isinstance(column.type, Boolean):
            kind = "boolean"
        elif isinstance(column.type, Float):
            kind = "float"
        elif isinstance(column.type, Integer):
            kind = "integer"
        kinds[str(column.name)] = kind
    return kinds


def encode_rows(columns: list[str], rows: Any) -> bytes:
    """NDJSON of the rows; datetimes in RFC 3339 with their UTC offset."""
    return b"".join(
        orjson.dumps(dict(zip(columns, row, strict=True)), option=orjson.OPT_APPEND_NEWLINE)
        for row in rows
    )


def decode_rows(data: bytes, types: dict[str, str]) -> list[dict[str, Any]]:
    stamps = [name for name, kind in types.items() if kind == "datetime"]
    rows: list[dict[str, Any]] = []
    for line in data.splitlines():
        row = orjson.loads(line)
        if not isinstance(row, dict) or row.keys() != types.keys():
            raise ArchiveError("a table row does not have the table's columns")
        for name in stamps:
            if row[name] is not None:
                row[name] = datetime.fromisoformat(row[name])
        rows.append(row)
    return rows


def encode_payloads(pairs: list[tuple[bytes, bytes]]) -> bytes:
    return b"".join(_LENGTHS.pack(len(k), len(v)) + k + v for k, v in pairs)


def decode_payloads(data: bytes) -> list[tuple[bytes, bytes]]:
    pairs: list[tuple[bytes, bytes]] = []
    at = 0
    while at < len(data):
        if at + _LENGTHS.size > len(data):
            raise ArchiveError("a payload record is cut short")
        klen, vlen = _LENGTHS.unpack_from(data, at)
        at += _LENGTHS.size
        if at + klen + vlen > len(data):
            raise ArchiveError("a payload record is cut short")
        pairs.append((data[at : at + klen], data[at + klen : at + klen + vlen]))
        at += klen + vlen
    return pairs


class ArchiveWriter:
    """Builds the archive member by member; each call returns the compressed bytes made."""

    def __init__(self, *, mtime: float) -> None:
        self._out = bytearray()
        self._zip = zlib.compressobj(6, zlib.DEFLATED, 31)  # wbits 31: the gzip format
        self._tar = tarfile.open(fileobj=_Sink(self), mode="w|", format=tarfile.PAX_FORMAT)
        self._mtime = mtime

    def _take(self) -> bytes:
        data = bytes(self._out)
        self._out.clear()
        return data

    def add(self, name: str, data: bytes) -> bytes:
        info = tarfile.TarInfo(name)
        info.size = len(data)
        info.mtime = int(self._mtime)
        info.mode = 0o600
        self._tar.addfile(info, io.BytesIO(data))
        return self._take()

    def close(self) -> bytes:
        self._tar.close()
        self._out += self._zip.flush()
        return self._take()


class _Sink(io.RawIOBase):
    """What tarfile writes into: compressed on the way."""

    def __init__(self, archive: ArchiveWriter) -> None:
        self._archive = archive

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        chunk = bytes(data)
        self._archive._out += self._archive._zip.compress(chunk)
        return len(chunk)


def members(file: IO[bytes]) -> Iterator[tuple[str, bytes]]:
    """(name, content) of each member in order; ArchiveError when unreadable or cut short."""
    try:
        # gzip's reader, not tarfile's: it checks the stream's end and checksum, which the
        # drain below reaches, so an archive cut inside its tar padding is refused too.
        with gzip.GzipFile(fileobj=file, mode="rb") as unzipped:
            with tarfile.open(fileobj=unzipped, mode="r|") as tar:
                for info in tar:
                    if not info.isfile():
                        raise ArchiveError(f"unexpected member {info.name!r}")
                    extracted = tar.extractfile(info)
                    assert extracted is not None
                    yield info.name, extracted.read()
            while unzipped.read(1 << 16):
                pass
    except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:
        raise ArchiveError(f"the archive is truncated or corrupt ({exc})") from exc


class ArchiveReader:
    """Reads an archive's sections in order and checks them against its manifest."""

    def __init__(self, file: IO[bytes]) -> None:
        self._file = file
        self.header: dict[str, Any] = {}
        self.manifest: dict[str, Any] = {}
        self._digests: dict[str, Any] = {}
        self._records: dict[str, int] = {}

    def __iter__(self) -> Iterator[tuple[str, bytes]]:
        """(section, content) of each table or payload member: a table name or PAYLOADS."""
        for name, data in members(self._file):
            if self.manifest:
                raise ArchiveError(f"member {name!r} after the manifest")
            if not self.header:
                self.header = _load_header(name, data)
            elif name == MANIFEST:
                self.manifest = _json(name, data)
            else:
                section = _section(name, self.header)
                records = data.count(b"\n") if section != PAYLOADS else len(decode_payloads(data))
                digest = self._digests.setdefault(section, hashlib.sha256())
                digest.update(data)
                self._records[section] = self._records.get(section, 0) + records
                yield section, data

    def check(self) -> None:
        """ArchiveError unless every section matches the manifest's counts and checksums."""
        if not self.manifest:
            raise ArchiveError("the archive has no manifest: it is truncated")
        expected = {**self.manifest.get("tables", {}), PAYLOADS: self.manifest.get("payloads")}
        if set(self.manifest.get("tables", {})) != set(self.header["tables"]):
            raise ArchiveError("the manifest and the header list different tables")
        for section, summary in expected.items():
            if not isinstance(summary, dict):
                raise ArchiveError(f"the manifest has no entry for {section}")
            digest = self._digests.get(section, hashlib.sha256()).hexdigest()
            records = self._records.get(section, 0)
            if digest != summary.get("sha256") or records != summary.get("rows"):
                raise ArchiveError(
                    f"{section}: {records} records with checksum {digest[:12]}…, the manifest "
                    f"says {summary.get('rows')} with {str(summary.get('sha256'))[:12]}…"
                )


def _json(name: str, data: bytes) -> dict[str, Any]:
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise ArchiveError(f"{name} is not valid JSON") from exc
    if not isinstance(value, dict):
        raise ArchiveError(f"{name} is not a JSON object")
    return value


def _load_header(name: str, data: bytes) -> dict[str, Any]:
    if name != HEADER:
        raise ArchiveError(f"not an Engram backup: it starts with {name!r}, not {HEADER}")
    header = _json(name, data)
    if header.get("format") != FORMAT:
        raise ArchiveError(f"archive format {header.get('format')!r}; this Engram reads {FORMAT}")
    if not isinstance(header.get("tables"), dict):
        raise ArchiveError(f"{HEADER} lists no tables")
    return header


def _section(name: str, header: dict[str, Any]) -> str:
    parts = name.split("/")
    if len(parts) == 2 and parts[0] == PAYLOADS:
        return PAYLOADS
    if len(parts) == 3 and parts[0] == "tables" and parts[1] in header["tables"]:
        return parts[1]
    raise ArchiveError(f"unexpected member {name!r}")
