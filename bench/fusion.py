"""Fit hybrid search's fusion (ENGRAM_EMBEDDINGS__RRF_K, __DENSE_WEIGHT) on real
conversations, each half of the questions judged with what the other half chose.

The LongMemEval oracle set is pooled as in bench.retrieval (one memory per turn, the
other questions' sessions as distractors) in a real server with the local embedder; each
question's BM25 ranking and vector ranking (top 100 each, modes lexical and dense) are
read once, then weighted reciprocal rank fusion, 1/(k + BM25 rank) + w/(k + vector
rank), is scored offline for a grid of (w, k): recall@10 of the evidence and MRR@10. The
questions are split in two halves by id; each half picks the best (w, k) and is printed
with the other half's score at that choice (and at equal weights, k 60).

    python -m bench.fusion [--data DIR] [--store DIR]

--store keeps the server's data (and so its vectors) in DIR: a second run reads the
rankings again without embedding the turns anew.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.core.config import Limits
from bench.longmemeval import data_file, pool, read
from bench.retrieval import drained, index_built, store
from tests.server import EngramServer

GRID = [(w, k) for w in (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0, 1.2) for k in (10, 30, 60)]


async def rankings(data: Any, root: Path) -> list[dict[str, Any]]:
    """Per question: its category, evidence and both rankings, from a real server."""
    fresh = not (root / "engram.db").exists()
    server = EngramServer(
        root, ENGRAM_LOG_REQUESTS="false", ENGRAM_EMBEDDINGS__PROVIDER="local"
    ).start()
    try:
        if fresh:
            await store(server.url, data)
        await index_built(server.url)
        await drained(server.url)
        out = []
        async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
            for q in data.questions:
                row: dict[str, Any] = {"id": q.id, "category": q.category, "evidence": q.evidence}
                for mode in ("lexical", "dense"):
                    body = {"query": q.text, "limit": 100, "mode": mode}
                    r = await client.post("/v1/memories/search", json=body)
                    r.raise_for_status()
                    row[mode] = [h["memory"]["id"] for h in r.json()["hits"]]
                out.append(row)
        return out
    finally:
        server.stop()


def fused(row: dict[str, Any], weight: float, k: int) -> list[str]:
    score: dict[str, float] = defaultdict(float)
    for name, w in (("lexical", 1.0), ("dense", weight)):
        for rank, mid in enumerate(row[name], start=1):
            score[mid] += w / (k + rank)
    return sorted(score, key=lambda mid: -score[mid])[:10]


def judged(rows: list[dict[str, Any]], weight: float, k: int) -> tuple[float, float, str]:
    """recall@10, MRR@10 and recall@10 by category."""
    hits, mrr, by = 0.0, 0.0, defaultdict(list)
    for row in rows:
        top = fused(row, weight, k)
        found = [i for i, mid in enumerate(top, start=1) if mid in row["evidence"]]
        hits += bool(found)
        mrr += 1 / found[0] if found else 0.0
        by[row["category"]].append(bool(found))
    cats = ", ".join(f"{c} {sum(v) / len(v):.3f}" for c, v in sorted(by.items()))
    return hits / len(rows), mrr / len(rows), cats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=None, help="the LongMemEval oracle file or its folder")
    parser.add_argument("--store", default="/tmp/engram-fusion", help="the server's data dir")
    args = parser.parse_args()
    data = pool(read(data_file(args.data)), max_chars=Limits().max_text_chars)
    root = Path(args.store)
    root.mkdir(parents=True, exist_ok=True)
    rows = sorted(asyncio.run(rankings(data, root)), key=lambda r: r["id"])
    halves = [rows[0::2], rows[1::2]]
    for mine, other in ((0, 1), (1, 0)):
        w, k = max(GRID, key=lambda g: judged(halves[mine], *g)[0])
        r10, mrr, _ = judged(halves[other], w, k)
        base, base_mrr, _ = judged(halves[other], 1.0, 60)
        print(
            f"half {mine} chose dense weight {w}, k {k}: the other half's recall@10 {r10:.3f} "
            f"(MRR {mrr:.3f}); at equal weights, k 60: {base:.3f} (MRR {base_mrr:.3f})"
        )
    lexical = judged([dict(r, dense=[]) for r in rows], 1.0, 60)
    dense = judged([dict(r, lexical=[]) for r in rows], 1.0, 60)
    print(
        f"all {len(rows)} questions, lexical: {lexical[0]:.3f} (MRR {lexical[1]:.3f}) {lexical[2]}"
    )
    print(f"all {len(rows)} questions, dense: {dense[0]:.3f} (MRR {dense[1]:.3f}) {dense[2]}")
    for w, k in GRID:
        r10, mrr, cats = judged(rows, w, k)
        print(f"dense weight {w}, k {k}: {r10:.3f} (MRR {mrr:.3f}) {cats}")


if __name__ == "__main__":
    main()
