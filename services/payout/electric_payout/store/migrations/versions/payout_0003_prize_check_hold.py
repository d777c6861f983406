"""Hold a tournament whose prizes fail the audit re-check: ``payout_results.held_at``.

Revision ID: payout_0003
Revises: payout_0002
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "payout_0003"
down_revision: str | Sequence[str] | None = "payout_0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("payout_results") as batch:
        batch.add_column(sa.Column("held_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("payout_results") as batch:
        batch.drop_column("held_at")
