"""One namespace's vectors in the vector index (`vectors.py` runs it): a slot per vector
row read, in the order read, each with its memory's id, type and scope, and the search.

A namespace of at most `exact_max` vectors is a float32 matrix searched exactly (matrix @
query). Past that it turns approximate: its vectors become int8 (a quarter of the size),
kept in fixed blocks that an HNSW graph (usearch, cosine, keys = slots) reads in place
(`copy=False`, so they are stored once). The graph grows in steps (`grow`) run between
queries; the slots it does not cover yet are searched exactly. Filtered queries ask the
graph for more than `limit` (as many more as the filter is selective) and keep the allowed
ones, or search the allowed slots exactly when they are at most `exact_max`."""

from __future__ import annotations

import time
from array import array
from collections.abc import Sequence
from typing import Any

import numpy as np

from app.schemas.filters import MemoryFilters
from app.search.postings import _Scopes

try:
    from usearch.index import Index as _Index

    Index: Any = _Index
except ImportError:  # the index stays exact
    Index = None

FIRST_BLOCK = 1024  # int8 rows; each block twice the last, up to BLOCK
BLOCK = 1 << 16
# A step of a graph's growth: a query arriving meanwhile waits for one step at most.
STEP_S = 0.05
BATCH = 32  # vectors added per call
CONNECTIVITY = 16
EXPANSION_ADD = 128
EXPANSION_SEARCH = 128
OVERFETCH_TRIES = 4
GET_MAX = 2048  # vectors read back from a restored graph for an exact search, at most
RERANK = 4  # candidates asked of the graph per place, scored again exactly


