"""Kinds of work keep some of their prompts' vectors, beside their sum

Revision ID: 5e2b8d4f1c63
Revises: 7a1d3c9e5b20
Create Date: 2026-12-07 22:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "5e2b8d4f1c63"
down_revision: str | None = "7a1d3c9e5b20"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("task_kinds", sa.Column("examples", sa.LargeBinary(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("task_kinds") as batch:
        batch.drop_column("examples")
