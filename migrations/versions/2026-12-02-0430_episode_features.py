"""Episodes keep their context's features in the index row, so learning can mine them

Revision ID: 3c7d9e2f5a81
Revises: 8f3b2a6c4d10
Create Date: 2026-12-02 04:30:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "3c7d9e2f5a81"
down_revision: str | None = "8f3b2a6c4d10"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Episodes stored before have their features in the payload only: learning reads
    # them as featureless (they were not mined before either).
    with op.batch_alter_table("episodes") as batch:
        batch.add_column(
            sa.Column("features", sa.JSON(), nullable=False, server_default=sa.text("'{}'"))
        )


def downgrade() -> None:
    with op.batch_alter_table("episodes") as batch:
        batch.drop_column("features")
