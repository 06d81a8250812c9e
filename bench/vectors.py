"""The vector index's build and search at scale, on random vectors in clusters (as
embeddings of related memories are): one namespace of each size, fed in the index's read
chunks, then its HNSW graph grown to the end in the index's steps; recall@10 of the graph
against exact search, query latency unfiltered and with a type filter (a quarter of the
memories), the index's bytes and the process's RSS.

Then the graph saved (as the index saves it at the end of a build) and read back by a
space of the same rows, as at a restart.

    python -m bench.vectors [--sizes 100000,1000000] [--dim 384] [--queries 200]
        [--cache-dir /tmp/vectors-bench]
    python -m bench.vectors --sql 100000   # the index's load from a SQLite file, twice
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import Table

from app.core.config import Settings
from app.db.backends import create_engine
from app.db.migrate import migrate
from app.models import MemoryVector
from app.repositories.memory_sql import MEMORIES
from app.schemas.filters import MemoryFilters
from app.search import vector_cache
from app.search.vector_space import Space
from app.search.vectors import FETCH, VectorIndex
from app.services.memories.rows import new_memory

VECTORS: Table = MemoryVector.__table__  # type: ignore[assignment]

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


def filled(size: int, *, dim: int, exact_max: int, seed: int, centres: Any) -> Space:
    """A space fed every row in the index's read chunks (no graph grown yet)."""
    space = Space(dim, exact_max=exact_max)
    for lo in range(0, size, FETCH):
        hi = min(size, lo + FETCH)
        rows = [(f"m{i:08d}", TYPES[i % 4], SCOPE) for i in range(lo, hi)]
        space.add(list(range(lo + 1, hi + 1)), rows, chunk(seed, lo, hi, centres))
    return space


def run(
    size: int, *, dim: int, n_queries: int, exact_max: int, cache_dir: Path, seed: int = 7
) -> None:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((max(64, size // 100), dim)).astype(np.float32)
    started = time.perf_counter()
    space = filled(size, dim=dim, exact_max=exact_max, seed=seed, centres=centres)
    read_s = time.perf_counter() - started
    started, cpu = time.perf_counter(), time.process_time()
    while space.grow():
        pass
    build_s, build_cpu = time.perf_counter() - started, time.process_time() - cpu
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
        f"{size:>9,}  read {read_s:6.1f} s  graph {build_s:7.1f} s ({build_cpu:.1f} s of CPU)  "
        f"index {space.memory_bytes() / 2**20:7.1f} MiB  rss {rss_mib():7.1f} MiB"
    )
    at = cache_dir / f"bench-{size}"
    started = time.perf_counter()
    vector_cache.save(space, at)
    save_s = time.perf_counter() - started
    del space
    again = filled(size, dim=dim, exact_max=exact_max, seed=seed, centres=centres)
    started = time.perf_counter()
    assert vector_cache.restore(again, at)
    restore_s = time.perf_counter() - started
    assert again.top(queries[0], MemoryFilters(), 10)
    mib = at.with_name(at.name + ".usearch").stat().st_size / 2**20
    print(
        f"           saved in {save_s:.1f} s ({mib:.0f} MiB), read back in {restore_s:.1f} s; "
        f"index {again.memory_bytes() / 2**20:.1f} MiB, rss {rss_mib():.1f} MiB"
    )
    for name in ("all", "fact"):
        ms = sorted(timings[name])
        print(
            f"           {name:>4}: recall@10 {recall[name]:.3f}  p50 {statistics.median(ms):6.2f} ms"
            f"  p95 {ms[int(0.95 * (len(ms) - 1))]:6.2f} ms"
        )


async def from_sql(size: int, *, dim: int, exact_max: int, seed: int = 7) -> None:
    """A SQLite file of `size` memories and vectors; the index's first load (rows read,
    then its graph built and saved) and a restart's (rows read, graph read back)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((max(64, size // 100), dim)).astype(np.float32)
    with tempfile.TemporaryDirectory() as scratch:
        engine = create_engine(Settings(database_url=f"sqlite+aiosqlite:///{scratch}/e.db"))
        await migrate(engine)
        now = datetime.now(UTC)
        started = time.perf_counter()
        for lo in range(0, size, FETCH):
            hi = min(size, lo + FETCH)
            memories = [
                new_memory(
                    "bench",
                    f"m{i:08d}",
                    content=f"memory {i}",
                    confidence=0.5,
                    sensitivity="low",
                    criticality=0.5,
                    source_refs=[],
                    metadata={},
                    now=now,
                )
                | {"type": TYPES[i % 4], "scope": {"level": "global"}}
                for i in range(lo, hi)
            ]
            vectors = chunk(seed, lo, hi, centres).astype("<f2")
            async with engine.begin() as conn:
                await conn.execute(MEMORIES.insert(), memories)
                await conn.execute(
                    VECTORS.insert(),
                    [
                        {
                            "namespace": "bench",
                            "memory_id": m["id"],
                            "model": "bench",
                            "dim": dim,
                            "vector": v.tobytes(),
                            "created_at": now,
                        }
                        for m, v in zip(memories, vectors, strict=True)
                    ],
                )
        print(f"{size:>9,}  written in {time.perf_counter() - started:.1f} s")
        for run_name in ("first start", "restart"):
            index = VectorIndex(
                engine, model="bench", dim=dim, exact_max=exact_max, cache_dir=Path(scratch)
            )
            started = time.perf_counter()
            index.start()
            await index.refresh()
            loaded = time.perf_counter() - started
            while index.stats()["building"]:
                await asyncio.sleep(0.1)
            ready = time.perf_counter() - started
            stats = index.stats()
            await index.close()
            print(
                f"           {run_name}: rows read in {loaded:.1f} s, graph ready at "
                f"{ready:.1f} s (built {stats['builds']}, read back {stats['restored']}), "
                f"index {stats['bytes'] / 2**20:.1f} MiB, rss {rss_mib():.1f} MiB"
            )
        await engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--exact-max", type=int, default=50_000)
    parser.add_argument("--cache-dir", type=Path, default=None)
    parser.add_argument("--sql", type=int, default=0, help="time the load from SQL instead")
    args = parser.parse_args()
    if args.sql:
        asyncio.run(from_sql(args.sql, dim=args.dim, exact_max=args.exact_max))
        return
    with tempfile.TemporaryDirectory() as scratch:
        for size in (int(s) for s in args.sizes.split(",")):
            run(
                size,
                dim=args.dim,
                n_queries=args.queries,
                exact_max=args.exact_max,
                cache_dir=args.cache_dir or Path(scratch),
            )


if __name__ == "__main__":
    main()
