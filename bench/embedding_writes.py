"""Memory writes and recall with semantic search on while its backlog drains, against
lexical search only, in one run.

Two real servers (uvicorn, one worker, SQLite + LevelDB) over the same --memories already
loaded: one lexical (ENGRAM_EMBEDDINGS__PROVIDER=none), one embedding with the local
model. The loaded memories wait for their vectors, so the second server's background
embedding runs through every round: writes and recalls are measured while the backlog
drains. Rounds alternate between the servers (the machine is noisy); each prints POST
/v1/memories per second (32 clients), then the p50 of --recalls POST /v1/recall (one
client, k 10; the embedding server's are hybrid: they embed the task), and the ratios
embedding/lexical. Then the backlog is left to drain and its rate printed (memories per
second).

    python -m bench.embedding_writes [--memories 10000] [--rounds 3] [--seconds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.loadgen import run
from bench.memory_writes import wait_for_index
from bench.recall import bulk_load, memories_text
from tests.server import EngramServer
from tests.system.raw_http import build_request


def embeddings(server: EngramServer) -> dict[str, Any]:
    body = httpx.get(f"{server.url}/ready", timeout=30).json()
    return dict(body["search"].get("embeddings") or {})


async def writes(server: EngramServer, bodies: list[bytes], seconds: float) -> float:
    result = await run(
        server.port, lambda i: bodies[i % len(bodies)], connections=32, seconds=seconds
    )
    bad = {s: n for s, n in result.statuses.items() if s != 201}
    assert not bad, f"writes not acknowledged: {bad}"
    return result.rate


async def recalls(server: EngramServer, tasks: list[str]) -> tuple[float, float]:
    """p50 milliseconds of one client's recalls, and the share that searched hybrid."""
    took, hybrid = [], 0
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
        for task in tasks:
            t0 = time.perf_counter()
            r = await client.post("/v1/recall", json={"task": task, "k": 10, "token_budget": 2000})
            took.append((time.perf_counter() - t0) * 1000)
            assert r.status_code == 200, r.text
            hybrid += r.json()["retrieval"]["mode"] == "hybrid"
    return statistics.median(took), hybrid / len(tasks)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--recalls", type=int, default=100)
    args = parser.parse_args()
    texts = memories_text(args.memories + 20_000)
    payloads = [orjson.dumps({"type": "fact", "content": t}) for t in texts[args.memories :]]
    bodies = [build_request("POST", "/v1/memories", b) for b in payloads]
    with tempfile.TemporaryDirectory(prefix="engram-bench-") as tmp:
        servers = {}
        for kind, provider in (("lexical", "none"), ("embedding", "local")):
            root = Path(tmp) / kind
            root.mkdir()
            url = f"sqlite+aiosqlite:///{root}/engram.db"
            await bulk_load(url, texts[: args.memories], 0)
            servers[kind] = EngramServer(
                root,
                database_url=url,
                ENGRAM_LOG_REQUESTS="false",
                ENGRAM_EMBEDDINGS__PROVIDER=provider,
            ).start()
        try:
            for server in servers.values():
                wait_for_index(server)
            print(
                f"{args.memories:,} memories loaded in each; {args.rounds} rounds of "
                f"{args.seconds:g} s; the embedding server's backlog: "
                f"{embeddings(servers['embedding'])['pending']:,} waiting"
            )
            ratios, recall_ratios = [], []
            for i in range(args.rounds):
                order = ["lexical", "embedding"] if i % 2 == 0 else ["embedding", "lexical"]
                rates = {k: await writes(servers[k], bodies, args.seconds) for k in order}
                ratios.append(rates["embedding"] / rates["lexical"])
                tasks = [
                    " ".join(t.split()[:12]) for t in texts[i * args.recalls :][: args.recalls]
                ]
                p50 = {k: await recalls(servers[k], tasks) for k in order}
                recall_ratios.append(p50["embedding"][0] / p50["lexical"][0])
                state = embeddings(servers["embedding"])
                print(
                    f"  writes: lexical {rates['lexical']:6,.0f}/s   embedding "
                    f"{rates['embedding']:6,.0f}/s   ratio {ratios[-1]:.2f} | recall p50: "
                    f"lexical {p50['lexical'][0]:5.1f} ms   embedding {p50['embedding'][0]:5.1f} "
                    f"ms ({p50['embedding'][1]:.0%} hybrid)   ratio {recall_ratios[-1]:.2f} | "
                    f"backlog {state['pending']:,} waiting"
                )
            server = servers["embedding"]
            started, state = time.monotonic(), embeddings(server)
            waiting = state["pending"]
            while state["pending"] > 0:
                await asyncio.sleep(1.0)
                state = embeddings(server)
            took = time.monotonic() - started
        finally:
            for server in servers.values():
                server.stop()
    print(
        f"memory writes with embeddings on: ratio to lexical only median "
        f"{statistics.median(ratios):.2f} (min {min(ratios):.2f}, max {max(ratios):.2f}; "
        f"target >= 0.9); recall p50 median {statistics.median(recall_ratios):.2f} (min "
        f"{min(recall_ratios):.2f}, max {max(recall_ratios):.2f}; target <= 1.2)"
    )
    print(
        f"backlog: {waiting:,} memories drained in {took:.1f} s after the writes "
        f"({waiting / took if took > 0 else float('nan'):,.0f}/s); the embedder's own rate "
        f"over its whole run: {state.get('per_second')}/s"
    )


if __name__ == "__main__":
    asyncio.run(main())
