"""Retrieval on real conversations: the LongMemEval oracle set (bench/longmemeval.py)
pooled into one store, one memory per turn, so that the other questions' sessions are the
distractors; each question asked of POST /v1/memories/search on the real server; recall@k
and MRR of its evidence turns, by mode and by question category.

    python -m bench.retrieval [--modes lexical,dense,hybrid] [--k 5,10] [--data DIR]

The lexical mode alone runs a server without an embedder and leaves `mode` out (lexical is
then the default); dense or hybrid run a server with the local embedder, wait until every
memory is embedded (and say how fast that went), and ask each mode by name.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.core.config import Limits
from bench.longmemeval import Pool, Question, Scores, data_file, memory_body, pool, read, tables
from tests.server import EngramServer

MODES = ("lexical", "dense", "hybrid")


@dataclass
class Run:
    """What one run measured, beside the scores."""

    scores: dict[str, Scores] = field(default_factory=dict)
    latency_ms: dict[str, list[float]] = field(default_factory=dict)
    missing_vectors: dict[str, int] = field(default_factory=dict)
    load_s: float = 0.0
    embed_s: float | None = None
    embedded: int = 0
    model_rate: float | None = None  # the backlog's own: memories per second of its work


async def store(url: str, data: Pool, *, clients: int = 8) -> float:
    """Every turn written through POST /v1/memories, `clients` at a time; seconds taken."""
    queue = iter(data.turns)
    t0 = time.perf_counter()

    async def writer(client: httpx.AsyncClient) -> None:
        for turn in queue:
            r = await client.post("/v1/memories", json=memory_body(turn))
            if r.status_code != 201:
                raise RuntimeError(f"storing {turn.id}: {r.status_code} {r.text}")

    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        await asyncio.gather(*(writer(client) for _ in range(clients)))
    return time.perf_counter() - t0


async def ready(client: httpx.AsyncClient) -> dict[str, Any]:
    body: dict[str, Any] = (await client.get("/ready")).json()
    return body


async def index_built(url: str) -> None:
    """Wait until the in-memory search index serves (FTS5 ranks until then)."""
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        while (await ready(client)).get("search_index", {}).get("state", "ready") != "ready":
            await asyncio.sleep(0.05)


def embeddings_of(body: dict[str, Any]) -> dict[str, Any]:
    stats: dict[str, Any] = body.get("search", {}).get("embeddings") or {}
    return stats


async def drained(url: str, *, timeout_s: float = 3600) -> tuple[float, dict[str, Any]]:
    """Seconds until the embedding backlog is empty, and GET /ready's embedding stats."""
    t0 = time.perf_counter()
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        while time.perf_counter() - t0 < timeout_s:
            stats = embeddings_of(await ready(client))
            if stats and stats["pending"] == 0:
                return time.perf_counter() - t0, stats
            await asyncio.sleep(0.2)
    raise RuntimeError(f"the embedding backlog did not drain in {timeout_s:.0f} s")


async def ask(
    url: str,
    questions: list[Question],
    *,
    mode: str | None,
    limit: int,
    run: Run,
    ks: tuple[int, ...],
) -> None:
    """Each question once; its ranking scored, its latency and missing vectors kept."""
    name = mode or "lexical"
    scores, times, missing = Scores(ks), [], 0
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        for q in questions:
            body: dict[str, Any] = {"query": q.text, "limit": limit}
            if mode is not None:
                body["mode"] = mode
            t0 = time.perf_counter()
            r = await client.post("/v1/memories/search", json=body)
            times.append((time.perf_counter() - t0) * 1000)
            if r.status_code != 200:
                raise RuntimeError(f"search ({name}) of {q.id}: {r.status_code} {r.text}")
            result = r.json()
            missing += int(result.get("missing_vectors", 0))
            scores.add(q, [h["memory"]["id"] for h in result["hits"]])
    run.scores[name], run.latency_ms[name], run.missing_vectors[name] = scores, times, missing


async def measure(
    data: Pool, data_dir: Path, *, modes: list[str], ks: tuple[int, ...] = (5, 10)
) -> Run:
    """Store the pool in a fresh server, then ask every question in each mode."""
    embedder = any(m != "lexical" for m in modes)
    provider = "local" if embedder else "none"
    server = EngramServer(
        data_dir, ENGRAM_LOG_REQUESTS="false", ENGRAM_EMBEDDINGS__PROVIDER=provider
    ).start()
    run = Run()
    try:
        run.load_s = await store(server.url, data)
        await index_built(server.url)
        if embedder:
            run.embed_s, stats = await drained(server.url)
            run.embedded, run.model_rate = int(stats.get("embedded") or 0), stats.get("per_second")
        for mode in modes:
            await ask(
                server.url,
                data.questions,
                mode=mode if embedder else None,
                limit=max(ks),
                run=run,
                ks=ks,
            )
    finally:
        server.stop()
    return run


def report(data: Pool, run: Run) -> str:
    lines = [
        f"store: {len(data.turns)} memories, one per turn ({data.shared} turns shared by "
        f"several questions stored once; {data.truncated} truncated to the content limit), "
        f"written in {run.load_s:.1f} s ({len(data.turns) / run.load_s:,.0f}/s, 8 clients)",
        f"questions: {len(data.questions)} (abstention questions left out)",
    ]
    if run.embed_s is not None:
        rate = run.embedded / (run.load_s + run.embed_s)
        lines.append(
            f"embedding backlog drained {run.embed_s:.1f} s after the last write: "
            f"{run.embedded} memories embedded in the background, {rate:,.1f} memories/s from "
            f"the first write ({run.model_rate} memories/s of the backlog's own working time)"
        )
    lines += ["", tables(run.scores), ""]
    for mode, times in run.latency_ms.items():
        lines.append(
            f"{mode}: search p50 {statistics.median(times):.1f} ms, "
            f"p95 {sorted(times)[int(0.95 * (len(times) - 1))]:.1f} ms; "
            f"candidates without a vector: {run.missing_vectors[mode]}"
        )
    return "\n".join(lines)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modes", default="lexical", help="comma-separated: " + ",".join(MODES))
    parser.add_argument("--k", default="5,10", help="recall@k for each k; MRR at the largest")
    parser.add_argument("--data", default=None, help="the LongMemEval oracle file or its folder")
    parser.add_argument("--questions", type=int, default=0, help="only the first n records")
    args = parser.parse_args()
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if bad := [m for m in modes if m not in MODES]:
        parser.error(f"--modes: unknown {', '.join(bad)} (choose from {', '.join(MODES)})")
    ks = tuple(sorted({int(k) for k in args.k.split(",")}))
    if not 1 <= ks[0] <= ks[-1] <= 100:
        parser.error("--k: each k from 1 to 100 (the search's limit)")
    path = data_file(args.data)
    records = read(path)
    if args.questions:
        records = records[: args.questions]
    data = pool(records, max_chars=Limits().max_text_chars)
    print(f"data: {path} ({len(records)} records)")
    with tempfile.TemporaryDirectory(prefix="engram-retrieval-") as tmp:
        run = await measure(data, Path(tmp), modes=modes, ks=ks)
    print(report(data, run))


if __name__ == "__main__":
    asyncio.run(main())
