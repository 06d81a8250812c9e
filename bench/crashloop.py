"""Crash loop: SIGKILL the real server at random moments under a mix of writes, restart
it, and check after every restart that nothing acknowledged was lost or half-written.

    python -m bench.crashloop --kills 200 [--seed 1] [--clients 6]

Runs on a fresh SQLite file and LevelDB directory, or on ENGRAM_TEST_DATABASE_URL
(PostgreSQL; its tables are emptied first). Prints the counts; exits 1 on a failed check.
The loop and its checks are tests/system/crash_loop.py, crash_traffic.py, crash_checks.py.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

from tests.system.crash_loop import CrashLoop


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--clients", type=int, default=6)
    parser.add_argument("--dir", type=Path, default=None, help="data directory (default: temp)")
    args = parser.parse_args()
    data_dir = args.dir or Path(tempfile.mkdtemp(prefix="engram-crashloop-"))
    url = os.environ.get("ENGRAM_TEST_DATABASE_URL")
    loop = CrashLoop(data_dir / "srv", seed=args.seed, clients=args.clients, database_url=url)
    started = time.monotonic()
    loop.progress = lambda r: print(  # one line per ten kills, for long runs
        f"[{time.monotonic() - started:.0f} s] kills {r.kills}, acknowledged "
        f"{sum(r.ledger.acked.values())}, lost {sum(r.ledger.lost.values())}, "
        f"checks {sum(r.checks.values())}, failures {len(r.failures)}",
        file=sys.stderr,
        flush=True,
    )
    # A SIGTERM of the driver takes its server down with it.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        result = asyncio.run(loop.run(args.kills))
    finally:
        loop.server.kill()
    print(f"backend: {'postgresql' if url else 'sqlite'}, data: {data_dir}")
    for line in result.lines():
        print(line)
    sys.exit(1 if result.failures else 0)


if __name__ == "__main__":
    main()
