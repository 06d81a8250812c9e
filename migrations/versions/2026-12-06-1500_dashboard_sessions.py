"""Dashboard sessions: a sign-in kept as a token's hash, not as the API key

Revision ID: 7a1d3c9e5b20
Revises: 4c8e1f7a2d95
Create Date: 2026-12-06 15:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "7a1d3c9e5b20"
down_revision: str | None = "4c8e1f7a2d95"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "dashboard_sessions",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("key_id", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_dashboard_sessions_key", "dashboard_sessions", ["key_id"])


def downgrade() -> None:
    op.drop_index("ix_dashboard_sessions_key", table_name="dashboard_sessions")
    op.drop_table("dashboard_sessions")
