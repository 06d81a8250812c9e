"""The dataset's per-candidate lists and candidate count of each transition, computed once
when the recall is logged (dataset schema 2).

Revision ID: 9d41b7c2e8a5
Revises: 7c2a9e5d3f10
Create Date: 2026-11-30 07:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "9d41b7c2e8a5"
down_revision: str | None = "7c2a9e5d3f10"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Nullable: transitions logged before this revision are rebuilt from their state and
    # action at export time.
    op.add_column("rl_transitions", sa.Column("n_candidates", sa.Integer(), nullable=True))
    op.add_column("rl_transitions", sa.Column("dataset_lists", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("rl_transitions") as batch:
        batch.drop_column("dataset_lists")
        batch.drop_column("n_candidates")
