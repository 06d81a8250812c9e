"""Episode payloads in LevelDB or in SQL (ENGRAM_BLOB_STORE), measured side by side.

For each store, on one database kind, a real server (uvicorn, one worker, the learning
worker off) starts on empty stores and is measured in this order:

    write    POST /v1/episodes (10 steps, about 2 KB) from 32 clients: episodes/s
    append   POST /v1/episodes/{id}/steps (one step) to 32 open episodes, 32 clients
    read     GET /v1/episodes/{id} of random episodes from 4 clients: p50, p95
    backup   GET /v1/admin/backup, the whole archive streamed
    size     on disk per 1,000 episodes, after the server stopped: SQLite, the database
             file and the LevelDB directory; PostgreSQL, the episodes and
             episode_payloads tables (with their TOAST and indexes) and the LevelDB
             directory; each less the same of the empty stores

The SQL store's figures are printed as ratios of LevelDB's, measured in the same run;
with --rounds 2 the stores alternate and each figure is the better of its rounds.

    python -m bench.payloads [--episodes 5000] [--database-url URL] [--rounds 1]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import time
from pathlib import Path

import httpx
import orjson
from sqlalchemy import text

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.core.config import Settings
from app.db.backends import create_engine
from bench.ingest import episode
from bench.loadgen import run
from tests.server import EngramServer, reset_database
from tests.system.raw_http import build_request

STORES = ("leveldb", "sql")
OPEN = 32


def _dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


async def _size(data_dir: Path, database_url: str | None) -> int:
    """The bytes that episodes take: see the module's docstring."""
    blobs = _dir_bytes(data_dir / "blobs")
    if database_url is None:
        return blobs + sum(p.stat().st_size for p in data_dir.glob("engram.db*"))
    engine = create_engine(Settings(database_url=database_url))
    try:
        async with engine.connect() as conn:
            query = "SELECT pg_total_relation_size('episodes') + pg_total_relation_size('episode_payloads')"
            return blobs + int((await conn.execute(text(query))).scalar_one())
    finally:
        await engine.dispose()


async def measure(
    store: str, root: Path, *, episodes: int, database_url: str | None
) -> dict[str, float]:
    data_dir = root / store
    if database_url is not None:
        await reset_database(database_url)
    env = {
        "ENGRAM_BLOB_STORE": store,
        "ENGRAM_LOG_REQUESTS": "false",
        "ENGRAM_LEARNING__WORKER": "false",
    }
    server = EngramServer(data_dir, database_url=database_url, **env).start()
    server.stop()
    empty = await _size(data_dir, database_url)
    server.start()
    figures: dict[str, float] = {}
    try:
        bodies = [build_request("POST", "/v1/episodes", episode(i)) for i in range(episodes)]
        fill = await run(
            server.port, lambda i: bodies[i], connections=32, total=episodes, keep_bodies=True
        )
        assert fill.ok == episodes, fill.statuses
        ids = [orjson.loads(body)["id"] for body in fill.bodies]
        figures["write episodes/s"] = fill.rate

        opened = [
            build_request(
                "POST", "/v1/episodes", orjson.dumps({"task_id": f"o{i}", "id": f"open-{i}"})
            )
            for i in range(OPEN)
        ]
        await run(server.port, lambda i: opened[i], connections=8, total=OPEN)
        step = orjson.dumps(
            {"tool": "shell", "action": "poll", "input": {"n": 1}, "output": {"lines": ["ok"] * 8}}
        )
        appends = [
            build_request("POST", f"/v1/episodes/open-{i % OPEN}/steps", step)
            for i in range(OPEN * 60)
        ]
        append = await run(server.port, lambda i: appends[i], connections=32, total=len(appends))
        assert append.ok == len(appends), append.statuses
        figures["append steps/s"] = append.rate

        rng = random.Random(7)
        gets = [build_request("GET", f"/v1/episodes/{rng.choice(ids)}") for _ in range(3000)]
        read = await run(server.port, lambda i: gets[i], connections=4, total=len(gets))
        assert read.ok == len(gets), read.statuses
        figures["read p50 ms"] = read.pct(50)
        figures["read p95 ms"] = read.pct(95)

        started = time.perf_counter()
        size = 0
        with httpx.stream("GET", f"{server.url}/v1/admin/backup", timeout=600) as r:
            r.raise_for_status()
            for block in r.iter_bytes(1 << 16):
                size += len(block)
        figures["backup s"] = time.perf_counter() - started
    finally:
        server.stop()
    figures["size KB / 1k episodes"] = (await _size(data_dir, database_url) - empty) / episodes
    return figures


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", type=int, default=5000)
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    best: dict[str, dict[str, float]] = {store: {} for store in STORES}
    with tempfile.TemporaryDirectory(prefix="engram-bench-") as tmp:
        for n in range(args.rounds):
            for store in STORES if n % 2 == 0 else reversed(STORES):
                root = Path(tmp) / f"round-{n}"
                figures = await measure(
                    store, root, episodes=args.episodes, database_url=args.database_url
                )
                for name, value in figures.items():
                    lower = not name.endswith("/s")
                    old = best[store].get(name)
                    if old is None or (value < old if lower else value > old):
                        best[store][name] = value
    print(f"database: {args.database_url or 'SQLite (default)'}; {args.episodes:,} episodes")
    print(f"{'':<24}{'leveldb':>12}{'sql':>12}{'sql/leveldb':>14}")
    for name, base in best["leveldb"].items():
        value = best["sql"][name]
        print(f"{name:<24}{base:>12,.2f}{value:>12,.2f}{value / base:>14.2f}")


if __name__ == "__main__":
    asyncio.run(main())
