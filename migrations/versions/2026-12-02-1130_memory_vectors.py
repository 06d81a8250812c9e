"""Memory vectors and the memories waiting for one

Revision ID: 7b4d2e9a1c60
Revises: 5e2a8c1f9b37
Create Date: 2026-12-02 11:30:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "7b4d2e9a1c60"
down_revision: str | None = "5e2a8c1f9b37"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "memory_vectors",
        sa.Column("seq", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("namespace", sa.String(64), nullable=False),
        sa.Column("memory_id", sa.String(64), nullable=False),
        sa.Column("model", sa.String(128), nullable=False),
        sa.Column("dim", sa.Integer(), nullable=False),
        sa.Column("vector", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("namespace", "memory_id", "model", name="uq_memory_vectors"),
        sqlite_autoincrement=True,
    )
    op.create_table(
        "memory_embeddings_pending",
        sa.Column("seq", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("namespace", sa.String(64), nullable=False),
        sa.Column("memory_id", sa.String(64), nullable=False),
        sqlite_autoincrement=True,
    )
    op.create_index(
        "ix_memory_embeddings_pending_memory",
        "memory_embeddings_pending",
        ["namespace", "memory_id"],
    )
    # Every memory written from now on waits for its vector (in the write's transaction,
    # whatever writes it); a deleted memory takes its vectors and its wait with it.
    if op.get_bind().dialect.name == "sqlite":
        op.execute(
            "CREATE TRIGGER memory_embeddings_enqueue AFTER INSERT ON memories BEGIN "
            "INSERT INTO memory_embeddings_pending(namespace, memory_id) "
            "VALUES (new.namespace, new.id); END"
        )
        op.execute(
            "CREATE TRIGGER memory_vectors_delete AFTER DELETE ON memories BEGIN "
            "DELETE FROM memory_vectors WHERE namespace = old.namespace "
            "AND memory_id = old.id; "
            "DELETE FROM memory_embeddings_pending WHERE namespace = old.namespace "
            "AND memory_id = old.id; END"
        )
    else:
        op.execute(
            "CREATE FUNCTION memory_embeddings_enqueue() RETURNS trigger AS $$ BEGIN "
            "INSERT INTO memory_embeddings_pending(namespace, memory_id) "
            "VALUES (NEW.namespace, NEW.id); RETURN NULL; END $$ LANGUAGE plpgsql"
        )
        op.execute(
            "CREATE TRIGGER memory_embeddings_enqueue AFTER INSERT ON memories "
            "FOR EACH ROW EXECUTE FUNCTION memory_embeddings_enqueue()"
        )
        op.execute(
            "CREATE FUNCTION memory_vectors_delete() RETURNS trigger AS $$ BEGIN "
            "DELETE FROM memory_vectors WHERE namespace = OLD.namespace "
            "AND memory_id = OLD.id; "
            "DELETE FROM memory_embeddings_pending WHERE namespace = OLD.namespace "
            "AND memory_id = OLD.id; RETURN NULL; END $$ LANGUAGE plpgsql"
        )
        op.execute(
            "CREATE TRIGGER memory_vectors_delete AFTER DELETE ON memories "
            "FOR EACH ROW EXECUTE FUNCTION memory_vectors_delete()"
        )
    # The memories written before wait too, oldest first.
    op.execute(
        "INSERT INTO memory_embeddings_pending(namespace, memory_id) "
        "SELECT namespace, id FROM memories ORDER BY created_at, id"
    )


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute("DROP TRIGGER IF EXISTS memory_embeddings_enqueue")
        op.execute("DROP TRIGGER IF EXISTS memory_vectors_delete")
    else:
        op.execute("DROP TRIGGER IF EXISTS memory_embeddings_enqueue ON memories")
        op.execute("DROP TRIGGER IF EXISTS memory_vectors_delete ON memories")
        op.execute("DROP FUNCTION IF EXISTS memory_embeddings_enqueue()")
        op.execute("DROP FUNCTION IF EXISTS memory_vectors_delete()")
    op.drop_index("ix_memory_embeddings_pending_memory", table_name="memory_embeddings_pending")
    op.drop_table("memory_embeddings_pending")
    op.drop_table("memory_vectors")
