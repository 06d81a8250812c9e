"""The in-memory BM25 index's data (`postings.py`) saved to one file beside the database
and read back at start, so that a restart of a large store catches up with what changed
since the save instead of reading every posting again (slow at a million memories).
A cache of SQL like the index itself: `loading.fits` decides whether a saved file still
describes the database, and the index is built from SQL when it does not.

The file: MAGIC, the sections in order, then the header (JSON: where the data stands
in SQL, and each section's length and CRC-32) and its length (8 bytes, little-endian).
Numeric sections are the index's arrays as they are in memory; string sections are JSON
lists. It is written to a temporary file in the same directory, flushed to disk, then
renamed over the old one: a reader sees the old file or the new one, never half of one."""

from __future__ import annotations

import logging
import os
import zlib
from array import array
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import orjson

from app.search.postings import Data, Postings

log = logging.getLogger(__name__)

MAGIC = b"engram-bm25\n"
FORMAT = 1


@dataclass(frozen=True, slots=True)
class Mark:
    """Where the saved data stands in SQL, checked by `loading.fits` before it is used."""

    revision: str  # the schema's migration
    deletion_seq: int  # the last entry of the deletions log the data holds
    # (rowid, digest of the row's namespace, memory id and text) for the first and the
    # last live row the data holds (`ends`): another database, or this one moved back,
    # does not hold the same rows at the same rowids.
    anchors: tuple[tuple[int, str], ...]


def path_for(database_file: str) -> Path:
    """`engram.db` -> `engram.db.bm25`, in the database's directory."""
    db = Path(database_file)
    return db.with_name(db.name + ".bm25")


def ends(data: Data) -> list[int]:
    """The rowids of the first and the last live rows the data holds."""
    if data.live == 0:
        return []
    rowids = np.frombuffer(data.rowids, dtype=np.int64)
    live = rowids[np.frombuffer(data.alive, dtype=np.int8).astype(bool)]
    return sorted({int(live.min()), int(live.max())})


def save(data: Data, at: Path, *, mark: Mark, tokenizer: str) -> int:
    """Write the data; its size in bytes. Raises OSError (the caller logs and goes on).
    Sections are written from the data's own arrays, so saving holds no copy of them."""
    tmp = at.with_name(f"{at.name}.{os.getpid()}.tmp")
    sections: list[list[Any]] = []
    try:
        with open(tmp, "wb") as f:
            f.write(MAGIC)
            for name, parts in _sections(data):
                size, crc = 0, 0
                for part in parts:
                    view = memoryview(part).cast("B")
                    f.write(view)
                    size, crc = size + len(view), zlib.crc32(view, crc)
                sections.append([name, size, crc])
            head = orjson.dumps(
                {
                    "format": FORMAT,
                    "tokenizer": tokenizer,
                    "revision": mark.revision,
                    "anchors": mark.anchors,
                    "cursor": data.cursor,
                    "deletion_seq": data.deletion_seq,
                    "live": data.live,
                    "live_tokens": data.live_tokens,
                    "sections": sections,
                }
            )
            f.write(head + len(head).to_bytes(8, "little"))
            f.flush()
            os.fsync(f.fileno())
            written = f.tell()
        os.replace(tmp, at)
    finally:
        tmp.unlink(missing_ok=True)
    return written


def read_mark(at: Path, *, tokenizer: str) -> tuple[Mark, dict[str, Any]] | None:
    """The saved file's mark and header (at its end), None when there is none this code
    can read."""
    try:
        with open(at, "rb") as f:
            if f.read(len(MAGIC)) != MAGIC:
                return None
            f.seek(-8, os.SEEK_END)
            size = int.from_bytes(f.read(8), "little")
            f.seek(-8 - size, os.SEEK_END)
            header: dict[str, Any] = orjson.loads(f.read(size))
        if header.get("format") != FORMAT or header.get("tokenizer") != tokenizer:
            return None
        mark = Mark(
            revision=str(header["revision"]),
            deletion_seq=int(header["deletion_seq"]),
            anchors=tuple((int(rowid), str(digest)) for rowid, digest in header["anchors"]),
        )
    except (OSError, orjson.JSONDecodeError, ValueError, KeyError, TypeError, IndexError):
        return None
    return mark, header


def load(at: Path, header: dict[str, Any]) -> Data | None:
    """The saved data, None when the file is damaged (a section's length or CRC differs,
    or its parts do not add up)."""
    try:
        with _Sections(at, header) as sections:
            return _data(sections, header)
    except (OSError, KeyError, ValueError, TypeError, orjson.JSONDecodeError) as e:
        log.warning("the saved search index %s cannot be used (%s): building it", at, e)
        return None


class _Sections:
    """The sections of a saved file, read whole or, for the big ones, in parts (from
    their own handle, so two can be read side by side); each checked against its length
    and CRC once read to its end."""

    def __init__(self, at: Path, header: dict[str, Any]) -> None:
        self.at = at
        self.where: dict[str, tuple[int, int, int]] = {}
        offset = len(MAGIC)
        for name, size, crc in header["sections"]:
            self.where[str(name)] = (offset, int(size), int(crc))
            offset += int(size)
        self._files: list[BinaryIO] = []

    def __enter__(self) -> _Sections:
        return self

    def __exit__(self, *exc: object) -> None:
        for f in self._files:
            f.close()

    def whole(self, name: str) -> bytes:
        parts = self.parts(name)
        body: bytes = parts.read(parts.size)
        parts.done()
        return body

    def parts(self, name: str) -> _Parts:
        offset, size, crc = self.where[name]
        f = open(self.at, "rb")
        self._files.append(f)
        f.seek(offset)
        return _Parts(name, f, size, crc)


