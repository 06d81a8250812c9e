"""The vector index's build and search at scale, on random vectors in clusters (as
embeddings of related memories are): one namespace of each size, fed in the index's read
chunks, then its HNSW graph grown to the end in the index's steps; recall@10 of the graph
against exact search, query latency unfiltered and with a type filter (a quarter of the
memories), the index's bytes and the process's RSS.

    python -m bench.vectors [--sizes 100000,1000000] [--dim 384] [--queries 200]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import numpy as np

from app.schemas.filters import MemoryFilters
from app.search.vector_space import Space
from app.search.vectors import FETCH

TYPES = ["fact", "procedure", "constraint", "preference"]
SCOPE = '{"level": "global"}'


def chunk(seed: int, lo: int, hi: int, centres: Any) -> Any:
    """Rows [lo, hi): a cluster's centre plus noise, normalised, as float16 (as stored)."""
    rng = np.random.default_rng((seed, lo))
    picked = centres[rng.integers(0, len(centres), hi - lo)]
    rows = picked + 0.35 * rng.standard_normal(picked.shape).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return rows.astype("<f2").astype(np.float32)


def rss_mib() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def exact_top(size: int, dim: int, seed: int, centres: Any, queries: Any, allowed: Any) -> Any:
    """Each query's ten best rows of `allowed` (slot -> bool), by brute force in chunks."""
    best = np.full((len(queries), 10), -np.inf, dtype=np.float32)
    slots = np.zeros((len(queries), 10), dtype=np.int64)
    for lo in range(0, size, FETCH):
        hi = min(size, lo + FETCH)
        scores = queries @ chunk(seed, lo, hi, centres).T
        scores[:, ~allowed[lo:hi]] = -np.inf
        both = np.concatenate([best, scores], axis=1)
        ids = np.concatenate([slots, np.arange(lo, hi)[None, :].repeat(len(queries), 0)], axis=1)
        top = np.argsort(-both, axis=1)[:, :10]
        best = np.take_along_axis(both, top, 1)
        slots = np.take_along_axis(ids, top, 1)
    return slots


def run(size: int, *, dim: int, n_queries: int, exact_max: int, seed: int = 7) -> None:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((max(64, size // 100), dim)).astype(np.float32)
    space = Space(dim, exact_max=exact_max)
    started = time.perf_counter()
    for lo in range(0, size, FETCH):
        hi = min(size, lo + FETCH)
        rows = [(f"m{i:08d}", TYPES[i % 4], SCOPE) for i in range(lo, hi)]
        space.add(list(range(lo + 1, hi + 1)), rows, chunk(seed, lo, hi, centres))
    read_s = time.perf_counter() - started
    started = time.perf_counter()
    while space.grow():
        pass
    build_s = time.perf_counter() - started
    queries = chunk(seed + 1, 0, n_queries, centres)
    fact = MemoryFilters(types=["fact"])
    timings: dict[str, list[float]] = {"all": [], "fact": []}
    found: dict[str, list[list[int]]] = {"all": [], "fact": []}
    for q in queries:
        for name, filters in (("all", MemoryFilters()), ("fact", fact)):
            t = time.perf_counter()
            got = space.top(q, filters, 10)
            timings[name].append((time.perf_counter() - t) * 1000)
            found[name].append([int(mid[1:]) for mid in got])
    every = np.ones(size, dtype=bool)
    facts = np.arange(size) % 4 == 0
    recall = {}
    for name, allowed in (("all", every), ("fact", facts)):
        truth = exact_top(size, dim, seed, centres, queries, allowed)
        hits = sum(len(set(f) & set(t.tolist())) for f, t in zip(found[name], truth, strict=True))
        recall[name] = hits / (10 * n_queries)
    print(
        f"{size:>9,}  read {read_s:6.1f} s  graph {build_s:7.1f} s  "
        f"index {space.memory_bytes() / 2**20:7.1f} MiB  rss {rss_mib():7.1f} MiB"
    )
    for name in ("all", "fact"):
        ms = sorted(timings[name])
        print(
            f"           {name:>4}: recall@10 {recall[name]:.3f}  p50 {statistics.median(ms):6.2f} ms"
            f"  p95 {ms[int(0.95 * (len(ms) - 1))]:6.2f} ms"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--exact-max", type=int, default=50_000)
    args = parser.parse_args()
    for size in (int(s) for s in args.sizes.split(",")):
        run(size, dim=args.dim, n_queries=args.queries, exact_max=args.exact_max)


if __name__ == "__main__":
    main()
