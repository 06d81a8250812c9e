"""An in-memory BM25 index over memories_fts (SQLite), kept in step with it; owned by the
SQLite search (`fts5.py`), which the lifespan creates.

FTS5 answers an OR query by scoring every row that holds any query term, a few hundred
nanoseconds per posting in C plus the cost of its bm25() callback: tens of milliseconds
when a query holds common words and the table 100,000 rows. This index keeps the same
postings (the full-text table's own tokens, read through fts5vocab, so the stems are
FTS5's) as arrays and scores a query with numpy: the same BM25 as FTS5's bm25() (k1 1.2,
b 0.75, FTS5's idf, the row's token count over every indexed column), in a millisecond
or two at that size. Search multiplies that score by the share of the query's terms a
memory holds (classic Lucene's coordination factor), which FTS5's bm25() cannot do.

Type and scope filters run inside the index, before the `limit` best are taken, so that
a filter never leaves fewer than `limit` matches while more exist: each slot holds its
memory's type and scope (read from `memories` with the row; neither ever changes after
an insert).

Consistency with SQL, checked before every query in one read transaction:
- new entries are the full-text rows past the highest rowid the index holds (FTS5 gives
  a new row the table's highest rowid + 1, so after a deletion of the highest row its
  rowid comes back: the cursor then moves back to the highest rowid still held);
- deletions and content rewrites come from `memories_fts_deletions`, which triggers
  write in the same transaction as the change. A rewrite, or a log that has moved past
  what the index saw, rebuilds the index.
The index only proposes matches: callers read the rows themselves from SQL and apply
status and the other filters there, so an answer never holds a memory SQL does not.

Everything runs in one thread of the index's own (read-only) connection: queries wait for
nothing but each other. Until the first build is done, `top` answers None and callers use
the full-text query instead.
"""

from __future__ import annotations

import asyncio
import logging
import math
import sqlite3
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from app.db import probe
from app.search.postings import Data, ns_token

log = logging.getLogger(__name__)

K1 = 1.2
B = 0.75
FETCH = 20_000  # rows read per round trip while building
INGEST = 2_000  # new rows tokenized per round trip
REBUILD_DEAD_SHARE = 0.25  # deleted slots (of all) past which the index is rebuilt
RETRY_AFTER_S = 30.0


