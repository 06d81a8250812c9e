"""The embedding backlog: memories wait in `memory_embeddings_pending` (a trigger adds each
new one in its write's transaction) and this loop embeds them in order, off the request
path, storing their vectors and taking them off the list in one transaction.

It runs where the worker runs (the API process by default, or `engram worker`). Under a
burst of writes it waits, as the worker does, and then takes a small share of the time:
the model's CPU goes to requests first. Two processes running it at once do the same
work twice at worst (a vector is stored once per memory and model)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from app.core.config import Embeddings, Learning
from app.db.engine import Transactions
from app.embeddings.base import Embedder, EmbeddingError
from app.repositories.vectors import VectorRepository

log = logging.getLogger("engram.embeddings")

IDLE_S = 0.5  # between looks at an empty backlog
DEFER_CHECK_S = 0.2
RETRY_S = 5.0  # after a failed call to the embedder


class Backlog:
    def __init__(
        self,
        embedder: Embedder,
        transactions: Transactions,
        *,
        settings: Embeddings,
        learning: Learning,
        pressure: Callable[[], bool] = lambda: False,
        on_stored: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.embedder = embedder
        self.transactions = transactions
        self.batch_size = settings.batch_size
        self.learning = learning
        self.pressure = pressure
        self.on_stored = on_stored
        self.embedded = 0  # vectors this process stored
        self.seconds = 0.0  # spent embedding and storing them
        self.failures = 0
        self._wake = asyncio.Event()

    def wake(self) -> None:
        self._wake.set()

    def stats(self) -> dict[str, Any]:
        rate = self.embedded / self.seconds if self.seconds > 0 else None
        return {
            "model": self.embedder.model,
            "dim": self.embedder.dim,
            "embedded": self.embedded,
            "per_second": round(rate, 1) if rate else None,
            "failures": self.failures,
        }

    async def reconcile(self) -> int:
        """Put back on the list the memories without a vector of this model that are not
        on it (the model changed, or vectors were removed); how many. Counts first, so a
        store whose memories all have one pays three counts."""
        model = self.embedder.model
        async with self.transactions.read() as session:
            memories, vectors, waiting = await VectorRepository(session).counts(model)
        if memories <= vectors + waiting:
            return 0
        async with self.transactions.write() as session:
            added = await VectorRepository(session).enqueue_missing(model)
        log.info("memories without a %s vector put on the embedding list: %d", model, added)
        return added

    async def run(self) -> None:
        """Embed until cancelled (first putting back what lacks this model's vector)."""
        await self.reconcile()
        busy_since: float | None = None
        while True:
            try:
                now = time.monotonic()
                if not self.pressure():
                    busy_since = None
                elif busy_since is None:
                    busy_since = now
                if busy_since is not None and now - busy_since < self.learning.max_defer_s:
                    await asyncio.sleep(DEFER_CHECK_S)
                    continue
                started = time.perf_counter()
                done = await self.run_once()
                if not done:
                    self._wake.clear()
                    try:
                        await asyncio.wait_for(self._wake.wait(), IDLE_S)
                    except TimeoutError:
                        pass
                elif busy_since is not None:
                    share = self.learning.busy_share
                    await asyncio.sleep((time.perf_counter() - started) * (1 - share) / share)
                else:
                    await asyncio.sleep(0)  # requests in between batches
            except asyncio.CancelledError:
                raise
            except EmbeddingError:
                self.failures += 1
                log.warning("embedding failed; retrying in %.0f s", RETRY_S, exc_info=True)
                await asyncio.sleep(RETRY_S)
            except Exception:
                self.failures += 1
                log.exception("embedding backlog failed; retrying in %.0f s", RETRY_S)
                await asyncio.sleep(RETRY_S)

    async def drain(self) -> int:
        """Embed every waiting memory now; how many were taken off the list."""
        await self.reconcile()
        total = 0
        while n := await self.run_once():
            total += n
        return total

    async def run_once(self) -> int:
        """Embed the next batch; the number of memories taken off the backlog."""
        started = time.perf_counter()
        async with self.transactions.read() as session:
            rows = await VectorRepository(session).next_pending(
                self.batch_size, model=self.embedder.model
            )
        if not rows:
            return 0
        live = [r for r in rows if r.content is not None]  # the others: just off the list
        texts = [r.content for r in live]
        vectors = await self.embedder.embed(texts, background=True) if live else None
        async with self.transactions.write() as session:
            repo = VectorRepository(session)
            if vectors is not None:
                keys = [(r.namespace, r.memory_id) for r in live]
                await repo.store(keys, vectors, model=self.embedder.model, now=datetime.now(UTC))
            await repo.done([r.seq for r in rows])
        self.embedded += len(live)
        self.seconds += time.perf_counter() - started
        if self.on_stored is not None and live:
            await self.on_stored()  # this process's vector index reads them at once
        return len(rows)


async def pending(transactions: Transactions) -> int:
    """Memories waiting for their vector (in every namespace)."""
    async with transactions.read() as session:
        return await VectorRepository(session).pending()
