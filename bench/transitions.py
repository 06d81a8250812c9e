"""Copies of one real completed transition, and a timed NDJSON download of them: the
export measurements of bench.export and bench.recall."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from app.core.config import Settings
from app.core.ids import uuid7
from app.db.backends import create_engine
from app.db.engine import create_sessionmaker
from app.learning.features import dataset_parts
from app.repositories.transitions import TRANSITIONS
from tests.server import EngramServer


async def model_transition(url: str) -> dict[str, Any]:
    """One recall over the corpus, rewarded: the transition every copy repeats, with the
    corpus's short memory ids (8 characters) replaced by ids of the length the service
    gives (36), so that lines have their real size."""
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        body = {"task": "database connection pool", "token_budget": 400}
        rid = (await client.post("/v1/recall", json=body)).json()["recall_id"]
        await client.post("/v1/rewards", json={"recall_id": rid, "value": 1})
        page = await client.get("/v1/rl/transitions", params={"status": "completed"})
        model: dict[str, Any] = page.json()["items"][0]
    ids = {c["memory_id"]: uuid7() for c in model["state"]["candidates"]}
    for cand in model["state"]["candidates"]:
        cand["memory_id"] = ids[cand["memory_id"]]
    action = model["action"]
    action["selected"] = [ids[m] for m in action["selected"]]
    for key in ("modes", "suppressed", "inclusion"):
        action[key] = {ids[m]: v for m, v in action[key].items()}
    return model


async def insert_copies(url: str, model: dict[str, Any], n: int, *, chained: bool) -> None:
    engine = create_engine(Settings(database_url=url))
    now = datetime.now(UTC)
    parts = dataset_parts(model["state"], model["action"])
    ids = [uuid7() for _ in range(n)]
    async with create_sessionmaker(engine, write=True)() as session:
        for lo in range(0, n, 2000):
            rows = [
                {
                    "namespace": "default",
                    "id": ids[i],
                    "task_id": f"t{i // 4}",
                    "agent_id": None,
                    "task_type": "bench",
                    "policy_id": "baseline_v0",
                    "policy_version": 1,
                    "state": model["state"],
                    "action": model["action"],
                    **parts,
                    "propensity": model["propensity"],
                    "status": "completed",
                    "reward": 1.0,
                    "reward_id": None,
                    "reward_source": None,
                    "next_id": ids[i + 1] if chained and i % 4 != 3 and i + 1 < n else None,
                    "created_at": now + timedelta(microseconds=i),
                    "completed_at": now,
                }  # fmt: skip
                for i in range(lo, min(n, lo + 2000))
            ]
            await session.execute(TRANSITIONS.insert(), rows)
        await session.commit()
    await engine.dispose()


async def download(server: EngramServer, n: int) -> tuple[float, int, int, int, int]:
    """Transitions/s, lines, RSS before, peak and after (bytes)."""
    before = peak = server.rss_bytes()
    count = seen = 0
    t0 = time.perf_counter()
    async with httpx.AsyncClient(base_url=server.url, timeout=300) as client:
        params = {"limit": n, "task_type": "bench"}
        async with client.stream("GET", "/v1/rl/dataset", params=params) as r:
            async for data in r.aiter_bytes():
                count += data.count(b"\n")
                if count // 2000 > seen:
                    seen = count // 2000
                    peak = max(peak, server.rss_bytes())
    elapsed = time.perf_counter() - t0
    return count / elapsed, count, before, peak, server.rss_bytes()
