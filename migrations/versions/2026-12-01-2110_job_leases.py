"""Job leases owned by one worker, renewed by its heartbeat

Revision ID: 8f3b2a6c4d10
Revises: 5d1e0c9a7b21
Create Date: 2026-12-01 21:10:00
"""

from __future__ import annotations

from collections.abc import Sequence

revision: str = "8f3b2a6c4d10"
down_revision: str | None = "5d1e0c9a7b21"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
