"""Memories, with a full-text index: FTS5 on SQLite, a tsvector with GIN on PostgreSQL.

Revision ID: 3b8e1c0d5a21
Revises: f42f92b58f72
Create Date: 2026-11-29 18:20:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "3b8e1c0d5a21"
down_revision: str | None = "f42f92b58f72"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "memories",
        sa.Column("namespace", sa.String(length=64), nullable=False),
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("type", sa.String(length=32), nullable=False),
        sa.Column("scope", sa.JSON(), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("confidence", sa.Float(), nullable=False),
        sa.Column("sensitivity", sa.String(length=16), nullable=False),
        sa.Column("criticality", sa.Float(), nullable=False),
        sa.Column("valid_from", sa.DateTime(timezone=True), nullable=True),
        sa.Column("valid_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("source_refs", sa.JSON(), nullable=False),
        sa.Column("metadata", sa.JSON(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("previous_id", sa.String(length=64), nullable=True),
        sa.Column("superseded_by", sa.String(length=64), nullable=True),
        sa.Column("token_estimate", sa.Integer(), nullable=False),
        sa.Column("use_count", sa.Integer(), nullable=False),
        sa.Column("last_used_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("reward_count", sa.Integer(), nullable=False),
        sa.Column("reward_sum", sa.Float(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("namespace", "id", name=op.f("pk_memories")),
    )
    with op.batch_alter_table("memories", schema=None) as batch_op:
        batch_op.create_index("ix_memories_ns_created", ["namespace", "created_at", "id"])
        batch_op.create_index(
            "ix_memories_ns_type_status", ["namespace", "type", "status", "criticality", "id"]
        )
        batch_op.create_index("ix_memories_ns_status", ["namespace", "status"])

    if op.get_bind().dialect.name == "sqlite":
        # The index keeps its own copy of the text, keyed by memory_id and a namespace
        # token: an external-content table would key on rowid, which VACUUM may renumber
        # for a table whose primary key is not an INTEGER PRIMARY KEY. The namespace is
        # indexed as one token ('n' + hex + 'x', which no stemmer alters) so that a query
        # restricts to its namespace inside the full-text engine.
        ns_token = "'n' || hex({row}.namespace) || 'x'"
        op.execute(
            "CREATE VIRTUAL TABLE memories_fts USING fts5("
            "content, ns, memory_id UNINDEXED, "
            "tokenize='porter unicode61 remove_diacritics 2')"
        )
        # Document frequency of each indexed term: recall drops very common query terms.
        op.execute("CREATE VIRTUAL TABLE memories_fts_vocab USING fts5vocab(memories_fts, 'row')")
        op.execute(
            "CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN "
            "INSERT INTO memories_fts(content, ns, memory_id) "
            f"VALUES (new.content, {ns_token.format(row='new')}, new.id); END"
        )
        op.execute(
            "CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN "
            "DELETE FROM memories_fts WHERE memory_id = old.id "
            f"AND ns = {ns_token.format(row='old')}; END"
        )
        op.execute(
            "CREATE TRIGGER memories_fts_update AFTER UPDATE OF content ON memories BEGIN "
            "UPDATE memories_fts SET content = new.content "
            f"WHERE memory_id = old.id AND ns = {ns_token.format(row='old')}; END"
        )
    else:
        op.execute(
            "ALTER TABLE memories ADD COLUMN search_vector tsvector "
            "GENERATED ALWAYS AS (to_tsvector('english', content)) STORED"
        )
        op.execute("CREATE INDEX ix_memories_search ON memories USING GIN (search_vector)")


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for trigger in ("memories_fts_insert", "memories_fts_delete", "memories_fts_update"):
            op.execute(f"DROP TRIGGER IF EXISTS {trigger}")
        op.execute("DROP TABLE IF EXISTS memories_fts_vocab")
        op.execute("DROP TABLE IF EXISTS memories_fts")
    op.drop_table("memories")
