"""Episode token totals as 64-bit integers

Revision ID: 5b8e2d41c9a3
Revises: 3f1a9c6e2b47
Create Date: 2026-11-30 02:05:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "5b8e2d41c9a3"
down_revision: str | None = "3f1a9c6e2b47"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # SQLite's INTEGER is 64-bit already; PostgreSQL's is 32-bit, and one long episode's
    # tokens pass 2^31.
    if op.get_bind().dialect.name == "postgresql":
        op.alter_column("episodes", "total_tokens", type_=sa.BigInteger())


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.alter_column("episodes", "total_tokens", type_=sa.Integer())
