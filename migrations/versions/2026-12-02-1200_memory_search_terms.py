"""Memories' search terms (C++, paths, identifiers as one token each) indexed with their
content

Revision ID: 9d3f6a2b7e41
Revises: 7b4d2e9a1c60
Create Date: 2026-12-02 12:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from app.learning.tokens import search_terms

revision: str = "9d3f6a2b7e41"
down_revision: str | None = "7b4d2e9a1c60"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BATCH = 5000
NS_TOKEN = "'n' || hex({row}.namespace) || 'x'"
# The full-text row holds the content, then the search terms on a line of their own.
INDEXED = "new.content || coalesce(char(10) || new.search_terms, '')"
KEEP = 10_000  # as the deletions log's migration keeps


def upgrade() -> None:
    op.add_column("memories", sa.Column("search_terms", sa.Text(), nullable=True))
    if op.get_bind().dialect.name == "sqlite":
        _sqlite_triggers(indexed=INDEXED, columns="content, search_terms")
        _fill()
    else:
        _fill()
        # The terms weigh most (ts_rank_cd counts an 'A' lexeme 10 times a 'D' one): it
        # has no idf, and a rare whole token should outrank common words.
        _postgres_vector(
            "to_tsvector('english', content) || "
            "setweight(to_tsvector('english', coalesce(search_terms, '')), 'A')"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        # The full-text rows lose their terms through the trigger, before it goes.
        op.execute("UPDATE memories SET search_terms = NULL WHERE search_terms IS NOT NULL")
        _sqlite_triggers(indexed="new.content", columns="content")
        op.execute("ALTER TABLE memories DROP COLUMN search_terms")
    else:
        _postgres_vector("to_tsvector('english', content)")
        op.drop_column("memories", "search_terms")


def _sqlite_triggers(*, indexed: str, columns: str) -> None:
    """The full-text triggers of the memories migration and the deletions log's update
    trigger, indexing `indexed` and firing on updates of `columns`."""
    for name in ("memories_fts_insert", "memories_fts_update", "memories_fts_log_update"):
        op.execute(f"DROP TRIGGER IF EXISTS {name}")
    op.execute(
        "CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN "
        "INSERT INTO memories_fts(content, ns, memory_id) "
        f"VALUES ({indexed}, {NS_TOKEN.format(row='new')}, new.id); END"
    )
    op.execute(
        f"CREATE TRIGGER memories_fts_update AFTER UPDATE OF {columns} ON memories BEGIN "
        f"UPDATE memories_fts SET content = {indexed} "
        f"WHERE memory_id = old.id AND ns = {NS_TOKEN.format(row='old')}; END"
    )
    op.execute(
        f"CREATE TRIGGER memories_fts_log_update AFTER UPDATE OF {columns} ON memories "
        "BEGIN INSERT INTO memories_fts_deletions(namespace, memory_id, rewritten) "
        "VALUES (old.namespace, old.id, 1); "
        "DELETE FROM memories_fts_deletions WHERE seq <= "
        f"(SELECT max(seq) FROM memories_fts_deletions) - {KEEP}; END"
    )


def _fill() -> None:
    """Every existing memory's search terms (most have none and are not written)."""
    conn = op.get_bind()
    memories = sa.table(
        "memories",
        sa.column("namespace"),
        sa.column("id"),
        sa.column("content"),
        sa.column("search_terms"),
    )
    read = (
        sa.select(memories.c.namespace, memories.c.id, memories.c.content)
        .where(
            sa.tuple_(memories.c.namespace, memories.c.id)
            > sa.tuple_(sa.bindparam("ns"), sa.bindparam("mid"))
        )
        .order_by(memories.c.namespace, memories.c.id)
        .limit(BATCH)
    )
    write = (
        sa.update(memories)
        .where(memories.c.namespace == sa.bindparam("b_ns"), memories.c.id == sa.bindparam("b_id"))
        .values(search_terms=sa.bindparam("terms"))
    )
    after = ("", "")
    while rows := conn.execute(read, {"ns": after[0], "mid": after[1]}).all():
        changed = [
            {"b_ns": ns, "b_id": mid, "terms": terms}
            for ns, mid, content in rows
            if (terms := search_terms(content)) is not None
        ]
        if changed:
            conn.execute(write, changed)
        after = (rows[-1][0], rows[-1][1])


def _postgres_vector(indexed: str) -> None:
    """The generated tsvector column `indexed` (and its GIN index)."""
    op.execute("DROP INDEX IF EXISTS ix_memories_search")
    op.execute("ALTER TABLE memories DROP COLUMN search_vector")
    op.execute(
        "ALTER TABLE memories ADD COLUMN search_vector tsvector "
        f"GENERATED ALWAYS AS ({indexed}) STORED"
    )
    op.execute("CREATE INDEX ix_memories_search ON memories USING GIN (search_vector)")
