"""API keys carry the highest memory sensitivity they may read

Revision ID: 7c3f0a9d2b14
Revises: 4e7d2b9c1a60
Create Date: 2026-12-01 15:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "7c3f0a9d2b14"
down_revision: str | None = "4e7d2b9c1a60"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Keys made before this read up to "high" (everything but restricted), as requests
    # did by default; an operator may raise a key by creating a new one.
    with op.batch_alter_table("api_keys") as batch:
        batch.add_column(
            sa.Column("max_sensitivity", sa.String(16), nullable=False, server_default="high")
        )


def downgrade() -> None:
    with op.batch_alter_table("api_keys") as batch:
        batch.drop_column("max_sensitivity")
