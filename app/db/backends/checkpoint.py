"""WAL checkpoints of the SQLite database in a thread of their own.

By default SQLite checkpoints inside a commit: the transaction that takes the write-ahead
log past 1,000 pages copies the log into the database file and syncs both before its
commit returns, and every request in the writer's group commit waits for it.

The server runs the checkpoints itself instead: every `interval` a PASSIVE checkpoint in
this thread's own connection copies what the log holds (readers and the writer go on
meanwhile; a page written many times between two checkpoints is copied once). Commits
checkpoint by themselves only past SAFETY_PAGES, which also bounds the log of a process
without this thread (the CLI, a stalled loop).

The log starts over from its beginning only once a checkpoint has copied all of it, and
under a steady write load every background checkpoint overlaps new writes. So the log
grows to SAFETY_PAGES, and the commit that passes it copies what the thread has not yet,
after which the log restarts: once every SAFETY_PAGES instead of every 1,000 pages.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from app.core.metrics import Metrics
from app.core.tasks import cancel_and_wait

log = logging.getLogger(__name__)

# Log pages (4 KiB each) past which a commit checkpoints by itself while a Checkpointer
# can run: 40 MiB (a long read that holds older pages can keep the log growing past it).
# A new memory logs a few pages (bench.fts_insert), so that is thousands of memories.
SAFETY_PAGES = 10_000
SQLITE_DEFAULT_PAGES = 1_000  # SQLite's own wal_autocheckpoint


@dataclass(frozen=True, slots=True)
class Outcome:
    """One PASSIVE checkpoint: pages (frames) in the log, how many of them are now
    checkpointed (fewer when a reader still uses older ones), seconds it took."""

    log_pages: int
    copied_pages: int
    seconds: float


class Checkpointer:
    def __init__(
        self,
        path: str,
        *,
        interval_s: float,
        busy_timeout_ms: int,
        metrics: Metrics | None = None,
    ) -> None:
        self._path = path
        self._interval_s = interval_s
        self._busy_timeout_s = busy_timeout_ms / 1000
        self._metrics = metrics
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="engram-checkpoint")
        self._conn: sqlite3.Connection | None = None
        self._task: asyncio.Task[None] | None = None
        self.last: Outcome | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="engram-checkpoint")

    async def stop(self) -> None:
        """Stop the loop (a checkpoint in progress finishes first) and close."""
        if self._task is not None:
            await cancel_and_wait(self._task)
            self._task = None
        await asyncio.get_running_loop().run_in_executor(self._executor, self._close)
        self._executor.shutdown(wait=True)

    async def checkpoint(self) -> Outcome:
        """One PASSIVE checkpoint now, in the checkpoint thread."""
        loop = asyncio.get_running_loop()
        outcome = await loop.run_in_executor(self._executor, self._checkpoint)
        self.last = outcome
        if self._metrics is not None:
            self._metrics.wal_checkpoint_seconds.observe(outcome.seconds)
            self._metrics.wal_pages.set(outcome.log_pages)
        return outcome

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self._interval_s)
            try:
                await self.checkpoint()
            except Exception as exc:  # the loop outlives any one failure
                # Busy (another checkpoint) or an I/O error: the next round tries again,
                # and commits checkpoint by themselves past SAFETY_PAGES meanwhile.
                log.warning("WAL checkpoint failed", extra={"error": repr(exc)})

    def _checkpoint(self) -> Outcome:
        if self._conn is None:
            self._conn = sqlite3.connect(
                self._path, timeout=self._busy_timeout_s, isolation_level=None
            )
        t0 = time.perf_counter()
        row = self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        _busy, log_pages, copied = row
        # -1 and -1: the database is not in WAL mode (nothing to do).
        return Outcome(max(log_pages, 0), max(copied, 0), time.perf_counter() - t0)

    def _close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
