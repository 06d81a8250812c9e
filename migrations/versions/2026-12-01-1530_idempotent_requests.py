"""Answers of requests made under an Idempotency-Key (rewards, keys, supersedes)

Revision ID: 2a9e61c4d8f3
Revises: 7c3f0a9d2b14
Create Date: 2026-12-01 15:30:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "2a9e61c4d8f3"
down_revision: str | None = "7c3f0a9d2b14"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "idempotent_requests",
        sa.Column("namespace", sa.String(64), primary_key=True),
        sa.Column("key", sa.String(256), primary_key=True),
        sa.Column("operation", sa.String(512), nullable=False),
        sa.Column("request_digest", sa.String(64), nullable=False),
        sa.Column("status_code", sa.Integer, nullable=False),
        sa.Column("response", sa.JSON, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("idempotent_requests")
