"""Memory writes against /health on the real server, the figure bench.recall ends with,
on its own and repeated (a 2-core machine shared with others is noisy).

The server (uvicorn, one worker, SQLite + LevelDB, request logs off as in bench.recall)
starts over a corpus of --memories already loaded; each round measures GET /health,
then POST /v1/memories, 32 clients each, and prints the rates, their ratio, the writes
per group commit, the pages SQLite's write-ahead log held at the server's last checkpoint,
and the server's CPU time per request (main thread + other threads: the SQLite
connections'), which the other processes on the machine disturb less than the rates.

    python -m bench.memory_writes [--memories 10000] [--rounds 3] [--seconds 5]
    python -m bench.memory_writes --profile /tmp/writes.svg   # py-spy over the writes

--profile records the server with py-spy during the write phase of the first round
(the figures of that round are slowed by the sampling and are not comparable).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.loadgen import Result, run
from bench.recall import bulk_load, memories_text
from tests.server import EngramServer
from tests.system.raw_http import build_request


def cpu_seconds(pid: int) -> tuple[float, float]:
    """CPU time of the process's main thread and of its other threads, in seconds."""
    tick = os.sysconf("SC_CLK_TCK")
    main = other = 0.0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            fields = (task / "stat").read_text().rpartition(")")[2].split()
        except FileNotFoundError:
            continue  # a thread that ended meanwhile
        used = (int(fields[11]) + int(fields[12])) / tick  # utime + stime
        if task.name == str(pid):
            main += used
        else:
            other += used
    return main, other


def counters(server: EngramServer) -> tuple[float, float, float]:
    """Commands and group commits the writer has done so far, and the pages SQLite's
    write-ahead log held at the checkpoint thread's last checkpoint (from /metrics)."""
    found = dict.fromkeys(
        (
            "engram_ingest_batch_size_sum",
            "engram_ingest_batch_size_count",
            "engram_sqlite_wal_pages",
        ),
        0.0,
    )
    for line in httpx.get(f"{server.url}/metrics", timeout=10).text.splitlines():
        name, _, value = line.partition(" ")
        if name in found:
            found[name] = float(value)
    total, count, pages = found.values()
    return total, count, pages


async def measured(
    server: EngramServer, make: Callable[[int], bytes], seconds: float
) -> tuple[Result, str]:
    """The load's result, and the server's CPU per request (main thread + the others)."""
    assert server.proc is not None
    m0, o0 = cpu_seconds(server.proc.pid)
    result = await run(server.port, make, connections=32, seconds=seconds)
    m1, o1 = cpu_seconds(server.proc.pid)
    n = max(1, len(result.latencies))
    return result, f"CPU {(m1 - m0) / n * 1e6:4.0f}+{(o1 - o0) / n * 1e6:3.0f} us"


async def one_round(
    server: EngramServer, bodies: list[bytes], seconds: float
) -> tuple[float, float]:
    health = build_request("GET", "/health")
    h, h_cpu = await measured(server, lambda i: health, seconds)
    done0, batches0, _ = counters(server)
    w, w_cpu = await measured(server, lambda i: bodies[i % len(bodies)], seconds)
    done1, batches1, wal_pages = counters(server)
    per_batch = (done1 - done0) / max(1.0, batches1 - batches0)
    bad = {s: n for s, n in w.statuses.items() if s != 201}
    print(
        f"  /health {h.rate:6,.0f}/s ({h_cpu})   writes {w.rate:6,.0f}/s ({w_cpu}, "
        f"p50 {w.pct(50):4.1f} ms, p99 {w.pct(99):5.1f} ms, {per_batch:4.1f} per commit, "
        f"WAL {wal_pages:,.0f} pages at the last checkpoint"
        f"{f', not 201: {bad}' if bad else ''})   ratio {w.rate / h.rate:.2f}"
    )
    return h.rate, w.rate


async def profiled(server: EngramServer, bodies: list[bytes], seconds: float, out: str) -> None:
    assert server.proc is not None
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    fmt = "speedscope" if out.endswith(".json") else "raw" if out.endswith(".txt") else "flamegraph"
    cmd = [spy, "record", "-p", str(server.proc.pid), "-d", str(int(seconds)), "-r", "200"]
    proc = subprocess.Popen([*cmd, "-f", fmt, "-o", out], stdout=subprocess.DEVNULL)
    await asyncio.sleep(0.5)
    await run(server.port, lambda i: bodies[i % len(bodies)], connections=32, seconds=seconds)
    await asyncio.to_thread(proc.wait)
    print(f"profile of the write phase: {out}")


def wait_for_index(server: EngramServer, timeout: float = 120.0) -> None:
    """Until the search index is built: its build at start takes a core for a while and
    would slow the first round (or the profile) down."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        index = httpx.get(f"{server.url}/ready", timeout=10).json().get("search_index")
        if index is None or index["state"] == "ready":
            return
        time.sleep(0.2)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--profile", help="py-spy output (.svg flame graph, .txt collapsed)")
    parser.add_argument(
        "--env", action="append", default=[], help="NAME=VALUE for the server, repeatable"
    )
    args = parser.parse_args()
    texts = memories_text(args.memories + 5000)
    bodies = [orjson.dumps({"type": "fact", "content": t}) for t in texts[args.memories :]]
    bodies = [build_request("POST", "/v1/memories", b) for b in bodies]
    with tempfile.TemporaryDirectory(prefix="engram-bench-") as tmp:
        url = f"sqlite+aiosqlite:///{tmp}/engram.db"
        await bulk_load(url, texts[: args.memories], 0)
        env = dict(item.split("=", 1) for item in args.env)
        server = EngramServer(
            Path(tmp), database_url=url, ENGRAM_LOG_REQUESTS="false", **env
        ).start()
        try:
            wait_for_index(server)
            if args.profile:
                await profiled(server, bodies, args.seconds, args.profile)
            print(f"{args.memories:,} memories loaded; {args.rounds} rounds of {args.seconds:g} s")
            rates = [await one_round(server, bodies, args.seconds) for _ in range(args.rounds)]
        finally:
            server.stop()
    ratios = [w / h for h, w in rates]
    print(
        f"memory writes: median {statistics.median(w for _, w in rates):,.0f}/s against "
        f"GET /health {statistics.median(h for h, _ in rates):,.0f}/s: "
        f"ratio median {statistics.median(ratios):.2f} (min {min(ratios):.2f}, "
        f"max {max(ratios):.2f}; target >= 0.5)"
    )


if __name__ == "__main__":
    asyncio.run(main())
