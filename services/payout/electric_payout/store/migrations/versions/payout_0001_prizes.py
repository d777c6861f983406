"""Payout prizes.

Revision ID: payout_0001
Revises:
Create Date: 2026-11-29
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "payout_0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = ("payout",)
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "payout_prizes",
        sa.Column("tournament_id", sa.String(64), primary_key=True),
        sa.Column("place", sa.Integer(), primary_key=True),
        sa.Column("player_id", sa.String(200), primary_key=True),
        sa.Column("entry_id", sa.String(64), nullable=False),
        sa.Column("table_id", sa.String(64), nullable=False),
        sa.Column("amount_cents", sa.BigInteger(), nullable=False),
        sa.Column("buy_in_cents", sa.BigInteger(), nullable=False),
        sa.Column("prize_pool_cents", sa.BigInteger(), nullable=False),
        sa.Column("multiplier", sa.BigInteger(), nullable=False),
        sa.Column("paytable_version", sa.String(64), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("wallet_transfer_id", sa.String(200), nullable=False),
        sa.Column("awarded_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("credited_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_index("ix_payout_prizes_player", "payout_prizes", ["player_id", "awarded_at"])


def downgrade() -> None:
    op.drop_index("ix_payout_prizes_player", "payout_prizes")
    op.drop_table("payout_prizes")
