"""Training a learned recall policy on many logged recalls, against the real server.

Real recalls over natural text (exploring, epsilon 0.2), rewarded at random, then copied
with new ids up to N completed transitions; then, in one run:
- the dataset download of the same N transitions as NDJSON (the baseline: reading them);
- POST /v1/policies/train until the policy is a candidate (fit on all of them, the latest
  10,000 judged off-policy by cross-fitting), as its job runs in the server's own worker.

    python -m bench.policy_train [--transitions 100000] [--distinct 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import select

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.core.config import Settings
from app.core.ids import uuid7
from app.db.backends import create_engine
from app.db.engine import create_sessionmaker
from app.models import Transition
from app.repositories.transitions import TRANSITIONS
from bench.recall import bulk_load, memories_text
from tests.server import EngramServer

COLUMNS = [c.name for c in Transition.__table__.columns]


async def logged(url: str, tasks: list[str], seed: int) -> None:
    rng = random.Random(seed)
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        for task in tasks:
            body = {"task": task, "token_budget": 400, "k": 8}
            answer = (await client.post("/v1/recall", json=body)).json()
            value = rng.gauss(0.2 * len(answer["selected"]) / 8, 0.3)
            await client.post(
                "/v1/rewards", json={"recall_id": answer["recall_id"], "value": value}
            )


async def copy_up_to(url: str, n: int) -> int:
    """Copies of the logged transitions (new ids, later times) until there are n."""
    engine = create_engine(Settings(database_url=url))
    async with create_sessionmaker(engine, write=True)() as session:
        found = (
            (await session.execute(select(Transition).where(Transition.status == "completed")))
            .scalars()
            .all()
        )
        models = [{c: getattr(t, c) for c in COLUMNS} for t in found]
        start = datetime.now(UTC) + timedelta(seconds=1)
        rows: list[dict[str, Any]] = []
        for i in range(n - len(models)):
            row = dict(models[i % len(models)])
            row |= {"id": uuid7(), "task_id": None, "next_id": None}
            row["created_at"] = start + timedelta(microseconds=i)
            rows.append(row)
            if len(rows) == 2000:
                await session.execute(TRANSITIONS.insert(), rows)
                rows = []
        if rows:
            await session.execute(TRANSITIONS.insert(), rows)
        await session.commit()
    await engine.dispose()
    return len(models)


async def download(url: str, n: int) -> tuple[float, int]:
    """Seconds to stream the n transitions as NDJSON, and the lines received."""
    lines = 0
    async with httpx.AsyncClient(base_url=url, timeout=600) as client:
        t0 = time.perf_counter()
        async with client.stream("GET", "/v1/rl/dataset", params={"limit": n}) as r:
            async for data in r.aiter_bytes():
                lines += data.count(b"\n")
        return time.perf_counter() - t0, lines


async def train(url: str) -> tuple[float, dict[str, Any]]:
    async with httpx.AsyncClient(base_url=url, timeout=600) as client:
        t0 = time.perf_counter()
        policy = (await client.post("/v1/policies/train", json={})).json()
        while policy["status"] == "training":
            await asyncio.sleep(0.2)
            policy = (await client.get(f"/v1/policies/{policy['id']}")).json()
        return time.perf_counter() - t0, policy


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--transitions", type=int, default=100_000)
    parser.add_argument("--distinct", type=int, default=1000)
    parser.add_argument("--memories", type=int, default=5000)
    args = parser.parse_args()
    texts = memories_text(args.memories)
    rng = random.Random(1)
    tasks = [" ".join(t.split()[:10]) for t in rng.choices(texts, k=args.distinct)]
    with tempfile.TemporaryDirectory(prefix="engram-bench-") as tmp:
        url = f"sqlite+aiosqlite:///{tmp}/engram.db"
        await bulk_load(url, texts, 0)
        env = {"ENGRAM_LOG_REQUESTS": "false", "ENGRAM_RECALL__EPSILON": "0.2"}
        server = EngramServer(Path(tmp), database_url=url, **env).start()
        try:
            await logged(server.url, tasks, seed=2)
        finally:
            server.stop()
        distinct = await copy_up_to(url, args.transitions)
        server = EngramServer(Path(tmp), database_url=url, **env).start()
        try:
            export_s, lines = await download(server.url, args.transitions)
            seconds, policy = await train(server.url)
            rss = server.rss_bytes()
        finally:
            server.stop()
    training = policy.get("training") or {}
    evaluation = policy.get("evaluation") or {}
    print(
        f"{args.transitions:,} completed transitions ({distinct} distinct recalls over {args.memories:,} memories, copied)"
    )
    print(f"dataset download (NDJSON, the baseline): {export_s:.1f} s for {lines:,} rows")
    print(
        f"training: {seconds:.1f} s end to end (status {policy['status']}; fit {training.get('fit_seconds')} s "
        f"on {training.get('n_train')}, evaluation {training.get('evaluate_seconds')} s on "
        f"{training.get('n_holdout')}; verdict {evaluation.get('verdict')}); "
        f"ratio to the download {seconds / export_s:.2f}; target < 60 s; server RSS after {rss / 2**20:.0f} MiB"
    )  # fmt: skip


if __name__ == "__main__":
    asyncio.run(main())
