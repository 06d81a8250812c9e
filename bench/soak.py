"""Soak: the real server under a mixed agent workload for a set time, on loopback.

Many keep-alive clients (in one or more processes) record episodes, write and search
memories, recall for tasks and reward those recalls or tasks, read and list episodes,
and one downloads the RL dataset every few seconds, while the learning worker runs in
the server. Prints per operation: count, rate, p50/p95/p99 latency, statuses (429 apart
from errors) and transport errors; the server's RSS after warm-up, over time and at the
end. Afterwards every acknowledged episode and memory is read back. Exits 1 on any 5xx,
transport error, unreadable write, dead-lettered job, or RSS growth over the bound.
The workload and its report are tests/system/soak.py and soak_load.py.

    python -m bench.soak [--duration 300] [--clients 32] [--procs 1] [--database-url URL]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.server import EngramServer
from tests.system.soak import RSS_BOUND_MIB, SERVER_ENV, render, soak


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--duration", type=float, default=300.0, help="seconds measured")
    parser.add_argument("--warmup", type=float, default=20.0)
    parser.add_argument("--clients", type=int, default=32, help="concurrent connections")
    parser.add_argument("--procs", type=int, default=1, help="client processes")
    parser.add_argument("--database-url", default=None, help="PostgreSQL URL; SQLite otherwise")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--export-every", type=float, default=5.0)
    parser.add_argument("--rss-bound-mib", type=float, default=RSS_BOUND_MIB)
    parser.add_argument("--env", action="append", default=[], metavar="ENGRAM_X=VALUE")
    args = parser.parse_args()
    env = SERVER_ENV | dict(item.split("=", 1) for item in args.env)
    with tempfile.TemporaryDirectory(prefix="engram-soak-") as tmp:
        server = EngramServer(Path(tmp), database_url=args.database_url, **env).start()
        try:
            report = await soak(
                server, duration=args.duration, warmup=args.warmup, clients=args.clients,
                procs=args.procs, seed=args.seed, export_every=args.export_every,
            )  # fmt: skip
        finally:
            server.stop()
            out = Path(__file__).resolve().parent / "out"
            out.mkdir(exist_ok=True)
            shutil.copyfile(server.log_path, out / "soak-server.log")
    print(f"at {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; database "
          f"{args.database_url or 'SQLite (WAL, synchronous=FULL)'}; {args.clients} clients in "
          f"{args.procs} process(es) on the same machine as the server")  # fmt: skip
    print(render(report, args.rss_bound_mib))
    failures = report.failures(args.rss_bound_mib)
    print("FAIL: " + "; ".join(failures) if failures else "PASS")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
