"""The observation vector of each transition, computed once when the recall is logged.

Revision ID: 7c2d94a1e0b6
Revises: 3fa911fe3f18
Create Date: 2026-11-29 21:10:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "7c2d94a1e0b6"
down_revision: str | None = "3fa911fe3f18"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Nullable: transitions logged before this revision are vectorised at export time.
    op.add_column("rl_transitions", sa.Column("observation_vector", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("rl_transitions") as batch:
        batch.drop_column("observation_vector")
