"""Job leases owned by one worker, renewed by its heartbeat

Revision ID: 8f3b2a6c4d10
Revises: 5d1e0c9a7b21
Create Date: 2026-12-01 21:10:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "8f3b2a6c4d10"
down_revision: str | None = "5d1e0c9a7b21"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Jobs left running by an earlier version have no owner: a worker requeues them when
    # it starts (app/worker/lease.py), as that version did.
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("claimed_by", sa.String(128), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("claimed_by")
