"""An in-memory BM25 index over memories_fts (SQLite), kept in step with it; owned by the
SQLite search (`fts5.py`), which the lifespan creates. This module runs it: its thread,
its connection, and when to build, catch up or rebuild; `loading.py` reads SQL into its
data (`postings.py`) and `bm25.py` scores a query over that data.

FTS5 answers an OR query by scoring, through a callback, every row that holds any query
term; this index keeps the same postings as arrays and scores them with numpy, with the
same BM25 as FTS5's bm25().

Consistency with SQL, checked before every query in one read transaction:
- new entries are the full-text rows past the highest rowid the index holds (FTS5 gives
  a new row the table's highest rowid + 1, so after a deletion of the highest row its
  rowid comes back: the cursor then moves back to the highest rowid still held);
- deletions and content rewrites come from `memories_fts_deletions`, which triggers
  write in the same transaction as the change. A rewrite, or a log that has moved past
  what the index saw, rebuilds the index.
The index only proposes matches: callers read the rows themselves from SQL and apply
status and the other filters there, so an answer never holds a memory SQL does not.

Everything runs in one thread of the index's own (read-only) connection. Until the first
build is done, and while many new rows are read, `top` answers None and callers use the
full-text query instead. A build reads the data saved last (`snapshot.py`) first.
"""

from __future__ import annotations

import asyncio
import logging
import math
import sqlite3
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from app.db import probe
from app.search import snapshot
from app.search.bm25 import top_matches
from app.search.loading import FETCH, apply_deletions, build, connect, fits, ingest, mark
from app.search.postings import Data, ns_token
from app.search.saver import Saver
from app.search.scoring import Filter

log = logging.getLogger(__name__)

REBUILD_DEAD_SHARE = 0.25  # deleted slots (of all) past which the index is rebuilt
RETRY_AFTER_S = 30.0
INLINE_CHUNKS = 2  # new rows read in a query's catch-up, in chunks of loading.INGEST


