"""Deep schemathesis run over every operation of the OpenAPI document.

    python -m bench.fuzz --examples 200 [--database-url postgresql+asyncpg://...]

Seeds records over HTTP, fuzzes every operation in both generation modes (valid and
invalid requests), and prints requests and statuses per operation, then every distinct
failure. Exits 1 if any failure was found. With a PostgreSQL URL, that database is
emptied first.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

import schemathesis
from schemathesis.python import asgi

from app.core.config import Settings
from app.main import create_app
from tests.server import reset_database
from tests.system.fuzzing import HEADERS, fuzz, fuzz_settings, seed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=200, help="per operation and mode")
    parser.add_argument("--database-url", default=None, help="default: a new SQLite file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="engram-fuzz-") as tmp:
        url = args.database_url or f"sqlite+aiosqlite:///{Path(tmp) / 'engram.db'}"
        if args.database_url:
            asyncio.run(reset_database(url))
        base = Settings(database_url=url, blob_dir=Path(tmp) / "blobs", log_requests=False)
        app = create_app(fuzz_settings(base))
        schema = schemathesis.openapi.from_asgi("/openapi.json", app)
        try:
            with asgi.get_client(app) as client:
                known = seed(client, HEADERS)
                report = fuzz(schema, client, HEADERS, known, examples=args.examples)
        finally:
            asgi.shutdown_lifespans()
    for label in sorted(report.calls):
        statuses = " ".join(f"{code}:{n}" for code, n in sorted(report.statuses[label].items()))
        print(f"{label:<48} {report.calls[label]:>6}  {statuses}")
    print(
        f"\n{len(report.calls)} operations, {report.total} requests in {report.seconds:.1f} s, "
        f"{len(report.failures)} distinct failures"
    )
    for (label, title), text in report.failures.items():
        print(f"\n{label}: {title}\n{text}")
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
