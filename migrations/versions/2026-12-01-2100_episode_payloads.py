"""Episode payloads in SQL (ENGRAM_BLOB_STORE=sql)

Revision ID: 5d1e0c9a7b21
Revises: 2a9e61c4d8f3
Create Date: 2026-12-01 21:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "5d1e0c9a7b21"
down_revision: str | None = "2a9e61c4d8f3"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Empty unless the payload store is SQL; the LevelDB directory is left as it is.
    op.create_table(
        "episode_payloads",
        sa.Column("namespace", sa.String(64), primary_key=True),
        sa.Column("episode_id", sa.String(64), primary_key=True),
        sa.Column("part", sa.String(16), primary_key=True),
        sa.Column("data", sa.LargeBinary, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("episode_payloads")
