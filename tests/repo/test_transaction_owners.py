"""Who begins and ends transactions: the places app/db/engine.py names, each for its
reason; a service or repository takes the session it is given and never commits."""

from __future__ import annotations

import re
from pathlib import Path

APP = Path(__file__).resolve().parents[2] / "app"
# Beginning, committing or rolling back a transaction, or opening a session for one.
TRANSACTION = re.compile(
    r"\.(commit|rollback|begin)\(\)|\b[Tt]ransactions(\([^)]*\))?\.(read|write)\(\)|\btransaction\("
    r"|\b\w*sessionmaker\(\)|\b\w*_sessions\(\)"
)
OWNERS = {
    "db/engine.py": "the one transaction helper (Transactions.read/write)",
    "db/migrate.py": "migrations, in a transaction of their own",
    "db/backends/sqlite_driver.py": "the driver's one-call transaction (the writer's direct path)",
    "db/backends/hrana.py": "the DB-API connection's own commit and rollback, and the "
    "driver's one-call transaction in one request",
    "db/backends/libsql_replica.py": "the DB-API connection's commit and rollback, handed to "
    "the replica's server connection",
    "api/deps.py": "a request's transactions",
    "services/writer/": "the writer's group commits and the orphan sweep",
    "worker/": "a job's transaction, committed with its completion; the embedding backlog "
    "reads a batch, embeds it outside any transaction, then stores its vectors in one",
    "cli": "a command's transaction",
    "services/access/auth.py": "key lookups shared by the requests waiting for one key; start-up",
    "services/recall/requests.py": "a recall's reads end before its log goes to the writer",
    "services/agents/": "a hook event finds its session's episode before its step or completion "
    "goes to the writer",
    "services/learning/on_demand.py": "a pass asked for now, in transactions of a few chunks "
    "each, or its job queued",
    "services/dataset/": "a download is read while it streams, after its handler returned",
    "services/operations/backup.py": "the backup's snapshot, on a connection of its own",
    "services/operations/restore.py": "the restore's one transaction, on a connection of its own",
    "services/policies/training.py": "a policy job reads its window before its own transaction",
    "services/access/dashboard_sessions.py": "the dashboard's sign-ins: a session opened, "
    "looked up, closed",
}


def test_only_the_owners_begin_or_end_transactions() -> None:
    found = [
        f"{name}:{n}: {line.strip()}"
        for path in sorted(APP.rglob("*.py"))
        if not (name := str(path.relative_to(APP))).startswith(tuple(OWNERS))
        for n, line in enumerate(path.read_text().splitlines(), start=1)
        if TRANSACTION.search(line)
    ]
    assert found == []


def test_every_owner_still_owns_one() -> None:
    """The list stays true: an owner that no longer opens a transaction leaves it."""
    idle = [
        owner
        for owner in OWNERS
        if not any(
            TRANSACTION.search(path.read_text())
            for path in sorted(APP.rglob("*.py"))
            if str(path.relative_to(APP)).startswith(owner)
        )
    ]
    assert idle == []
