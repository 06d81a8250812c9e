"""Recall and memory benchmarks on natural text (docstring prose, see bench/corpus.py).

In one run, against the real server (uvicorn, one worker, SQLite + LevelDB):
- memory writes (POST /v1/memories, 32 clients) against GET /health;
- recall latency (one client) with 10,000 and with 100,000 memories;
- retrieval quality on a labelled set: recall@5 and recall@10 of /v1/memories/search
  against plain word overlap over the same memories;
- dataset export: completed transitions per second streamed as NDJSON, and the
  server's memory before and after.

- with --policy, recall latency with a learned policy deciding half the recalls against
  baseline_v0 deciding the other half, in the same run.

    python -m bench.recall [--sizes 10000,100000] [--queries 300] [--policy]
    python -m bench.recall --shape natural [--sizes 2000,100000]  (bench/recall_natural.py)
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.core.config import Settings
from app.db.backends import create_engine
from app.db.engine import create_sessionmaker
from app.db.migrate import migrate
from app.learning.ranking import query_terms
from app.repositories.memories import MEMORIES
from app.services.memories.rows import token_estimate
from bench.corpus import sentences
from bench.loadgen import run
from bench.transitions import download, insert_copies, model_transition
from tests.server import EngramServer
from tests.system.raw_http import build_request

TYPES = ["fact", "procedure", "preference", "constraint", "tool_memory", "reflection"]


def memories_text(n: int) -> list[str]:
    """n distinct memories: single sentences, then pairs and triples of neighbours."""
    base = sentences(60_000)
    out: list[str] = list(base)
    width = 2
    while len(out) < n and width <= 4:
        out += [" ".join(base[i : i + width]) for i in range(0, len(base) - width)]
        width += 1
    return out[:n]


def row(i: int, content: str, now: datetime) -> dict[str, Any]:
    return {
        "namespace": "default",
        "id": f"m{i:07d}",
        "type": TYPES[i % len(TYPES)],
        "scope": {"level": "global"},
        "content": content,
        "status": "active",
        "confidence": 0.5 + (i % 5) / 10,
        "sensitivity": "low",
        "criticality": (i % 10) / 10,
        "valid_from": None,
        "valid_until": None,
        "source_refs": [],
        "metadata": {},
        "version": 1,
        "previous_id": None,
        "superseded_by": None,
        "token_estimate": token_estimate(content),
        "use_count": 0,
        "last_used_at": None,
        "reward_count": 0,
        "reward_sum": 0.0,
        "created_at": now - timedelta(seconds=i),
        "updated_at": now - timedelta(seconds=i),
    }


async def bulk_load(url: str, texts: list[str], start: int) -> None:
    """Rows through the same table (and full-text triggers) the service writes."""
    engine = create_engine(Settings(database_url=url))
    await migrate(engine)
    now = datetime.now(UTC)
    async with create_sessionmaker(engine, write=True)() as session:
        for lo in range(0, len(texts), 5000):
            rows = [row(start + lo + j, t, now) for j, t in enumerate(texts[lo : lo + 5000])]
            await session.execute(MEMORIES.insert(), rows)
        await session.commit()
    await engine.dispose()


def pct(values: list[float], p: float) -> float:
    data = sorted(values)
    return data[min(len(data) - 1, int(p / 100 * len(data)))]


async def index_ready(url: str) -> float:
    """Seconds until the server's in-memory search index is built (it serves meanwhile)."""
    t0 = time.perf_counter()
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        while (await client.get("/ready")).json()["search_index"]["state"] != "ready":
            await asyncio.sleep(0.05)
    return time.perf_counter() - t0


async def recall_latency(url: str, tasks: list[str]) -> list[float]:
    times = []
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        for task in tasks[:20]:  # warm-up
            await client.post("/v1/recall", json={"task": task, "token_budget": 400, "k": 8})
        for task in tasks:
            t0 = time.perf_counter()
            r = await client.post("/v1/recall", json={"task": task, "token_budget": 400, "k": 8})
            times.append((time.perf_counter() - t0) * 1000)
            assert r.status_code == 200, r.text
    return times


