"""Backup and restore of a larger dataset, timed.

Fills a real server with N episodes (10 steps, about 2 KB each), then times
`engram backup` over HTTP (and the bare download), with the server's RSS sampled
during it, stops the server and times `engram restore` into fresh stores.

    python -m bench.backup [--episodes 20000] [--database-url URL]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.services.operations.restore import verify
from bench.ingest import episode
from bench.loadgen import run
from tests.server import EngramServer
from tests.system.raw_http import build_request

ROOT = Path(__file__).resolve().parent.parent


def engram(env: dict[str, str], *args: str) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "app.cli", *args], env={**os.environ, **env}, cwd=ROOT, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"engram {args[0]} failed with {done.returncode}")
    return time.perf_counter() - started


def peak_rss(server: EngramServer, stop: threading.Event, peak: list[int]) -> None:
    while not stop.wait(0.05):
        peak[0] = max(peak[0], server.rss_bytes())


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", type=int, default=20_000)
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--target-database-url", default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="engram-bench-") as tmp:
        root = Path(tmp)
        server = EngramServer(
            root / "source",
            database_url=args.database_url,
            ENGRAM_LOG_REQUESTS="false",
            ENGRAM_LEARNING__WORKER="false",
        ).start()
        archive, bare = root / "engram.tar.gz", root / "bare.tar.gz"
        try:
            bodies = [
                build_request("POST", "/v1/episodes", episode(i)) for i in range(args.episodes)
            ]
            fill = await run(server.port, lambda i: bodies[i], connections=32, total=len(bodies))
            print(f"filled: {fill.ok} episodes in {fill.seconds:.1f} s")
            rss_before = server.rss_bytes()
            started = time.perf_counter()
            with httpx.stream("GET", f"{server.url}/v1/admin/backup", timeout=600) as r:
                with bare.open("wb") as out:
                    for block in r.iter_bytes(1 << 16):
                        out.write(block)
            download_s = time.perf_counter() - started
            stop, peak = threading.Event(), [0]
            sampler = threading.Thread(target=peak_rss, args=(server, stop, peak))
            sampler.start()
            backup_s = engram(server.env, "backup", str(archive), "--url", server.url)
            stop.set()
            sampler.join()
        finally:
            server.stop()
        contents = verify(archive)
        rows, size = sum(contents.rows.values()), archive.stat().st_size
        target = {
            "ENGRAM_DATABASE_URL": args.target_database_url
            or f"sqlite+aiosqlite:///{root / 'target' / 'engram.db'}",
            "ENGRAM_BLOB_DIR": str(root / "target" / "blobs"),
        }
        restore_s = engram(target, "restore", str(archive), "--force")

    records = rows + contents.payloads
    print(f"database: {args.database_url or 'SQLite (default)'}")
    print(
        f"archive: {size / 1e6:.1f} MB ({contents.payload_bytes / 1e6:.1f} MB of payloads before "
        f"compression); {rows:,} rows ({contents.rows['episodes']:,} episodes), "
        f"{contents.payloads:,} payload records"
    )
    print(
        f"download of GET /v1/admin/backup: {download_s:.2f} s, {records / download_s:,.0f} "
        f"records/s, {size / 1e6 / download_s:.1f} MB/s"
    )
    print(
        f"engram backup (download + verify, process start included): {backup_s:.2f} s, "
        f"{records / backup_s:,.0f} records/s"
    )
    print(
        f"engram restore (verify + load, process start included): {restore_s:.2f} s, "
        f"{records / restore_s:,.0f} records/s"
    )
    print(
        f"server RSS: {rss_before / 2**20:.0f} MiB before, peak {peak[0] / 2**20:.0f} MiB "
        "during engram backup"
    )


if __name__ == "__main__":
    asyncio.run(main())
