"""SQLite's cost of inserting memories, on copies of a 100,000-memory table built as
bench.recall builds it: new memories 32 a commit, through the service's own statements
and full-text trigger, in the variants the write path chose between.

    python -m bench.fts_insert [--memories 100000] [--inserts 32000] [--rounds 2]

For each variant it prints SQLite's CPU per row (this process runs nothing else), the
median and 99th-percentile commit, and the write-ahead log pages per row (no checkpoint
runs during the inserts):
- executemany: one statement per row, as the writer did before (FTS5 flushes a segment
  at every statement);
- multi-row: `CompiledInsert.multi`, what the writer does, with FTS5's automerge at 4
  (its default) and at 16 (what migration 4e7d2b9c1a60 sets);
- no full-text: the trigger dropped, the floor.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy.dialects import sqlite as sqlite_dialect

from app.db.rows import compiled_insert
from app.repositories.memories import MEMORIES
from bench.recall import bulk_load, memories_text, row

Prepare = Callable[[sqlite3.Connection], None]


def automerge(value: int) -> Prepare:
    def prepare(conn: sqlite3.Connection) -> None:
        conn.execute(f"INSERT INTO memories_fts(memories_fts, rank) VALUES ('automerge', {value})")

    return prepare


def no_full_text(conn: sqlite3.Connection) -> None:
    conn.execute("DROP TRIGGER memories_fts_insert")


VARIANTS: dict[str, tuple[bool, Prepare]] = {
    "executemany, automerge 4": (False, automerge(4)),
    "multi-row, automerge 4": (True, automerge(4)),
    "multi-row, automerge 16": (True, automerge(16)),
    "multi-row, no full-text": (True, no_full_text),
}


def measure(
    template: Path, work: Path, rows: list[dict[str, Any]], multi: bool, prepare: Prepare
) -> tuple[float, float, float, float]:
    """(CPU µs a row, median commit ms, p99 commit ms, log pages a row)."""
    db = work / "copy.db"
    shutil.copyfile(template, db)
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")  # the fsyncs are not what is compared
        conn.execute("PRAGMA wal_autocheckpoint=0")
        prepare(conn)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        compiled = compiled_insert(MEMORIES, sqlite_dialect.dialect())
        commits = []
        cpu = time.process_time()
        for lo in range(0, len(rows), 32):
            chunk = rows[lo : lo + 32]
            statements = compiled.multi(chunk) if multi else [compiled.many(chunk)]
            t0 = time.perf_counter()
            conn.execute("BEGIN IMMEDIATE")
            for sql, params in statements:
                conn.executemany(sql, params)
            conn.execute("COMMIT")
            commits.append(time.perf_counter() - t0)
        cpu = time.process_time() - cpu
        log_pages = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[1]
    finally:
        conn.close()
    commits.sort()
    p99 = commits[min(len(commits) - 1, int(0.99 * len(commits)))]
    return (
        cpu / len(rows) * 1e6,
        statistics.median(commits) * 1e3,
        p99 * 1e3,
        log_pages / len(rows),
    )


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--inserts", type=int, default=32_000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    texts = memories_text(args.memories + args.inserts)
    now = datetime.now(UTC)
    rows = [row(args.memories + i, t, now) for i, t in enumerate(texts[args.memories :])]
    with tempfile.TemporaryDirectory(prefix="engram-bench-") as tmp:
        template = Path(tmp) / "engram.db"
        await bulk_load(f"sqlite+aiosqlite:///{template}", texts[: args.memories], 0)
        print(f"{args.memories:,} memories loaded; {len(rows):,} inserts, 32 a commit")
        for round_ in range(1, args.rounds + 1):
            for name, (multi, prepare) in VARIANTS.items():
                cpu, p50, p99, pages = measure(template, Path(tmp), rows, multi, prepare)
                print(
                    f"  round {round_}  {name:26s} CPU {cpu:5.1f} µs a row   commit p50 "
                    f"{p50:5.2f} ms, p99 {p99:6.2f} ms   log {pages:4.2f} pages a row"
                )


if __name__ == "__main__":
    asyncio.run(main())