async def policy_latency(url: str, tasks: list[str]) -> dict[str, list[float]]:
    """A learned policy trained on the recalls made so far (each rewarded at random),
    forced in as the canary for half the recalls: latency by the policy that decided."""
    rng = random.Random(3)
    async with httpx.AsyncClient(base_url=url, timeout=120) as client:
        params: dict[str, Any] = {"status": "pending", "limit": 200}
        while True:
            page = (await client.get("/v1/rl/transitions", params=params)).json()
            for t in page["items"]:
                body = {"recall_id": t["id"], "value": rng.gauss(0.5, 0.3)}
                await client.post("/v1/rewards", json=body)
            if not page["next_cursor"]:
                break
            params["cursor"] = page["next_cursor"]
        policy = (await client.post("/v1/policies/train", json={})).json()
        while policy["status"] == "training":
            await asyncio.sleep(0.2)
            policy = (await client.get(f"/v1/policies/{policy['id']}")).json()
        body = {"canary_share": 0.5, "force": True, "reason": "latency benchmark"}
        r = await client.post(f"/v1/policies/{policy['id']}/activate", json=body)
        assert r.status_code == 200, r.text
        times: dict[str, list[float]] = {"baseline_v0": [], "learned": []}
        for task in tasks * 2:
            t0 = time.perf_counter()
            r = await client.post("/v1/recall", json={"task": task, "token_budget": 400, "k": 8})
            elapsed = (time.perf_counter() - t0) * 1000
            decided = r.json()["policy"]["id"]
            times["baseline_v0" if decided == "baseline_v0" else "learned"].append(elapsed)
        return times


def inflect(word: str) -> str:
    """Another form of the word: plural/singular or -ing/-ed swaps."""
    for old, new in (("ing", "ed"), ("ed", "ing"), ("ies", "y"), ("es", ""), ("s", "")):
        if word.endswith(old) and len(word) > len(old) + 3:
            return word[: -len(old)] + new
    return word + "s"


def words(text: str) -> set[str]:
    return set(query_terms(text))


async def quality(url: str, texts: list[str], n: int) -> dict[str, float]:
    """Queries: 4 words drawn from one memory. Relevant: every memory holding all 4 words
    (a sentence also appears inside its neighbours' pairs and triples). recall@k =
    |top k ∩ relevant| / min(k, |relevant|). Word overlap ranks all memories by the number
    of query words they hold (ties by id)."""
    rng = random.Random(5)
    index = [(f"m{i:07d}", words(t)) for i, t in enumerate(texts)]
    picks = [i for i in rng.sample(range(len(texts)), n * 3) if len(words(texts[i])) >= 6][:n]
    score = {
        f"{name}@{k}": 0.0 for name in ("engram", "overlap", "engram~", "overlap~") for k in (5, 10)
    }
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        for i in picks:
            qwords = rng.sample(sorted(words(texts[i])), 4)
            relevant = {mid for mid, ws in index if set(qwords) <= ws}
            # The same query with each word inflected differently ("~"), as a person asking
            # in their own words would: stemming should absorb it, word overlap cannot.
            for suffix, query in (("", qwords), ("~", [inflect(w) for w in qwords])):
                body = {"query": " ".join(query), "limit": 10}
                got = [
                    h["memory"]["id"]
                    for h in (await client.post("/v1/memories/search", json=body)).json()["hits"]
                ]
                qs = set(query)
                ranked = [mid for mid, _ in sorted(index, key=lambda item: -len(qs & item[1]))[:10]]
                for k in (5, 10):
                    denom = min(k, len(relevant))
                    score[f"engram{suffix}@{k}"] += len(set(got[:k]) & relevant) / denom
                    score[f"overlap{suffix}@{k}"] += len(set(ranked[:k]) & relevant) / denom
    return {key: value / len(picks) for key, value in score.items()}


async def memory_writes(server: EngramServer, texts: list[str], seconds: float) -> tuple[Any, Any]:
    health = build_request("GET", "/health")
    bodies = [
        build_request("POST", "/v1/memories", orjson.dumps({"type": "fact", "content": t}))
        for t in texts
    ]
    h = await run(server.port, lambda i: health, connections=32, seconds=seconds)
    w = await run(server.port, lambda i: bodies[i % len(bodies)], connections=32, seconds=seconds)
    return h, w


