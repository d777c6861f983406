"""Tournament results keep the correlation id of their TournamentFinished (additive): a
result decided later (``Payouts.decide_pending``) still records the tournament's chain.

Revision ID: payout_0005
Revises: payout_0004
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "payout_0005"
down_revision: str | Sequence[str] | None = "payout_0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("payout_results") as batch:
        batch.add_column(
            sa.Column("correlation_id", sa.String(200), nullable=False, server_default="")
        )


def downgrade() -> None:
    with op.batch_alter_table("payout_results") as batch:
        batch.drop_column("correlation_id")