class _Parts:
    def __init__(self, name: str, f: BinaryIO, size: int, crc: int) -> None:
        self.name, self._f, self.size, self._crc = name, f, size, crc
        self._read, self._seen = 0, 0

    def read(self, n: int) -> bytes:
        if self._read + n > self.size:
            raise ValueError(f"section {self.name} is shorter than its parts")
        body = self._f.read(n)
        if len(body) != n:
            raise ValueError(f"section {self.name} is cut short")
        self._read += n
        self._seen = zlib.crc32(body, self._seen)
        return body

    def done(self) -> None:
        if self._read != self.size or self._seen != self._crc:
            raise ValueError(f"section {self.name} is damaged")


def _codes(table: dict[str, int]) -> list[str]:
    return sorted(table, key=table.__getitem__)


def _sections(data: Data) -> list[tuple[str, Iterable[Any]]]:
    terms = list(data.postings)
    pairs = list(data.scopes.holders)
    sizes = [len(data.postings[t].slots) for t in terms]
    held = [data.scopes.holders[p] for p in pairs]
    return [
        ("rowids", [data.rowids]),
        ("lengths", [data.lengths]),
        ("alive", [data.alive]),
        ("ns", [data.ns]),
        ("types", [data.types]),
        ("scope_ids", [data.scopes.ids]),
        ("ids", [orjson.dumps(data.ids)]),
        ("ns_codes", [orjson.dumps(_codes(data.ns_codes))]),
        ("type_codes", [orjson.dumps(_codes(data.type_codes))]),
        ("terms", [orjson.dumps(terms)]),
        ("term_sizes", [np.array(sizes, dtype=np.int64)]),
        ("term_slots", (data.postings[t].slots for t in terms)),
        ("term_tf", (data.postings[t].tf for t in terms)),
        ("pairs", [orjson.dumps(pairs)]),
        ("pair_sizes", [np.array([_count(h) for h in held], dtype=np.int64)]),
        ("pair_slots", (array("i", [h]) if isinstance(h, int) else h for h in held)),
    ]


def _count(holders: int | array[int]) -> int:
    return 1 if isinstance(holders, int) else len(holders)


def _array(typecode: str, body: bytes | memoryview) -> array[Any]:
    out = array(typecode)
    out.frombytes(body)
    return out


def _sizes(sections: _Sections, name: str, total_name: str) -> list[int]:
    """A section of per-part sizes, checked to add up to the parts' section."""
    sizes = np.frombuffer(sections.whole(name), np.int64)
    if (sizes < 0).any() or 4 * int(sizes.sum()) != sections.where[total_name][1]:
        raise ValueError(f"section {name} does not add up")
    return list(sizes.tolist())


def _slots(parts: _Parts, count: int, n: int) -> array[int]:
    slots = _array("i", parts.read(4 * count))
    held = np.frombuffer(slots, dtype=np.int32)
    if count and not 0 <= int(held.min()) <= int(held.max()) < n:
        raise ValueError(f"section {parts.name} holds a slot out of range")
    return slots


def _data(sections: _Sections, header: dict[str, Any]) -> Data | None:
    data = Data()
    for name, code in (("rowids", "q"), ("lengths", "d"), ("alive", "b"), ("ns", "i")):
        setattr(data, name, _array(code, sections.whole(name)))
    data.types = _array("i", sections.whole("types"))
    data.scopes.ids = _array("i", sections.whole("scope_ids"))
    data.ids = orjson.loads(sections.whole("ids"))
    n = len(data.ids)
    columns = (data.rowids, data.lengths, data.alive, data.ns, data.types, data.scopes.ids)
    if not all(len(a) == n for a in columns):
        raise ValueError("the slots' sections differ in length")
    data.ns_codes = {t: code for code, t in enumerate(orjson.loads(sections.whole("ns_codes")))}
    data.type_codes = {t: c for c, t in enumerate(orjson.loads(sections.whole("type_codes")))}
    tokens = _codes(data.ns_codes)
    ns = data.ns.tolist()
    for slot in np.flatnonzero(np.frombuffer(data.alive, dtype=np.int8)).tolist():
        data.slot_of.setdefault(tokens[ns[slot]], {})[data.ids[slot]] = slot
    terms = orjson.loads(sections.whole("terms"))
    sizes = _sizes(sections, "term_sizes", "term_slots")
    slots, tf = sections.parts("term_slots"), sections.parts("term_tf")
    for term, count in zip(terms, sizes, strict=True):
        data.put(term, Postings(_slots(slots, count, n), _array("f", tf.read(4 * count))))
    slots.done()
    tf.done()
    pairs = orjson.loads(sections.whole("pairs"))
    sizes = _sizes(sections, "pair_sizes", "pair_slots")
    held = sections.parts("pair_slots")
    for pair, count in zip(pairs, sizes, strict=True):
        holders = _slots(held, count, n)
        data.scopes.holders[pair] = holders[0] if count == 1 else holders
    held.done()
    data.live = int(header["live"])
    data.live_tokens = float(header["live_tokens"])
    data.cursor = int(header["cursor"])
    data.deletion_seq = int(header["deletion_seq"])
    return data
