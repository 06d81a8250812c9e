"""memories_fts read into the in-memory index's data (`postings.py`), on the index's own
read-only connection: every row at a build, then the rows added and the deletions logged
since (see `index.py` for when each runs). The postings are the full-text table's own
tokens, read through fts5vocab (so the stems are FTS5's); each slot also holds its
memory's type and scope, read from `memories` with the row (neither ever changes after an
insert)."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable
from typing import Any

import numpy as np

from app.db import probe
from app.search import snapshot
from app.search.postings import Data, ns_token
from app.search.snapshot import Mark

FETCH = 20_000  # rows read per round trip while building
INGEST = 2_000  # new rows tokenized per round trip


def connect(path: str) -> sqlite3.Connection:
    """A read-only connection to the database file, with the probe table and a vocabulary
    of the full-text table's postings."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None, timeout=5.0)
    for statement in probe.CREATE:
        conn.execute(statement)
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.index_postings "
        "USING fts5vocab(main, memories_fts, 'instance')"
    )
    return conn


def build(conn: sqlite3.Connection, fetch: Callable[[sqlite3.Cursor], list[Any]]) -> Data:
    """Every full-text row and its postings, in one read transaction; `fetch` reads the
    next rows of a cursor (FETCH at a time) or raises to give up."""
    data = Data()
    conn.execute("BEGIN")
    try:
        data.deletion_seq = deletion_seq(conn)
        memories = {
            (ns_token(ns), mid): (t, scope)
            for ns, mid, t, scope in conn.execute("SELECT namespace, id, type, scope FROM memories")
        }
        slot_of_rowid: dict[int, int] = {}
        cur = conn.execute("SELECT rowid, memory_id, ns FROM memories_fts ORDER BY rowid")
        while rows := fetch(cur):
            for rowid, mid, token in rows:
                memory = memories.get((token, mid))
                slot_of_rowid[rowid] = data.add(rowid, mid, token, memory)
        cur = conn.execute(
            "SELECT term, doc FROM temp.index_postings WHERE col = 'content'"
        )  # term order, then row order
        term, doc, tf = "", -1, 0
        while rows := fetch(cur):
            for t, d in rows:
                if t == term and d == doc:
                    tf += 1
                    continue
                if tf:
                    _post_built(data, slot_of_rowid, term, doc, tf)
                term, doc, tf = t, d, 1
        if tf:
            _post_built(data, slot_of_rowid, term, doc, tf)
    finally:
        conn.execute("COMMIT")
    return data


def _post_built(data: Data, slot_of_rowid: dict[int, int], term: str, doc: int, tf: int) -> None:
    slot = slot_of_rowid.get(doc)
    if slot is not None:
        data.post(term, slot, tf)


def apply_deletions(conn: sqlite3.Connection, data: Data) -> bool:
    """The deletions logged since the index last read the log; False when they cannot be
    applied (a content rewrite, or entries pruned before it read them): rebuild."""
    rows = conn.execute(
        "SELECT seq, namespace, memory_id, rewritten FROM memories_fts_deletions "
        "WHERE seq > ? ORDER BY seq",
        (data.deletion_seq,),
    ).fetchall()
    if not rows or rows[0][0] != data.deletion_seq + 1:
        return False  # entries were pruned before this index read them
    moved_back = False
    for seq, namespace, memory_id, rewritten in rows:
        if rewritten:
            return False
        slot = data.slot_of.get(ns_token(namespace), {}).pop(memory_id, None)
        if slot is not None:
            data.kill(slot)
            moved_back |= data.rowids[slot] >= data.cursor
        data.deletion_seq = seq
    if moved_back:
        rowids = np.frombuffer(data.rowids, dtype=np.int64)
        alive = np.frombuffer(data.alive, dtype=np.int8).astype(bool)
        data.cursor = int(rowids[alive].max()) if data.live else 0
    return True


def ingest(conn: sqlite3.Connection, data: Data) -> None:
    """The next INGEST full-text rows past the cursor, tokenized by FTS5 itself."""
    rows = conn.execute(
        "SELECT rowid, memory_id, ns, content FROM memories_fts WHERE rowid > ? "
        "ORDER BY rowid LIMIT ?",
        (data.cursor, INGEST),
    ).fetchall()
    if not rows:
        return
    wanted: dict[str, list[str]] = {}
    for _, mid, token, _ in rows:
        wanted.setdefault(token, []).append(mid)
    memories: dict[tuple[str, str], tuple[str, str | None]] = {}
    for token, ids in wanted.items():
        namespace = bytes.fromhex(token[1:-1]).decode()
        for lo in range(0, len(ids), 500):
            chunk = ids[lo : lo + 500]
            marks = ",".join("?" * len(chunk))
            for mid, type_, scope in conn.execute(
                f"SELECT id, type, scope FROM memories WHERE namespace = ? AND id IN ({marks})",
                (namespace, *chunk),
            ):
                memories[(token, mid)] = (type_, scope)
    conn.executemany(probe.INSERT, [{"i": rowid, "q": text} for rowid, _, _, text in rows])
    counts = conn.execute(probe.TERM_COUNTS).fetchall()
    conn.execute(probe.CLEAR)
    slot_of_rowid = {
        rowid: data.add(rowid, mid, token, memories.get((token, mid)))
        for rowid, mid, token, _ in rows
    }
    for doc, term, tf in counts:
        data.post(term, slot_of_rowid[doc], tf)
    data.cursor = max(data.cursor, rows[-1][0])


def deletion_seq(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT max(seq) FROM memories_fts_deletions").fetchone()
    return int(row[0] or 0)


def revision(conn: sqlite3.Connection) -> str:
    """The schema's migration, which a saved index must have been made under."""
    row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
    return str(row[0]) if row else ""


def mark(conn: sqlite3.Connection, data: Data) -> Mark | None:
    """The mark a save of `data` carries (in the index's thread, the data in step with
    SQL as of its last catch-up); None when a row it holds was deleted since."""
    held = anchors(conn, snapshot.ends(data))
    return Mark(revision(conn), data.deletion_seq, held) if held is not None else None


def anchors(conn: sqlite3.Connection, rowids: list[int]) -> tuple[tuple[int, str], ...] | None:
    """Each full-text row's digest of its namespace token, memory id and text; None
    when one of them has no row."""
    found = []
    for rowid in rowids:
        row = conn.execute(
            "SELECT ns, memory_id, content FROM memories_fts WHERE rowid = ?", (rowid,)
        ).fetchone()
        if row is None:
            return None
        digest = hashlib.blake2b("\0".join(row).encode(), digest_size=16).hexdigest()
        found.append((rowid, digest))
    return tuple(found)


def fits(conn: sqlite3.Connection, saved: Mark) -> bool:
    """Whether a saved index (`snapshot.py`) describes this database as it was at some
    point: the same schema, a deletions log that has not moved back, and its first and
    last rows still there, the same. What changed since is then caught up like any
    change (new rows by rowid, deletions from the log, which says when entries it needs
    were pruned)."""
    conn.execute("BEGIN")
    try:
        if revision(conn) != saved.revision or deletion_seq(conn) < saved.deletion_seq:
            return False
        return anchors(conn, [rowid for rowid, _ in saved.anchors]) == saved.anchors
    finally:
        conn.execute("COMMIT")
