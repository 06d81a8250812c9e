"""A log of deleted (or rewritten) memories' full-text entries, for in-memory indexes

Revision ID: 7c2a9e5d3f10
Revises: 5b8e2d41c9a3
Create Date: 2026-11-30 05:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "7c2a9e5d3f10"
down_revision: str | None = "5b8e2d41c9a3"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Entries kept: a process whose search index has not caught up with the newest this
# many deletions behind rebuilds it from the full-text table instead.
KEEP = 10_000


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    # Each search process keeps a BM25 index of memories_fts in memory (app/storage/
    # term_index.py). New entries it finds by rowid; deletions and content rewrites it
    # learns from this log, written in the same transaction as the change.
    op.execute(
        "CREATE TABLE memories_fts_deletions ("
        "seq INTEGER PRIMARY KEY AUTOINCREMENT, "
        "namespace VARCHAR(64) NOT NULL, memory_id VARCHAR(64) NOT NULL, "
        "rewritten BOOLEAN NOT NULL)"
    )
    for name, event, flag in (
        ("memories_fts_log_delete", "DELETE", 0),
        ("memories_fts_log_update", "UPDATE OF content", 1),
    ):
        op.execute(
            f"CREATE TRIGGER {name} AFTER {event} ON memories BEGIN "
            "INSERT INTO memories_fts_deletions(namespace, memory_id, rewritten) "
            f"VALUES (old.namespace, old.id, {flag}); "
            "DELETE FROM memories_fts_deletions WHERE seq <= "
            f"(SELECT max(seq) FROM memories_fts_deletions) - {KEEP}; END"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    op.execute("DROP TRIGGER IF EXISTS memories_fts_log_delete")
    op.execute("DROP TRIGGER IF EXISTS memories_fts_log_update")
    op.execute("DROP TABLE IF EXISTS memories_fts_deletions")