class Space:
    def __init__(self, dim: int, *, exact_max: int) -> None:
        self.dim = dim
        self.exact_max = exact_max
        self.ids: list[str] = []
        self.seqs: array[int] = array("q")
        self.alive = np.zeros(0, dtype=bool)
        self.types: array[int] = array("i")
        self.type_codes: dict[str, int] = {}
        self.scopes = _Scopes()
        self.slot_of: dict[str, int] = {}
        self.live = 0
        self.f32: np.ndarray[Any, Any] | None = np.zeros((0, dim), dtype=np.float32)
        # None: a block the graph holds (restored from a file, which stores the vectors)
        self.blocks: list[np.ndarray[Any, Any] | None] = []
        self.starts: list[int] = []  # first slot of each block
        self.sizes: list[int] = []
        self.restored = 0  # slots [0, restored) read from the graph's vectors
        self.norms = np.zeros(0, dtype=np.float32)  # of the int8 rows
        self.graph: Any = None
        self.covered = 0  # slots [0, covered) are in the graph
        self.graph_bytes = 0

    @property
    def approximate(self) -> bool:
        return self.graph is not None

    @property
    def building(self) -> bool:
        return self.graph is not None and self.covered < len(self.ids)

    def add(
        self, seqs: list[int], rows: Sequence[tuple[str, str, str | None]], vectors: Any
    ) -> None:
        """New slots: their seqs, (memory id, type, scope as stored) and float32 vectors."""
        first, n = len(self.ids), len(seqs)
        self.alive = np.concatenate([self.alive, np.ones(n, dtype=bool)])
        for slot, (seq, (memory_id, type_, scope)) in enumerate(zip(seqs, rows, strict=True)):
            self.seqs.append(seq)
            self.ids.append(memory_id)
            self.types.append(self.type_codes.setdefault(type_, len(self.type_codes)))
            self.scopes.add(scope)
            old = self.slot_of.get(memory_id)
            if old is not None:  # embedded again: the newer row is the one
                self.kill(old)
            self.slot_of[memory_id] = first + slot
        self.live += n
        if self.f32 is not None:
            self._append_f32(vectors)
            if self.live > self.exact_max and Index is not None:
                self._go_approximate()
        else:
            self._append_i8(vectors)

    def kill(self, slot: int) -> None:
        if self.alive[slot]:
            self.alive[slot] = False
            self.live -= 1
            if self.slot_of.get(self.ids[slot]) == slot:
                del self.slot_of[self.ids[slot]]

    def grow(self) -> bool:
        """Add the next slots to the graph for about STEP_S; whether more remain."""
        if self.graph is None or self.covered >= len(self.ids):
            return False
        until = time.perf_counter() + STEP_S
        while self.covered < len(self.ids) and time.perf_counter() < until:
            lo = self.covered
            b = self._block_of(lo)
            block = self.blocks[b]
            assert block is not None  # freed blocks are below `covered`
            hi = min(len(self.ids), lo + BATCH, self.starts[b] + self.sizes[b])
            rows = block[lo - self.starts[b] : hi - self.starts[b]]
            self.graph.add(np.arange(lo, hi, dtype=np.uint64), rows, copy=False, threads=1)
            self.covered = hi
        # Read here, in the index's thread: asking the graph while it grows crashes it.
        self.graph_bytes = int(self.graph.memory_usage)
        return self.covered < len(self.ids)

    def top(self, query: Any, filters: MemoryFilters, limit: int) -> dict[str, float]:
        """The `limit` best allowed live slots: memory id -> cosine, best first."""
        n = len(self.ids)
        if n == 0 or limit <= 0:
            return {}
        allowed = self._allowed(filters)
        head = self.covered if self.graph is not None else 0
        slots, scores = self._exact(query, np.flatnonzero(allowed[head:]) + head, limit)
        if head:
            within = allowed[:head]
            count = int(np.count_nonzero(within))
            if count and self._exact_is_cheaper(within, count, limit):
                found = self._exact(query, np.flatnonzero(within), limit)
            elif count:
                found = self._approximate(query, within, count, limit)
            else:
                found = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32))
            slots = np.concatenate([slots, found[0]])
            scores = np.concatenate([scores, found[1]])
        order = np.lexsort((slots, -scores))[:limit]
        return {self.ids[int(slots[i])]: float(scores[i]) for i in order}

    def memory_bytes(self) -> int:
        held = sum(b.nbytes for b in self.blocks if b is not None)
        held += self.alive.nbytes + self.norms.nbytes
        if self.f32 is not None:
            held += self.f32.nbytes
        return held + self.graph_bytes

    def restore(self, graph: Any) -> None:
        """Take a saved graph of the first `graph.size` slots (their seqs checked by the
        caller), and free the blocks it holds the vectors of."""
        graph.expansion_search = EXPANSION_SEARCH
        self.graph, self.covered = graph, int(graph.size)
        self.graph_bytes = int(graph.memory_usage)
        for b, (start, size) in enumerate(zip(self.starts, self.sizes, strict=True)):
            if start + size <= self.covered:
                self.blocks[b] = None
                self.restored = start + size

    # -- search ----------------------------------------------------------------------

    def _allowed(self, filters: MemoryFilters) -> Any:
        allowed = self.alive.copy()
        if filters.types is not None:
            wanted = np.zeros(len(self.type_codes) + 1, dtype=bool)  # a lookup: no np.isin
            wanted[[self.type_codes[t] for t in filters.types if t in self.type_codes]] = True
            allowed &= wanted[np.frombuffer(self.types, dtype=np.int32)]
        if filters.scope is not None:
            allowed &= self.scopes.matching(filters.scope)
        if filters.applies_to is not None:
            allowed &= self.scopes.applying_to(filters.applies_to)
        return allowed

    def _exact(self, query: Any, slots: Any, limit: int) -> tuple[Any, Any]:
        if len(slots) == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        if self.f32 is not None:
            rows = self.f32[slots] if len(slots) < len(self.ids) else self.f32[: len(self.ids)]
        else:
            rows = self._rows(slots).astype(np.float32)
        # einsum, not BLAS: a matrix-vector product is memory-bound, and BLAS's threads
        # cost more than they save on a busy machine.
        scores = np.einsum("ij,j->i", rows, query)
        if self.f32 is None:
            scores /= self.norms[slots]
        if len(slots) > limit:
            # Every slot scoring at least the limit-th best, so that ties at the cut go by
            # slot (as `top` orders them) and not by chance.
            keep = scores >= np.partition(scores, len(scores) - limit)[len(scores) - limit]
            return slots[keep], scores[keep]
        return slots, scores

    def _approximate(self, query: Any, within: Any, count: int, limit: int) -> tuple[Any, Any]:
        """The graph's best allowed slots, asking for more while a filter leaves too few."""
        head = len(within)
        fetch = min(head, int(np.ceil(RERANK * limit * head / count)))
        for _ in range(OVERFETCH_TRIES):
            keys = np.asarray(self.graph.search(query, fetch, threads=1).keys, dtype=np.int64)
            keys = keys[within[keys]]
            if len(keys) >= min(RERANK * limit, count) or fetch >= head:
                break
            fetch = min(head, fetch * 4)
        # The graph finds the neighbours but orders them by its own rounding of the query:
        # its candidates are scored again against the float query.
        return self._exact(query, keys, limit)

    # -- storage ---------------------------------------------------------------------

    def _append_f32(self, vectors: Any) -> None:
        assert self.f32 is not None
        n, need = len(self.ids) - len(vectors), len(self.ids)
        if need > len(self.f32):
            grown = np.empty((max(need, 2 * len(self.f32), 64), self.dim), dtype=np.float32)
            grown[:n] = self.f32[:n]
            self.f32 = grown
        self.f32[n:need] = vectors

    def _go_approximate(self) -> None:
        assert self.f32 is not None
        held, self.f32 = self.f32[: len(self.ids)], None
        self._append_i8(held)
        self.graph = Index(
            ndim=self.dim,
            metric="cos",
            dtype="i8",
            connectivity=CONNECTIVITY,
            expansion_add=EXPANSION_ADD,
            expansion_search=EXPANSION_SEARCH,
        )

    def _append_i8(self, vectors: Any) -> None:
        # Each vector scaled to the int8 range on its own: cosine ignores the scale, and a
        # unit vector's numbers (about 0.05 at 384 dimensions) would use a tenth of it.
        peak = np.maximum(np.abs(vectors).max(axis=1, keepdims=True), 1e-12)
        quantized = np.rint(vectors * (127.0 / peak)).astype(np.int8)
        norms = np.linalg.norm(quantized.astype(np.float32), axis=1)
        self.norms = np.concatenate([self.norms, np.maximum(norms, 1e-6)])
        slot, end = len(self.ids) - len(vectors), len(self.ids)
        while slot < end:
            capacity = self.starts[-1] + self.sizes[-1] if self.blocks else 0
            if slot >= capacity:
                size = min(BLOCK, max(FIRST_BLOCK, 2 * self.sizes[-1] if self.blocks else 0))
                self.starts.append(capacity)
                self.sizes.append(size)
                self.blocks.append(np.zeros((size, self.dim), dtype=np.int8))
                capacity += size
            hi = min(end, capacity)
            block, start = self.blocks[-1], self.starts[-1]
            assert block is not None
            block[slot - start : hi - start] = quantized[slot - (end - len(vectors)) :][: hi - slot]
            slot = hi

    def _exact_is_cheaper(self, within: Any, count: int, limit: int) -> bool:
        """Whether a filter leaves so few slots that scoring them all costs less than
        asking the graph for enough candidates (RERANK * limit over the filter's share),
        and their vectors are quick to read (ours, or few of a restored graph's, which
        it hands out one by one)."""
        if count > self.exact_max or count * count > RERANK * limit * len(within):
            return False
        return count <= GET_MAX or not within[: self.restored].any()

    def _block_of(self, slot: int) -> int:
        return int(np.searchsorted(self.starts, slot, side="right")) - 1

    def _rows(self, slots: Any) -> Any:
        rows = np.empty((len(slots), self.dim), dtype=np.int8)
        blocks = np.searchsorted(self.starts, slots, side="right") - 1
        for b in np.unique(blocks):
            at = blocks == b
            block = self.blocks[int(b)]
            if block is None:
                keys = slots[at].astype(np.uint64)
                rows[at] = np.stack(self.graph.get(keys, dtype=np.int8)).reshape(-1, self.dim)
            else:
                rows[at] = block[slots[at] - self.starts[int(b)]]
        return rows
