"""What request metrics cost: GET /health with ENGRAM_METRICS_ENABLED=false and =true.

The machine is shared, so besides requests per second (wall clock, noisy) each mode's
CPU time per request is measured, which other processes' load barely moves: the real
server's (from /proc, over all requests of a round) and in-process (the app called
directly, no sockets, thread CPU time). Rounds alternate the modes and their order;
medians are compared. Last, one scrape's size and the server's CPU time per scrape.

    python -m bench.metrics_overhead [--rounds 6] [--seconds 5] [--connections 16]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.core.config import Settings
from app.main import create_app
from bench.loadgen import run
from tests.server import EngramServer
from tests.system.raw_http import build_request

HEALTH = build_request("GET", "/health")
TICK_S = 1 / os.sysconf("SC_CLK_TCK")
MODES = ("false", "true")
SCOPE = {
    "type": "http",
    "asgi": {"version": "3.0"},
    "http_version": "1.1",
    "method": "GET",
    "scheme": "http",
    "path": "/health",
    "raw_path": b"/health",
    "query_string": b"",
    "root_path": "",
    "headers": [(b"host", b"127.0.0.1")],
    "client": ("127.0.0.1", 40000),
    "server": ("127.0.0.1", 8080),
}


def cpu_s(server: EngramServer) -> float:
    """The server process's user + system CPU time so far."""
    assert server.proc is not None
    fields = Path(f"/proc/{server.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * TICK_S


async def in_process(tmp: Path, *, rounds: int, requests: int) -> dict[str, float]:
    """CPU microseconds per GET /health through the whole app, per mode (medians)."""
    apps = {}
    for mode in MODES:
        settings = Settings(
            database_url=f"sqlite+aiosqlite:///{tmp}/inproc-{mode}.db",
            blob_dir=tmp / f"inproc-{mode}-blobs",
            metrics_enabled=mode == "true",
            log_requests=False,
        )
        settings.learning.worker = False
        apps[mode] = create_app(settings)

    async def receive() -> dict[str, object]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: object) -> None:
        return None

    times: dict[str, list[float]] = {mode: [] for mode in MODES}
    async with apps["false"].router.lifespan_context(apps["false"]):
        async with apps["true"].router.lifespan_context(apps["true"]):
            for i in range(rounds):
                for mode in sorted(MODES, reverse=i % 2 == 1):
                    app = apps[mode]
                    started = time.thread_time()
                    for _ in range(requests):
                        await app(dict(SCOPE), receive, send)
                    times[mode].append((time.thread_time() - started) / requests * 1e6)
    return {mode: statistics.median(times[mode]) for mode in MODES}


async def load(server: EngramServer, *, seconds: float, connections: int) -> tuple[float, float]:
    """Requests per second and the server's CPU microseconds per request."""
    before = cpu_s(server)
    result = await run(server.port, lambda _: HEALTH, connections=connections, seconds=seconds)
    if result.errors or result.ok != len(result.latencies):
        raise RuntimeError(f"failed requests: {result.errors} errors, {result.statuses}")
    return result.rate, (cpu_s(server) - before) / len(result.latencies) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--connections", type=int, default=16)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        us = asyncio.run(in_process(Path(tmp), rounds=20, requests=1000))
        print(
            f"in-process CPU per GET /health: {us['false']:.1f} us without metrics, "
            f"{us['true']:.1f} us with (ratio of rates {us['false'] / us['true']:.3f})",
            flush=True,
        )
        servers = {
            mode: EngramServer(
                Path(tmp) / mode, ENGRAM_METRICS_ENABLED=mode, ENGRAM_LEARNING__WORKER="false"
            ).start()
            for mode in MODES
        }
        try:
            rates: dict[str, list[float]] = {mode: [] for mode in MODES}
            cpu: dict[str, list[float]] = {mode: [] for mode in MODES}
            for server in servers.values():  # warm up both before measuring
                asyncio.run(load(server, seconds=1.0, connections=args.connections))
            for i in range(args.rounds):
                for mode in sorted(MODES, reverse=i % 2 == 1):
                    rate, per = asyncio.run(
                        load(servers[mode], seconds=args.seconds, connections=args.connections)
                    )
                    rates[mode].append(rate)
                    cpu[mode].append(per)
                    print(f"round {i + 1} metrics={mode}: {rate:,.0f} req/s, {per:.0f} us CPU/req")
            off, on = (statistics.median(rates[m]) for m in MODES)
            cpu_off, cpu_on = (statistics.median(cpu[m]) for m in MODES)
            print(f"server req/s (median): {off:,.0f} without, {on:,.0f} with: {on / off:.3f}")
            print(
                f"server CPU per request (median): {cpu_off:.0f} us without, {cpu_on:.0f} us "
                f"with: rate ratio {cpu_off / cpu_on:.3f}"
            )

            server = servers["true"]
            with httpx.Client(base_url=server.url) as client:
                before = cpu_s(server)
                for _ in range(50):
                    body = client.get("/metrics").raise_for_status().text
                per_scrape = (cpu_s(server) - before) / 50 * 1000
            print(
                f"scrape: {len(body):,} bytes, {len(body.splitlines()):,} lines, "
                f"{per_scrape:.1f} ms server CPU"
            )
        finally:
            for server in servers.values():
                server.stop()


if __name__ == "__main__":
    main()
