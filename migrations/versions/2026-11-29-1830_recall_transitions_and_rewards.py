"""Recall transitions and rewards.

Revision ID: 3fa911fe3f18
Revises: 3b8e1c0d5a21
Create Date: 2026-11-29 18:12:23.029977
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "3fa911fe3f18"
down_revision: str | None = "3b8e1c0d5a21"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "rewards",
        sa.Column("namespace", sa.String(length=64), nullable=False),
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("recall_id", sa.String(length=64), nullable=True),
        sa.Column("task_id", sa.String(length=256), nullable=True),
        sa.Column("episode_id", sa.String(length=64), nullable=True),
        sa.Column("value", sa.Float(), nullable=True),
        sa.Column("signals", sa.JSON(), nullable=False),
        sa.Column("scalar", sa.Float(), nullable=False),
        sa.Column("components", sa.JSON(), nullable=False),
        sa.Column("spec_version", sa.String(length=32), nullable=False),
        sa.Column("request_hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("namespace", "id", name=op.f("pk_rewards")),
    )
    with op.batch_alter_table("rewards", schema=None) as batch_op:
        batch_op.create_index(
            "ix_rewards_ns_created", ["namespace", "created_at", "id"], unique=False
        )
        batch_op.create_index("ix_rewards_ns_recall", ["namespace", "recall_id"], unique=False)
        batch_op.create_index("ix_rewards_ns_task", ["namespace", "task_id"], unique=False)

    op.create_table(
        "rl_transitions",
        sa.Column("namespace", sa.String(length=64), nullable=False),
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("task_id", sa.String(length=256), nullable=True),
        sa.Column("agent_id", sa.String(length=256), nullable=True),
        sa.Column("task_type", sa.String(length=256), nullable=True),
        sa.Column("policy_id", sa.String(length=64), nullable=False),
        sa.Column("policy_version", sa.Integer(), nullable=False),
        sa.Column("state", sa.JSON(), nullable=False),
        sa.Column("action", sa.JSON(), nullable=False),
        sa.Column("propensity", sa.Float(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("reward", sa.Float(), nullable=True),
        sa.Column("reward_id", sa.String(length=64), nullable=True),
        sa.Column("next_id", sa.String(length=64), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("completed_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("namespace", "id", name=op.f("pk_rl_transitions")),
    )
    with op.batch_alter_table("rl_transitions", schema=None) as batch_op:
        batch_op.create_index(
            "ix_rl_transitions_ns_created", ["namespace", "created_at", "id"], unique=False
        )
        batch_op.create_index(
            "ix_rl_transitions_ns_status",
            ["namespace", "status", "completed_at", "id"],
            unique=False,
        )
        batch_op.create_index(
            "ix_rl_transitions_ns_task", ["namespace", "task_id", "created_at"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("rl_transitions", schema=None) as batch_op:
        batch_op.drop_index("ix_rl_transitions_ns_task")
        batch_op.drop_index("ix_rl_transitions_ns_status")
        batch_op.drop_index("ix_rl_transitions_ns_created")

    op.drop_table("rl_transitions")
    with op.batch_alter_table("rewards", schema=None) as batch_op:
        batch_op.drop_index("ix_rewards_ns_task")
        batch_op.drop_index("ix_rewards_ns_recall")
        batch_op.drop_index("ix_rewards_ns_created")

    op.drop_table("rewards")
