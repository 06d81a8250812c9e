"""Episode ingest against /health on the same real server (uvicorn, one worker).

Measures, in one run: GET /health and POST /v1/episodes (10 steps, about 2 KB)
from N concurrent keep-alive clients, then kills the server with SIGKILL right
after the last acknowledgement, restarts it and checks that every acknowledged
episode is there with all its steps.

    python -m bench.ingest [--seconds 10] [--connections 32] [--database-url URL]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

import httpx
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.loadgen import Result, run
from tests.server import EngramServer
from tests.system.raw_http import build_request


def episode(i: int) -> bytes:
    body = {
        "task_id": f"bench-{i}",
        "agent_id": f"agent-{i % 16}",
        "task_type": ["code_search", "fix_bug", "write_test"][i % 3],
        "context": {"domain": "python", "tags": ["bench"]},
        "steps": [
            {
                "tool": "shell",
                "action": f"step_{j}",
                "input": {"cmd": f"grep -rn 'symbol_{i}_{j}' src/module_{j}"},
                "output": {"matches": [f"src/module_{j}/file_{k}.py:{k * 7}" for k in range(2)]},
                "status": "ok",
                "latency_ms": 12.0 + j,
                "tokens": 40 + j,
            }
            for j in range(10)
        ],
        "outcome": "success",
        "verdict": "found the definition and patched the call site",
    }
    return orjson.dumps(body)


def line(name: str, r: Result) -> str:
    return (
        f"{name:<22} {r.rate:9.0f} req/s   p50 {r.pct(50):6.1f} ms   p95 {r.pct(95):6.1f} ms"
        f"   p99 {r.pct(99):6.1f} ms   ok {r.ok}   other {sum(r.statuses.values()) - r.ok}"
        f"   errors {r.errors}"
    )


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--database-url", default=None)
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="ENGRAM_X=VALUE",
        help="a setting for the server (repeatable); the default configuration otherwise",
    )
    args = parser.parse_args()
    server_env = dict(item.split("=", 1) for item in args.env)

    sample = episode(0)
    with tempfile.TemporaryDirectory(prefix="engram-bench-") as tmp:
        server = EngramServer(Path(tmp), database_url=args.database_url, **server_env).start()
        try:
            health = build_request("GET", "/health")
            bodies = [build_request("POST", "/v1/episodes", episode(i)) for i in range(200_000)]
            # Warm-up of both paths.
            await run(server.port, lambda i: health, connections=args.connections, seconds=1)
            await run(
                server.port, lambda i: bodies[-1 - i], connections=args.connections, total=2000
            )
            h = await run(
                server.port, lambda i: health, connections=args.connections, seconds=args.seconds
            )
            rss_before = server.rss_bytes()
            e = await run(
                server.port,
                lambda i: bodies[i],
                connections=args.connections,
                seconds=args.seconds,
                keep_bodies=True,
            )
            rss_after = server.rss_bytes()
        finally:
            server.kill()  # SIGKILL right after the last acknowledgement

        acked = [orjson.loads(b)["id"] for b in e.bodies if b.startswith(b'{"id"')]
        server.start()
        try:
            gets = [build_request("GET", f"/v1/episodes/{eid}") for eid in acked]
            check = await run(
                server.port, lambda i: gets[i], connections=16, total=len(gets), keep_bodies=True
            )
            read = [orjson.loads(b) for b in check.bodies]
            complete = sum(1 for r in read if len(r.get("steps", [])) == 10)
            # Anything not read back whole is asked for again, one at a time, so that a
            # failed read is not taken for a lost episode (or the other way round).
            missing = set(acked) - {r.get("id") for r in read if len(r.get("steps", [])) == 10}
            again = {}
            async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
                for eid in sorted(missing):
                    r = await client.get(f"/v1/episodes/{eid}")
                    steps = len(r.json().get("steps", [])) if r.status_code == 200 else None
                    again[eid] = (r.status_code, steps)
            complete += sum(1 for status, steps in again.values() if steps == 10)
        finally:
            server.stop()

    ratio = e.rate / h.rate if h.rate else 0.0
    print(
        f"episode body: {len(sample)} bytes, 10 steps; {args.connections} connections; {args.seconds:.0f} s per phase"
    )
    print(
        f"database: {args.database_url or 'SQLite (default, WAL, synchronous=FULL)'}; LevelDB synced writes"
    )
    print(line("GET /health", h))
    print(line("POST /v1/episodes", e))
    print(f"ingest / health ratio: {ratio:.2f}  (target >= 0.5)")
    print(f"POST p99: {e.pct(99):.1f} ms  (target < 50 ms)")
    print(f"server RSS during ingest: {rss_before / 2**20:.0f} MiB -> {rss_after / 2**20:.0f} MiB")
    print(
        f"durability after SIGKILL: {complete}/{len(acked)} acknowledged episodes present with all steps"
        f" (read back {check.statuses}, {check.errors} connection errors;"
        f" asked again: {len(again)}, {sorted(set(again.values()))})"
    )
    out = Path(__file__).resolve().parent / "out"
    out.mkdir(exist_ok=True)
    (out / "ingest.json").write_text(
        json.dumps(
            {
                "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "health_rps": h.rate,
                "ingest_rps": e.rate,
                "ratio": ratio,
                "ingest_p50_ms": e.pct(50),
                "ingest_p95_ms": e.pct(95),
                "ingest_p99_ms": e.pct(99),
                "acknowledged": len(acked),
                "durable": complete,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    asyncio.run(main())