class TermIndex:
    def __init__(self, path: str, *, saved: Path | None = None) -> None:
        self.path = path
        self._saver = Saver(saved)  # where the data is saved and read back from
        self.ready = False
        self.read_back = False  # whether the data came from the saved file
        self._behind = False  # reading many new rows between queries (`_catch_up_more`)
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
            Filter(types, scope, applies_to),
            coordinate,
        )

    def stats(self) -> dict[str, Any]:
        data = self._data
        return {
            "state": (
                "closed"
                if self._closing
                else "catching up"
                if self.ready and self._behind
                else "ready"
                if self.ready
                else ("building" if self._building else "idle")
            ),
            "documents": data.live,
            "terms": len(data.postings),
            "builds": self.builds,
            "from_file": self.read_back,
        }

    def close(self) -> None:
        """Stop (a build in progress gives up at its next read), save what changed since
        the last save, and close the connection."""
        was_ready, self.ready = self.ready, False
        self._closing = True
        self._executor.submit(self._close_saving, was_ready)
        self._executor.shutdown(wait=True)

    # -- in the index's thread -------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = connect(self.path)
        return self._conn

    def _close_connection(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _build_guarded(self) -> None:
        try:
            self._data, self.read_back = self._saved_or_built()
            self.ready = True
            self.builds += 1
            if not self.read_back and self._saver.due(self._data, closing=True):
                self._save()
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
        wanted: Filter,
        coordinate: bool,
    ) -> dict[str, float] | None:
        try:
            if self._behind or not self._sync():
                return None
            found = top_matches(self._data, token, terms, limit, wanted, coordinate, self._stem)
            if not self._saver.pending and self._saver.due(self._data):
                self._saver.pending = self._later(self._save)  # after this answer
            return found
        except Exception:
            log.exception("search index failed; rebuilding it")
            self.ready = False
            self._failed_at = -math.inf
            self._close_connection()
            self.start()
            return None

    def _fetch(self, cur: sqlite3.Cursor) -> list[Any]:
        if self._closing:
            raise _Closed
        return cur.fetchmany(FETCH)

    def _sync(self) -> bool:
        """Catch up with SQL; False when the index must be rebuilt first, or has so many
        new rows to read that it reads them between queries (FTS5 answers meanwhile)."""
        caught_up = self._catch_up(self._data, chunks=INLINE_CHUNKS)
        if caught_up is None:
            self._behind = True
            self._later(self._catch_up_more)
            return False
        if not caught_up:
            self._rebuild()
        return caught_up

    def _catch_up_more(self) -> None:
        """The next chunk of new rows, each a task of its own: queries are not held."""
        try:
            caught_up = self._catch_up(self._data, chunks=1)
        except Exception:
            log.exception("search index failed catching up; rebuilding it")
            caught_up = False
        if caught_up is None and self._later(self._catch_up_more):
            return
        self._behind = False
        if not caught_up:
            self._rebuild()

    def _later(self, task: Any) -> bool:
        """Queue a task after those queued in the index's thread; False once closing."""
        try:
            self._executor.submit(task)
        except RuntimeError:  # shut down
            return False
        return not self._closing

    def _catch_up(self, data: Data, *, chunks: int | None = None) -> bool | None:
        """Bring `data` in step with SQL; False when only a rebuild can; None when more new
        rows are left than `chunks` reads of them take (the rest for the next call)."""
        conn = self._connection()
        conn.execute("BEGIN")
        try:
            seq, top = conn.execute(
                "SELECT (SELECT max(seq) FROM memories_fts_deletions), "
                "(SELECT rowid FROM memories_fts ORDER BY rowid DESC LIMIT 1)"
            ).fetchone()
            if (seq or 0) < data.deletion_seq:
                return False  # the log moved back: not the database the data was read from
            if (seq or 0) > data.deletion_seq and not apply_deletions(conn, data):
                return False
            read = 0
            while (top or 0) > data.cursor:
                if chunks is not None and read >= chunks:
                    return None
                ingest(conn, data)
                read += 1
        finally:
            if conn.in_transaction:
                conn.execute("COMMIT")
        return not (len(data.ids) > 1000 and data.live < (1 - REBUILD_DEAD_SHARE) * len(data.ids))

    # -- saved to a file (`snapshot.py`) -----------------------------------------

    def _saved_or_built(self) -> tuple[Data, bool]:
        """The saved data caught up with SQL when it fits, else every row read from SQL;
        whether it was the saved data."""
        conn = self._connection()
        at = self._saver.at
        found = None if at is None else snapshot.read_mark(at, tokenizer=probe.FTS_TOKENIZER)
        if at is not None and found is not None and fits(conn, found[0]):
            data = snapshot.load(at, found[1])
            if data is not None:
                self._saver.mark(data)
                if self._catch_up(data):
                    return data, True
        return build(conn, self._fetch), False

    def _save(self) -> None:
        """Write the data to its file (in the index's thread: queries wait meanwhile)."""
        try:
            self._saver.save(self._data, mark(self._connection(), self._data))
        except sqlite3.Error:
            self._saver.pending = False  # the next query that finds it due queues it again
            log.warning("could not read where the index stands to save it", exc_info=True)

    def _close_saving(self, was_ready: bool) -> None:
        if was_ready and self._saver.due(self._data, closing=True):
            self._save()
        self._close_connection()

    def _rebuild(self) -> None:
        self.ready = False
        if not self._closing:
            self._submit_build()

    def _submit_build(self) -> None:
        self._building = True
        self._executor.submit(self._build_guarded)

    def _stem(self, terms: list[str]) -> list[str]:
        missing = probe.unknown(terms)
        if missing:
            probe.learn_on(self._connection(), missing)
        return probe.stems(terms)


class _Closed(Exception):
    """The index was closed while it was being built."""
