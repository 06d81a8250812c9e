"""Agent sessions: kinds of work per project, and how an episode's outcome is known

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


def upgrade() -> None:
    op.create_table(
        "task_kinds",
        sa.Column("namespace", sa.String(64), primary_key=True),
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("project", sa.String(256), nullable=False),
        sa.Column("name", sa.String(256), nullable=False),
        sa.Column("prompts", sa.Integer(), nullable=False),
        sa.Column("terms", sa.JSON(), nullable=False),
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


def downgrade() -> None:
    with op.batch_alter_table("episodes") as batch:
        batch.drop_column("outcome_confidence")
        batch.drop_column("outcome_source")
    op.drop_index("ux_task_kinds_ns_project_name", table_name="task_kinds")
    op.drop_table("task_kinds")