class TermIndex:
    def __init__(self, path: str) -> None:
        self.path = path
        self.ready = False
        self._data = Data()
        self._conn: sqlite3.Connection | None = None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="term-index")
        self._building = False
        self._closing = False
        self._failed_at = -math.inf
        self.builds = 0

    # -- the async face --------------------------------------------------------

    def start(self) -> None:
        """Build in the background; `top` answers None until the build is done."""
        if self._building or self.ready or self._closing:
            return
        if time.monotonic() - self._failed_at < RETRY_AFTER_S:
            return
        self._submit_build()

    async def top(
        self,
        namespace: str,
        terms: Sequence[str],
        limit: int,
        *,
        types: Sequence[str] | None = None,
        scope: Mapping[str, str] | None = None,
        applies_to: Mapping[str, str] | None = None,
        coordinate: bool = True,
    ) -> dict[str, float] | None:
        """The namespace's `limit` best matches, best first: memory id -> relevance, None
        while the index is not ready. Only memories of these `types`, whose scope holds
        every (key, value) of `scope`, and that apply to the request scope `applies_to`
        (`scope_compatible`) compete for the places.

        Relevance is FTS5's bm25() (sign flipped) times, with `coordinate`, the share of
        the query's terms the memory holds (the coordination factor of classic Lucene
        scoring): BM25 alone lets a memory that repeats one rare term outrank one that
        holds every term of the query."""
        if not self.ready:
            self.start()
            return None
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._executor,
            self._top_guarded,
            ns_token(namespace),
            list(terms),
            limit,
            _Filter(types, scope, applies_to),
            coordinate,
        )

    def stats(self) -> dict[str, Any]:
        data = self._data
        return {
            "state": (
                "closed"
                if self._closing
                else "ready"
                if self.ready
                else ("building" if self._building else "idle")
            ),
            "documents": data.live,
            "terms": len(data.postings),
            "builds": self.builds,
        }

    def close(self) -> None:
        """Stop (a build in progress gives up at its next read) and close the connection."""
        self.ready = False
        self._closing = True
        self._executor.submit(self._close_connection)
        self._executor.shutdown(wait=True)

    # -- in the index's thread -------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            conn = sqlite3.connect(
                f"file:{self.path}?mode=ro", uri=True, isolation_level=None, timeout=5.0
            )
            for statement in probe.CREATE:
                conn.execute(statement)
            conn.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS temp.index_postings "
                "USING fts5vocab(main, memories_fts, 'instance')"
            )
            self._conn = conn
        return self._conn

    def _close_connection(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _build_guarded(self) -> None:
        try:
            self._build()
            self.ready = True
            self.builds += 1
        except _Closed:
            pass
        except Exception:
            log.exception("search index build failed; full-text queries are used meanwhile")
            self._failed_at = time.monotonic()
            self._close_connection()
        finally:
            self._building = False

    def _top_guarded(
        self,
        token: str,
        terms: list[str],
        limit: int,
        wanted: _Filter,
        coordinate: bool,
    ) -> dict[str, float] | None:
        try:
            if not self._sync():
                return None
            return self._top(token, terms, limit, wanted, coordinate)
        except Exception:
            log.exception("search index failed; rebuilding it")
            self.ready = False
            self._failed_at = -math.inf
            self._close_connection()
            self.start()
            return None

    def _build(self) -> None:
        """Every full-text row and its postings, in one read transaction."""
        conn = self._connection()
        data = Data()
        conn.execute("BEGIN")
        try:
            data.deletion_seq = _deletion_seq(conn)
            memories = {
                (ns_token(ns), mid): (t, scope)
                for ns, mid, t, scope in conn.execute(
                    "SELECT namespace, id, type, scope FROM memories"
                )
            }
            slot_of_rowid: dict[int, int] = {}
            cur = conn.execute("SELECT rowid, memory_id, ns FROM memories_fts ORDER BY rowid")
            while rows := self._fetch(cur):
                for rowid, mid, token in rows:
                    memory = memories.get((token, mid))
                    slot_of_rowid[rowid] = data.add(rowid, mid, token, memory)
            cur = conn.execute(
                "SELECT term, doc FROM temp.index_postings WHERE col = 'content'"
            )  # term order, then row order
            term, doc, tf = "", -1, 0
            while rows := self._fetch(cur):
                for t, d in rows:
                    if t == term and d == doc:
                        tf += 1
                        continue
                    if tf:
                        self._post_built(data, slot_of_rowid, term, doc, tf)
                    term, doc, tf = t, d, 1
            if tf:
                self._post_built(data, slot_of_rowid, term, doc, tf)
        finally:
            conn.execute("COMMIT")
        self._data = data

    def _fetch(self, cur: sqlite3.Cursor) -> list[Any]:
        if self._closing:
            raise _Closed
        return cur.fetchmany(FETCH)

    @staticmethod
    def _post_built(
        data: Data, slot_of_rowid: dict[int, int], term: str, doc: int, tf: int
    ) -> None:
        slot = slot_of_rowid.get(doc)
        if slot is not None:
            data.post(term, slot, tf)

    def _sync(self) -> bool:
        """Catch up with SQL; False when the index must be rebuilt first."""
        conn = self._connection()
        data = self._data
        conn.execute("BEGIN")
        try:
            seq, top = conn.execute(
                "SELECT (SELECT max(seq) FROM memories_fts_deletions), "
                "(SELECT rowid FROM memories_fts ORDER BY rowid DESC LIMIT 1)"
            ).fetchone()
            if (seq or 0) > data.deletion_seq and not self._apply_deletions(conn, data):
                conn.execute("COMMIT")
                self._rebuild()
                return False
            while (top or 0) > data.cursor:
                self._ingest(conn, data)
        finally:
            if conn.in_transaction:
                conn.execute("COMMIT")
        if len(data.ids) > 1000 and data.live < (1 - REBUILD_DEAD_SHARE) * len(data.ids):
            self._rebuild()
            return False
        return True

    def _rebuild(self) -> None:
        self.ready = False
        if not self._closing:
            self._submit_build()

    def _submit_build(self) -> None:
        self._building = True
        self._executor.submit(self._build_guarded)

    def _apply_deletions(self, conn: sqlite3.Connection, data: Data) -> bool:
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

    def _ingest(self, conn: sqlite3.Connection, data: Data) -> None:
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

    def _stem(self, terms: list[str]) -> list[str]:
        missing = probe.unknown(terms)
        if missing:
            conn = self._connection()
            conn.executemany(probe.INSERT, probe.probe_rows(missing))
            probe.learn(missing, conn.execute(probe.FIRST_TOKENS).fetchall())
            conn.execute(probe.CLEAR)
        return probe.stems(terms)

    def _top(
        self,
        token: str,
        terms: list[str],
        limit: int,
        wanted: _Filter,
        coordinate: bool,
    ) -> dict[str, float]:
        data = self._data
        code = data.ns_codes.get(token)
        if code is None or data.live == 0:
            return {}
        n = len(data.ids)
        alive = np.frombuffer(data.alive, dtype=np.int8)
        lengths = np.frombuffer(data.lengths, dtype=np.float64)
        scores = np.zeros(n, dtype=np.float64)
        held = np.zeros(n, dtype=np.float64)  # query terms each slot holds
        matched = np.zeros(n, dtype=bool)  # finding them in a bool array is 8x cheaper
        total = float(data.live)
        avgdl = data.live_tokens / total
        any_dead = data.live < n
        # Each query term is a phrase of its own, as in FTS5: two words with one stem
        # ("float", "floats") count that stem twice.
        for stem, times in Counter(self._stem(terms)).items():
            postings = data.postings.get(stem)
            if postings is None:
                continue
            slots = np.frombuffer(postings.slots, dtype=np.int32)
            tf = np.frombuffer(postings.tf, dtype=np.float32).astype(np.float64)
            if any_dead:
                live = alive[slots].astype(bool)
                slots, tf = slots[live], tf[live]
            df = len(slots)
            if df == 0:
                continue
            idf = math.log((total - df + 0.5) / (df + 0.5))
            if idf <= 0.0:
                idf = 1e-6  # as FTS5 does for terms in more than half the rows
            norm = K1 * (1 - B + B * lengths[slots] / avgdl)
            scores[slots] += times * idf * tf * (K1 + 1) / (tf + norm)
            held[slots] += times
            matched[slots] = True
        found = np.flatnonzero(matched)  # every term's part is > 0: the slots scored
        found = found[np.frombuffer(data.ns, dtype=np.int32)[found] == code]
        if wanted.types is not None:
            codes = [data.type_codes[t] for t in wanted.types if t in data.type_codes]
            found = found[np.isin(np.frombuffer(data.types, dtype=np.int32)[found], codes)]
        if wanted.scope is not None:
            found = found[data.scopes.matching(wanted.scope)[found]]
        if wanted.applies_to is not None:
            found = found[data.scopes.applying_to(wanted.applies_to)[found]]
        values = scores[found]
        if coordinate and terms:
            values *= held[found] / len(terms)
        if len(found) > limit:
            # Every match scoring at least the limit-th best, so that ties at the cut are
            # broken as below (by rowid, which slot order follows) and not arbitrarily.
            cut = np.partition(values, len(found) - limit)[len(found) - limit]
            keep = values >= cut
            found, values = found[keep], values[keep]
        best = np.lexsort((found, -values))[:limit]
        return {data.ids[int(found[i])]: float(values[i]) for i in best}


@dataclass(frozen=True, slots=True)
class _Filter:
    types: Sequence[str] | None
    scope: Mapping[str, str] | None
    applies_to: Mapping[str, str] | None


class _Closed(Exception):
    """The index was closed while it was being built."""


def _deletion_seq(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT max(seq) FROM memories_fts_deletions").fetchone()
    return int(row[0] or 0)
