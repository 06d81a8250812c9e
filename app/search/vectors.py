"""The vector index: the memories' vectors of one model (`memory_vectors`), per namespace,
in memory (`vector_space.py`: exact float32 while small, int8 HNSW past `exact_max`); a
cache of SQL, read through the app's engine: alike on SQLite, libSQL and PostgreSQL.

Consistency with SQL:
- new rows: those past the highest `seq` read (a cursor), with their memory's type and
  scope (fixed at insert), read before a query at most every SYNC_S (waited for up to a
  second) and on `refresh()`; a memory embedded again has a new row, its old slot dropped;
- deleted memories (their vector rows go with them by trigger) and rows committed out of
  `seq` order (concurrent PostgreSQL writers): every VERIFY_S, and on `refresh()`, one
  grouped count of the model's rows per namespace (over the table's unique index) is
  compared with the slots alive; a namespace that differs reads its seqs again, drops the
  slots whose row is gone and reads the rows it lacks.
The index only proposes matches: callers read the rows from SQL and apply statuses,
sensitivity and validity there (an answer never holds a memory SQL does not).
Reading SQL is the event loop's (awaited, in chunks); the rest (decoding vectors, matrices,
the HNSW graph's growth in steps, searches) runs in the index's one thread."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from app.schemas.filters import MemoryFilters
from app.search import vector_cache, vector_sql
from app.search.vector_space import Space

log = logging.getLogger(__name__)

SYNC_S = 0.25
VERIFY_S = 30.0
FETCH = 4096  # rows read per statement


class VectorIndex:
    def __init__(
        self,
        source: vector_sql.Source,
        *,
        model: str,
        dim: int,
        exact_max: int,
        cache_dir: Path | None = None,
    ) -> None:
        self.source = source
        self.cache_dir = cache_dir  # where HNSW graphs are saved (`vector_cache.py`)
        self.model = model
        self.dim = dim
        self.exact_max = exact_max
        self.builds = 0  # HNSW graphs completed
        self.restored = 0  # HNSW graphs read from the cache directory
        self._spaces: dict[str, Space] = {}
        self._cursor = 0
        self._synced_at = -float("inf")
        self._verified_at = time.monotonic()
        self._lock = asyncio.Lock()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="vector-index")
        self._loading: asyncio.Task[None] | None = None
        self._verifying: asyncio.Task[None] | None = None
        self._syncing: asyncio.Task[None] | None = None  # held: asyncio keeps tasks weakly
        self._growing = False
        self._holding = False  # no graph grows while the first load reads (it may be saved)
        self._saved: dict[str, int] = {}  # namespace -> slots its saved graph covers
        self._closing = False

    # -- the async face ---------------------------------------------------------------

    def start(self) -> None:
        """Read every row in the background; `top` answers from the rows read so far."""
        if self._loading is None and not self._closing:
            self._holding = True
            self._loading = asyncio.get_running_loop().create_task(self._load())

    async def refresh(self, *, verify: bool = True) -> None:
        """Catch up with SQL now: new rows, and with `verify` deleted ones and rows
        committed late (a grouped count of every row: the backlog only adds rows)."""
        if self._loading is not None and not self._loading.done():
            await asyncio.shield(self._loading)  # the first load, saved graphs included
        async with self._lock:
            await self._sync(verify=verify)

    async def top(
        self, namespace: str, vector: Any, filters: MemoryFilters, *, limit: int
    ) -> dict[str, float]:
        """The `limit` nearest memories of the namespace passing the filters' type and
        scope, best first: memory id -> cosine similarity."""
        if self._closing:
            return {}
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        if query.shape != (self.dim,):
            # Recall answers lexically rather than fail: the embedder changed its size.
            log.warning("a query vector of %d numbers; the index holds %d", query.size, self.dim)
            return {}
        norm = float(np.linalg.norm(query))
        if norm == 0.0 or not np.isfinite(norm):
            return {}
        await self._catch_up()
        space = self._spaces.get(namespace)
        if space is None:
            return {}
        found: dict[str, float] = await self._run(space.top, query / norm, filters, limit)
        return found

    async def holds(self, namespace: str, ids: list[str]) -> set[str]:
        """Those of `ids` that have a vector in the index."""
        space = self._spaces.get(namespace)
        if space is None:
            return set()
        return {mid for mid in ids if mid in space.slot_of}

    def stats(self) -> dict[str, Any]:
        spaces = list(self._spaces.values())
        loading = self._loading is not None and not self._loading.done()
        return {
            "state": "closed" if self._closing else "loading" if loading else "ready",
            "model": self.model,
            "vectors": sum(s.live for s in spaces),
            "namespaces": len(spaces),
            "approximate_namespaces": sum(1 for s in spaces if s.approximate),
            "building": sum(1 for s in spaces if s.building),
            "builds": self.builds,
            "restored": self.restored,
            "bytes": sum(s.memory_bytes() for s in spaces),
        }

    async def close(self) -> None:
        self._closing = True
        for task in (self._loading, self._verifying):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        with contextlib.suppress(RuntimeError):
            await self._run(self._save_all)
        await asyncio.get_running_loop().run_in_executor(None, self._executor.shutdown)

    # -- catching up with SQL (the event loop's) --------------------------------------------

    async def _load(self) -> None:
        async with self._lock:  # a refresh() meanwhile waits for the saved graphs too
            try:
                await self._sync(verify=False)
            except Exception:
                log.exception("vector index load failed; it catches up at the next query")
            finally:
                self._holding = False
            await self._run(self._restore_all)

    async def _catch_up(self) -> None:
        if self._lock.locked():
            return  # a load or catch-up is reading: answer from what is held
        now = time.monotonic()
        if now - self._synced_at < SYNC_S:
            return
        # Waited for a second only: a query's transaction may hold the one connection.
        self._syncing = asyncio.get_running_loop().create_task(self._later(verify=False))
        await asyncio.wait({self._syncing}, timeout=1)
        if now - self._verified_at >= VERIFY_S and self._verifying is None:
            # In the background: counting a million rows is not this query's to wait for.
            self._verifying = asyncio.get_running_loop().create_task(self._later(verify=True))

    async def _later(self, *, verify: bool) -> None:
        """A catch-up, or a check for deleted rows, in a task of its own."""
        try:
            async with self._lock:
                await (self._verify() if verify else self._sync(verify=False))
        except Exception:
            log.exception("vector index: %s failed", "verifying" if verify else "catching up")
        finally:
            if verify:  # done or failed: not again for VERIFY_S
                self._verified_at = time.monotonic()
                self._verifying = None

    async def _sync(self, *, verify: bool) -> None:
        while True:
            rows = await vector_sql.read(
                self.source, vector_sql.rows_after(self.model, self._cursor, FETCH)
            )
            if rows:
                await self._run(self._ingest, rows)
            if len(rows) < FETCH:
                break
        if verify:
            await self._verify()
        self._synced_at = time.monotonic()

    async def _verify(self) -> None:
        counts = await vector_sql.read(self.source, vector_sql.counts(self.model, self._cursor))
        in_sql = {str(ns): int(n) for ns, n in counts}
        for namespace in set(in_sql) | set(self._spaces):
            space = self._spaces.get(namespace)
            if in_sql.get(namespace, 0) == (space.live if space else 0):
                continue
            seqs = await vector_sql.read(
                self.source, vector_sql.seqs(self.model, namespace, self._cursor)
            )
            lacking = await self._run(self._reconcile, namespace, {int(s) for (s,) in seqs})
            for lo in range(0, len(lacking), 500):
                chunk = lacking[lo : lo + 500]
                rows = await vector_sql.read(self.source, vector_sql.rows_of(self.model, chunk))
                if rows:
                    await self._run(self._ingest, rows)
        self._verified_at = time.monotonic()

    async def _run(self, fn: Any, *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)

    # -- in the index's thread ----------------------------------------------------------

    def _ingest(self, rows: Sequence[Any]) -> None:
        by_ns: dict[str, list[Any]] = {}
        for row in rows:
            self._cursor = max(self._cursor, int(row[0]))
            if row[3] != self.dim or len(row[4]) != 2 * self.dim:
                log.warning("vector of memory %s has %d numbers, not %d", row[2], row[3], self.dim)
                continue
            by_ns.setdefault(str(row[1]), []).append(row)
        for namespace, held in by_ns.items():
            space = self._spaces.get(namespace)
            if space is None:
                space = self._spaces[namespace] = Space(self.dim, exact_max=self.exact_max)
            vectors = np.frombuffer(b"".join(r[4] for r in held), dtype="<f2")
            space.add(
                [int(r[0]) for r in held],
                [(str(r[2]), str(r[5]), r[6]) for r in held],
                vectors.reshape(-1, self.dim).astype(np.float32),
            )
        self._schedule_growth()

    def _reconcile(self, namespace: str, seqs: set[int]) -> list[int]:
        """Drop the slots whose row is gone; the seqs SQL has and the index lacks."""
        space = self._spaces.get(namespace)
        if space is None:
            return sorted(seqs)
        held = set()
        for slot, seq in enumerate(space.seqs):
            if not space.alive[slot]:
                continue
            if seq in seqs:
                held.add(seq)
            else:
                space.kill(slot)
        return sorted(seqs - held - set(space.seqs))

    def _restore_all(self) -> None:
        if self.cache_dir is not None:
            for namespace, space in self._spaces.items():
                if vector_cache.restore(space, self._stem(namespace)):
                    self._saved[namespace] = space.covered
                    self.restored += 1
        self._schedule_growth()

    def _save_all(self) -> None:
        """Save the graphs that grew by a twentieth since they were last saved (at
        closing); a restart grows a saved graph by the rows it lacks."""
        for namespace, space in self._spaces.items():
            saved = self._saved.get(namespace, 0)
            if space.graph is not None and space.covered - saved > max(1000, saved // 20):
                self._save(namespace, space)

    def _save(self, namespace: str, space: Space) -> None:
        if self.cache_dir is not None and vector_cache.save(space, self._stem(namespace)):
            self._saved[namespace] = space.covered

    def _stem(self, namespace: str) -> Path:
        assert self.cache_dir is not None
        return vector_cache.stem(
            self.cache_dir, model=self.model, dim=self.dim, namespace=namespace
        )

    def _schedule_growth(self) -> None:
        if self._holding:
            return
        if not self._growing and any(s.building for s in self._spaces.values()):
            self._growing = True
            with contextlib.suppress(RuntimeError):  # closed meanwhile
                self._executor.submit(self._grow)

    def _grow(self) -> None:
        """One step of each graph being built; again (after queries waiting) while any is."""
        self._growing = False
        if self._closing:
            return
        try:
            for namespace, space in list(self._spaces.items()):
                if space.building and not space.grow():
                    self.builds += 1
                    self._save(namespace, space)
        except Exception:
            log.exception("vector index: growing the HNSW graph failed")
            return
        self._schedule_growth()
