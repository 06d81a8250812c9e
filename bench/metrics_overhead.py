"""What request metrics cost: GET /health per second on the real server, with
ENGRAM_METRICS_ENABLED=false and =true, in alternating rounds (the machine is shared,
so each mode's median of several rounds is compared); the same in-process (the app
called directly, no sockets: the middleware's share is easier to see); one scrape's
size and time.

    python -m bench.metrics_overhead [--rounds 5] [--seconds 5] [--connections 16]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.core.config import Settings
from app.main import create_app
from bench.loadgen import build_request, run
from tests.server import EngramServer

HEALTH = build_request("GET", "/health")
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


async def in_process(tmp: Path, *, rounds: int, requests: int) -> tuple[float, float]:
    """Microseconds per GET /health through the whole app, metrics off and on (medians)."""
    apps = {}
    for mode in (False, True):
        settings = Settings(
            database_url=f"sqlite+aiosqlite:///{tmp}/inproc-{mode}.db",
            blob_dir=tmp / f"inproc-{mode}-blobs",
            metrics_enabled=mode,
            log_requests=False,
        )
        settings.learning.worker = False
        apps[mode] = create_app(settings)

    async def receive() -> dict[str, object]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: object) -> None:
        return None

    times: dict[bool, list[float]] = {False: [], True: []}
    async with apps[False].router.lifespan_context(apps[False]):
        async with apps[True].router.lifespan_context(apps[True]):
            for i in range(rounds):
                # Alternating which mode goes first: the second of a pair runs warmer.
                for mode, app in sorted(apps.items(), reverse=i % 2 == 1):
                    started = time.perf_counter()
                    for _ in range(requests):
                        await app(dict(SCOPE), receive, send)
                    times[mode].append((time.perf_counter() - started) / requests * 1e6)
    return statistics.median(times[False]), statistics.median(times[True])


async def rate(server: EngramServer, *, seconds: float, connections: int) -> float:
    result = await run(server.port, lambda _: HEALTH, connections=connections, seconds=seconds)
    if result.errors or result.ok != len(result.latencies):
        raise RuntimeError(f"failed requests: {result.errors} errors, {result.statuses}")
    return result.rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--connections", type=int, default=16)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        off_us, on_us = asyncio.run(in_process(Path(tmp), rounds=20, requests=1000))
        print(f"in-process GET /health: {off_us:.1f} us without metrics, {on_us:.1f} us with")
        print(f"in-process ratio (req/s with/without): {off_us / on_us:.3f}", flush=True)
        servers = {
            mode: EngramServer(
                Path(tmp) / mode, ENGRAM_METRICS_ENABLED=mode, ENGRAM_LEARNING__WORKER="false"
            ).start()
            for mode in ("false", "true")
        }
        try:
            rates: dict[str, list[float]] = {mode: [] for mode in servers}
            for server in servers.values():  # warm up both before measuring
                asyncio.run(rate(server, seconds=1.0, connections=args.connections))
            for i in range(args.rounds):
                for mode, server in sorted(servers.items(), reverse=i % 2 == 1):
                    measured = asyncio.run(
                        rate(server, seconds=args.seconds, connections=args.connections)
                    )
                    rates[mode].append(measured)
                    print(f"round {i + 1} metrics={mode}: {measured:,.0f} req/s", flush=True)
            off, on = (statistics.median(rates[m]) for m in ("false", "true"))
            print(f"median without metrics: {off:,.0f} req/s")
            print(f"median with metrics:    {on:,.0f} req/s")
            print(f"ratio with/without:     {on / off:.3f}")

            url = servers["true"].url + "/metrics"
            times = []
            for _ in range(20):
                started = time.perf_counter()
                body = httpx.get(url).raise_for_status().text
                times.append(time.perf_counter() - started)
            print(
                f"scrape: {len(body):,} bytes, {len(body.splitlines()):,} lines, "
                f"median {statistics.median(times) * 1000:.1f} ms"
            )
        finally:
            for server in servers.values():
                server.stop()


if __name__ == "__main__":
    main()
