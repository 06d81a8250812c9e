"""Vectors for `bench.recall --shape natural` with the local embedder: the first turns
embedded by the real server's background embedding (the rate it drains at is reported),
their vectors copied into the store, and every other memory given a copy of one of them, as
the rows are filled straight into SQL rather than embedded one by one: the model embeds tens
of memories a second on a shared 2-core machine, hours at 1,000,000. The copies give the
vector search its real amount of work; which memories it finds is not what is measured."""

from __future__ import annotations

import sqlite3
import tempfile
from dataclasses import dataclass
from pathlib import Path

from bench.longmemeval import Pool
from bench.retrieval import drained, store
from tests.server import EngramServer

EMBEDDED_TURNS = 1000


@dataclass
class TurnVectors:
    rows: list[tuple[str, int, bytes, str]]  # (model, dim, vector, created_at) per turn
    write_s: float
    drain_s: float
    embedded: int
    model_rate: float | None  # memories per second of the backlog's own working time


async def embed_turns(data: Pool, *, limit: int = EMBEDDED_TURNS) -> TurnVectors:
    """The first `limit` turns written through POST /v1/memories to a server with the
    local embedder, and their vectors read back once the backlog is empty."""
    data = Pool(data.turns[:limit], [], 0, 0)
    with tempfile.TemporaryDirectory(prefix="engram-vectors-") as name:
        server = EngramServer(
            Path(name), ENGRAM_LOG_REQUESTS="false", ENGRAM_EMBEDDINGS__PROVIDER="local"
        ).start()
        try:
            write_s = await store(server.url, data)
            drain_s, stats = await drained(server.url)
        finally:
            server.stop()
        conn = sqlite3.connect(Path(name) / "engram.db")
        try:
            found = {
                mid: (model, dim, vector, created)
                for mid, model, dim, vector, created in conn.execute(
                    "SELECT memory_id, model, dim, vector, created_at FROM memory_vectors"
                )
            }
        finally:
            conn.close()
    embedded, rate = int(stats.get("embedded") or 0), stats.get("per_second")
    return TurnVectors([found[t.id] for t in data.turns], write_s, drain_s, embedded, rate)


def copy_vectors(db: Path, vectors: TurnVectors, *, start: int, end: int) -> None:
    """Rows start..end (ids m0000000..., the turns first in the pool's order) get their
    turn's vector, or past the embedded turns a copy of one; nothing is left waiting for
    the model."""
    conn = sqlite3.connect(db)
    n = len(vectors.rows)
    try:
        with conn:
            conn.execute("DELETE FROM memory_embeddings_pending")
            conn.executemany(
                "INSERT INTO memory_vectors (namespace, memory_id, model, dim, vector, "
                "created_at) VALUES ('default', ?, ?, ?, ?, ?)",
                ((f"m{i:07d}", *vectors.rows[i % n]) for i in range(start, end)),
            )
    finally:
        conn.close()
