"""Initial schema: episodes (with step skeletons) and API keys.

Revision ID: f42f92b58f72
Revises:
Create Date: 2026-11-29 17:15:00.530056
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "f42f92b58f72"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:

    op.create_table(
        "api_keys",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("namespace", sa.String(length=64), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("name", sa.String(length=256), nullable=True),
        sa.Column("prefix", sa.String(length=16), nullable=False),
        sa.Column("key_hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_keys")),
        sa.UniqueConstraint("key_hash", name=op.f("uq_api_keys_key_hash")),
    )
    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.create_index("ix_api_keys_namespace", ["namespace"], unique=False)

    op.create_table(
        "episodes",
        sa.Column("namespace", sa.String(length=64), nullable=False),
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("task_id", sa.String(length=256), nullable=False),
        sa.Column("agent_id", sa.String(length=256), nullable=True),
        sa.Column("task_type", sa.String(length=256), nullable=True),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("outcome", sa.String(length=16), nullable=True),
        sa.Column("verdict", sa.Text(), nullable=True),
        sa.Column("progress", sa.Float(), nullable=True),
        sa.Column("domain", sa.String(length=256), nullable=True),
        sa.Column("language", sa.String(length=256), nullable=True),
        sa.Column("tags", sa.JSON(), nullable=False),
        sa.Column("skills_applied", sa.JSON(), nullable=False),
        sa.Column("steps", sa.JSON(), nullable=False),
        sa.Column("step_count", sa.Integer(), nullable=False),
        sa.Column("error_count", sa.Integer(), nullable=False),
        sa.Column("total_latency_ms", sa.Float(), nullable=False),
        sa.Column("total_tokens", sa.Integer(), nullable=False),
        sa.Column("payload_bytes", sa.Integer(), nullable=False),
        sa.Column("idempotency_key", sa.String(length=256), nullable=True),
        sa.Column("request_hash", sa.String(length=64), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("completed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("namespace", "id", name=op.f("pk_episodes")),
        sa.UniqueConstraint("namespace", "idempotency_key", name="uq_episodes_idempotency"),
    )
    with op.batch_alter_table("episodes", schema=None) as batch_op:
        batch_op.create_index(
            "ix_episodes_ns_agent", ["namespace", "agent_id", "created_at"], unique=False
        )
        batch_op.create_index(
            "ix_episodes_ns_created", ["namespace", "created_at", "id"], unique=False
        )
        batch_op.create_index(
            "ix_episodes_ns_outcome", ["namespace", "outcome", "created_at"], unique=False
        )
        batch_op.create_index(
            "ix_episodes_ns_task", ["namespace", "task_id", "created_at"], unique=False
        )
        batch_op.create_index(
            "ix_episodes_ns_task_type", ["namespace", "task_type", "created_at"], unique=False
        )


def downgrade() -> None:

    with op.batch_alter_table("episodes", schema=None) as batch_op:
        batch_op.drop_index("ix_episodes_ns_task_type")
        batch_op.drop_index("ix_episodes_ns_task")
        batch_op.drop_index("ix_episodes_ns_outcome")
        batch_op.drop_index("ix_episodes_ns_created")
        batch_op.drop_index("ix_episodes_ns_agent")

    op.drop_table("episodes")
    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.drop_index("ix_api_keys_namespace")

    op.drop_table("api_keys")
