"""Agent sessions: kinds of work per project, and how an outcome or a reward is known

Revision ID: 4c8e1f7a2d95
Revises: 9d3f6a2b7e41
Create Date: 2026-12-04 16:30:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "4c8e1f7a2d95"
down_revision: str | None = "9d3f6a2b7e41"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TRANSITION_ORDER = (
    "namespace", "id", "task_id", "agent_id", "task_type", "policy_id", "policy_version",
    "propensity", "status", "reward", "reward_id", "reward_source", "next_id", "created_at",
    "completed_at", "observation_vector", "n_candidates", "dataset_lists", "action", "state",
)  # fmt: skip


def upgrade() -> None:
    op.create_table(
        "task_kinds",
        sa.Column("namespace", sa.String(64), primary_key=True),
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("project", sa.String(256), nullable=False),
        sa.Column("name", sa.String(256), nullable=False),
        sa.Column("prompts", sa.Integer(), nullable=False),
        sa.Column("terms", sa.JSON(), nullable=False),
        sa.Column("meaning", sa.LargeBinary(), nullable=True),
        sa.Column("meaning_model", sa.String(128), nullable=True),
        sa.Column("merged_into", sa.String(64), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index(
        "ux_task_kinds_ns_project_name",
        "task_kinds",
        ["namespace", "project", "name"],
        unique=True,
    )
    with op.batch_alter_table("episodes") as batch:
        batch.add_column(sa.Column("outcome_source", sa.String(16), nullable=True))
        batch.add_column(sa.Column("outcome_confidence", sa.Float(), nullable=True))
    source = sa.Column("reward_source", sa.String(16), nullable=True)
    if op.get_bind().dialect.name == "sqlite":
        # The large documents stay last in SQLite's rows (see the dataset lists' migration).
        with op.batch_alter_table(
            "rl_transitions", recreate="always", partial_reordering=[TRANSITION_ORDER]
        ) as batch:
            batch.add_column(source)
    else:
        op.add_column("rl_transitions", source)
    with op.batch_alter_table("rewards") as batch:
        batch.add_column(sa.Column("source", sa.String(16), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("rewards") as batch:
        batch.drop_column("source")
    with op.batch_alter_table("rl_transitions") as batch:
        batch.drop_column("reward_source")
    with op.batch_alter_table("episodes") as batch:
        batch.drop_column("outcome_confidence")
        batch.drop_column("outcome_source")
    op.drop_index("ux_task_kinds_ns_project_name", table_name="task_kinds")
    op.drop_table("task_kinds")
