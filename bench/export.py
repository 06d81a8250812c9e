"""The NDJSON dataset export alone, against the real server (uvicorn, SQLite + LevelDB):
copies of one real completed transition (50 candidates), downloaded several times in a
row, with the rate of each download and the server's RSS before, at its peak and after.

    python -m bench.export [--transitions 30000] [--downloads 5] [--chained]

`--chained` links the copies four to a task (next_transition_id and
next_observation_vector filled in, as for tasks recalled more than once); without it
every copy is terminal, as in bench.recall's export line. `--in-process` also times the
export's generator without HTTP.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.core.config import Settings
from app.db.backends import create_engine
from app.db.engine import Transactions
from app.schemas.filters import DatasetFilters
from app.services.dataset import DatasetExport
from app.services.dataset.ndjson import lines as ndjson_lines
from bench.recall import bulk_load, memories_text
from bench.transitions import download, insert_copies, model_transition
from tests.server import EngramServer

MIB = 2**20


async def in_process(url: str, n: int) -> tuple[float, int]:
    """The export's NDJSON generator alone (no HTTP): transitions/s and bytes."""
    engine = create_engine(Settings(database_url=url))
    export = DatasetExport(
        Transactions(engine),
        namespace="default",
        table="transitions",
        filters=DatasetFilters(task_type="bench"),
        after=None,
        until_key=(datetime(9999, 1, 1, tzinfo=UTC), "~"),
        slots=Settings().recall.candidate_slots,
    )
    lines = size = 0
    t0 = time.perf_counter()
    async for block in ndjson_lines(export):
        lines += block.count(b"\n")
        size += len(block)
    elapsed = time.perf_counter() - t0
    await engine.dispose()
    assert lines == n, (lines, n)
    return lines / elapsed, size


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--transitions", type=int, default=30_000)
    parser.add_argument("--downloads", type=int, default=5)
    parser.add_argument("--chained", action="store_true")
    parser.add_argument("--in-process", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="engram-export-") as tmp:
        url = f"sqlite+aiosqlite:///{tmp}/engram.db"
        await bulk_load(url, memories_text(10_000), 0)
        server = EngramServer(Path(tmp), database_url=url, ENGRAM_LOG_REQUESTS="false").start()
        try:
            model = await model_transition(server.url)
            n_cand = len(model["state"]["candidates"])
            await insert_copies(url, model, args.transitions, chained=args.chained)
            rates = []
            for i in range(args.downloads):
                rate, count, before, peak, after = await download(server, args.transitions)
                rates.append(rate)
                print(
                    f"download {i + 1}: {rate:,.0f} transitions/s ({count} lines, {n_cand} candidates);"
                    f" server RSS {before / MIB:.0f} -> peak {peak / MIB:.0f}, after {after / MIB:.0f} MiB"
                )
            print(f"median {statistics.median(rates):,.0f} transitions/s")
            if args.in_process:
                rate, size = await in_process(url, args.transitions)
                print(
                    f"in-process (no HTTP): {rate:,.0f} transitions/s, {size / args.transitions / 1024:.1f} KiB a line"
                )
        finally:
            server.stop()


if __name__ == "__main__":
    asyncio.run(main())
