"""Recall latency with and without the server's WAL checkpoint thread, alternated on
copies of one prebuilt database (the machine's speed moves from hour to hour, so the
two are compared pair by pair, in both orders).

    python -m bench.recall_checkpoint [--memories 100000] [--pairs 3] [--queries 300]

Each run starts the real server (as bench.recall does) on a fresh copy, waits for its
search index, and times --queries recalls of 10 words from one client; without the
thread is ENGRAM_SQLITE_CHECKPOINT_INTERVAL_MS=0 (commits checkpoint every 1,000 pages).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.recall import bulk_load, index_ready, memories_text, pct, recall_latency
from tests.server import EngramServer

WITH = ("with", {})
WITHOUT = ("without", {"ENGRAM_SQLITE_CHECKPOINT_INTERVAL_MS": "0"})


async def one_run(template: Path, tasks: list[str], env: dict[str, str]) -> list[float]:
    with tempfile.TemporaryDirectory(prefix="engram-bench-") as tmp:
        shutil.copyfile(template, Path(tmp) / "engram.db")
        url = f"sqlite+aiosqlite:///{tmp}/engram.db"
        server = EngramServer(Path(tmp), database_url=url, ENGRAM_LOG_REQUESTS="false", **env)
        server.start()
        try:
            await index_ready(server.url)
            return await recall_latency(server.url, tasks)
        finally:
            server.stop()


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    texts = memories_text(args.memories)
    rng = random.Random(3)
    long_enough = [t.split() for t in texts if len(t.split()) >= 10]
    tasks = [" ".join(rng.sample(rng.choice(long_enough), 10)) for _ in range(args.queries)]
    with tempfile.TemporaryDirectory(prefix="engram-bench-") as tmp:
        template = Path(tmp) / "engram.db"
        await bulk_load(f"sqlite+aiosqlite:///{template}", texts, 0)
        print(f"{args.memories:,} memories; {args.queries} recalls a run, one client")
        for pair in range(args.pairs):
            order = (WITH, WITHOUT) if pair % 2 == 0 else (WITHOUT, WITH)
            figures = {}
            for label, env in order:
                times = await one_run(template, tasks, env)
                figures[label] = (pct(times, 50), pct(times, 95))
            print(
                f"  pair {pair + 1} ({order[0][0]} first): p50 / p95 with the thread "
                f"{figures['with'][0]:5.1f} / {figures['with'][1]:5.1f} ms, without "
                f"{figures['without'][0]:5.1f} / {figures['without'][1]:5.1f} ms"
            )


if __name__ == "__main__":
    asyncio.run(main())
