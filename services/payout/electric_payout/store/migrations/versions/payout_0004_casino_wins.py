"""Casino rounds decided and wins owed / credited: ``payout_casino_rounds``,
``payout_casino_wins``.

Revision ID: payout_0004
Revises: payout_0003
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "payout_0004"
down_revision: str | Sequence[str] | None = "payout_0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "payout_casino_wins",
        sa.Column("round_id", sa.String(64), primary_key=True),
        sa.Column("player_id", sa.String(200), primary_key=True),
        sa.Column("bet_kind", sa.String(32), primary_key=True),
        sa.Column("table_id", sa.String(64), nullable=False),
        sa.Column("game", sa.String(16), nullable=False),
        sa.Column("stake_cents", sa.BigInteger(), nullable=False),
        sa.Column("win_cents", sa.BigInteger(), nullable=False),
        sa.Column("stake_transfer_id", sa.String(200), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("transfer_key", sa.String(200), nullable=False),
        sa.Column("wallet_transfer_id", sa.String(200), nullable=False),
        sa.Column("source_event_id", sa.String(64), nullable=False),
        sa.Column("owed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("credited_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=False),
    )
    op.create_index("ix_payout_casino_wins_player", "payout_casino_wins", ["player_id", "owed_at"])
    op.create_index("ix_payout_casino_wins_status", "payout_casino_wins", ["status"])
    op.create_table(
        "payout_casino_rounds",
        sa.Column("round_id", sa.String(64), primary_key=True),
        sa.Column("table_id", sa.String(64), nullable=False),
        sa.Column("game", sa.String(16), nullable=False),
        sa.Column("outcome", sa.String(16), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("source_event_id", sa.String(64), nullable=False),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("payout_casino_rounds")
    op.drop_index("ix_payout_casino_wins_status", "payout_casino_wins")
    op.drop_index("ix_payout_casino_wins_player", "payout_casino_wins")
    op.drop_table("payout_casino_wins")