async def export_rate(server: EngramServer, url: str, n: int) -> tuple[float, int, int, int]:
    """Copies of one real completed transition, then the NDJSON export timed."""
    model = await model_transition(server.url)
    await insert_copies(url, model, n, chained=False)
    rate, count, before, peak, _ = await download(server, 100_000)
    return rate, count, before, peak


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default=None, help="10000,100000 (natural: 2000,100000)")
    parser.add_argument("--shape", choices=["prose", "natural"], default="prose")
    parser.add_argument("--data", default=None, help="natural: the LongMemEval oracle folder")
    parser.add_argument("--lexical", action="store_true", help="natural: no embedder")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--labelled", type=int, default=200)
    parser.add_argument("--transitions", type=int, default=30_000)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument(
        "--policy", action="store_true", help="also recall with a learned policy (same run)"
    )
    args = parser.parse_args()
    if args.shape == "natural":
        from bench import recall_natural  # it builds on this module's rows

        sizes = [int(s) for s in (args.sizes or "2000,100000").split(",")]
        return await recall_natural.main(sizes, data=args.data, hybrid=not args.lexical)
    sizes = [int(s) for s in (args.sizes or "10000,100000").split(",")]
    t0 = time.perf_counter()
    texts = memories_text(max(sizes))
    print(
        f"corpus: {len(texts)} memories of docstring prose, {statistics.mean(len(t) for t in texts):.0f} characters on average ({time.perf_counter() - t0:.0f} s to build)"
    )
    rng = random.Random(1)
    tasks = [" ".join(t.split()[:10]) for t in rng.sample(texts, args.queries)]
    results: dict[int, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="engram-bench-") as tmp:
        url = f"sqlite+aiosqlite:///{tmp}/engram.db"
        loaded = 0
        for size in sizes:
            await bulk_load(url, texts[loaded:size], loaded)
            loaded = size
            server = EngramServer(Path(tmp), database_url=url, ENGRAM_LOG_REQUESTS="false").start()
            try:
                print(
                    f"  search index of {size} memories built in {await index_ready(server.url):.1f} s"
                )
                results[size] = await recall_latency(server.url, tasks)
                lat = results[size]
                print(
                    f"recall, {size:>7} memories: p50 {pct(lat, 50):6.1f} ms  p95 {pct(lat, 95):6.1f} ms  p99 {pct(lat, 99):6.1f} ms  ({len(lat)} recalls, one client)"
                )
                if size == sizes[-1] and args.policy:
                    by = await policy_latency(server.url, tasks)
                    base, learned = pct(by["baseline_v0"], 50), pct(by["learned"], 50)
                    print(
                        f"recall with a learned policy as the canary for half the recalls, {size} memories: "
                        f"p50 {learned:.1f} ms ({len(by['learned'])} recalls) against baseline_v0's {base:.1f} ms "
                        f"({len(by['baseline_v0'])}): ratio {learned / base:.2f} (target <= 1.2)"
                    )  # fmt: skip
                if size == sizes[-1]:
                    q = await quality(server.url, texts[:size], args.labelled)
                    print(
                        f"retrieval quality ({args.labelled} labelled queries, 4 words of one memory): "
                        f"engram recall@5 {q['engram@5']:.2f} / @10 {q['engram@10']:.2f}; "
                        f"word overlap recall@5 {q['overlap@5']:.2f} / @10 {q['overlap@10']:.2f}"
                    )
                    print(f"  same queries, words inflected: engram recall@5 {q['engram~@5']:.2f} / @10 {q['engram~@10']:.2f}; "
                          f"word overlap recall@5 {q['overlap~@5']:.2f} / @10 {q['overlap~@10']:.2f}")  # fmt: skip
                    rate, count, before, peak = await export_rate(server, url, args.transitions)
                    print(
                        f"dataset export: {rate:,.0f} transitions/s streamed ({count} rows); server RSS {before / 2**20:.0f} MiB before, {peak / 2**20:.0f} MiB peak"
                    )
                    h, w = await memory_writes(server, texts[:5000], args.seconds)
                    print(
                        f"memory writes: {w.rate:,.0f}/s (p99 {w.pct(99):.1f} ms, ok {w.ok}) against GET /health {h.rate:,.0f}/s: ratio {w.rate / h.rate:.2f} (target >= 0.5)"
                    )
            finally:
                server.stop()
    if len(sizes) > 1:
        ratio = statistics.median(results[sizes[-1]]) / statistics.median(results[sizes[0]])
        print(f"recall p50 at {sizes[-1]} / p50 at {sizes[0]}: {ratio:.2f} (target <= 2)")


if __name__ == "__main__":
    asyncio.run(main())
