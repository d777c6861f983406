"""Payout from results: tournaments, results, hand buttons, credit bookkeeping.

Revision ID: payout_0002
Revises: payout_0001
Create Date: 2026-11-29
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "payout_0002"
down_revision: str | Sequence[str] | None = "payout_0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    with op.batch_alter_table("payout_prizes") as batch:
        batch.add_column(
            sa.Column("transfer_key", sa.String(200), nullable=False, server_default="")
        )
        batch.add_column(sa.Column("seat", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("tied_count", sa.Integer(), nullable=False, server_default="1"))
        batch.add_column(sa.Column("attempts", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("last_error", sa.Text(), nullable=False, server_default=""))
    op.create_index("ix_payout_prizes_status", "payout_prizes", ["status"])
    op.create_table(
        "payout_tournaments",
        sa.Column("tournament_id", sa.String(64), primary_key=True),
        sa.Column("table_id", sa.String(64), nullable=False),
        sa.Column("buy_in_cents", sa.BigInteger(), nullable=False),
        sa.Column("prize_pool_cents", sa.BigInteger(), nullable=False),
        sa.Column("multiplier", sa.BigInteger(), nullable=False),
        sa.Column("paytable_version", sa.String(64), nullable=False),
        sa.Column("table_size", sa.Integer(), nullable=False),
        sa.Column("started", sa.LargeBinary(), nullable=False),
        sa.Column("received_at", _TS, nullable=False),
    )
    op.create_table(
        "payout_results",
        sa.Column("tournament_id", sa.String(64), primary_key=True),
        sa.Column("finished", sa.LargeBinary(), nullable=False),
        sa.Column("source_event_id", sa.String(64), nullable=False),
        sa.Column("received_at", _TS, nullable=False),
        sa.Column("awarded_at", _TS, nullable=True),
    )
    op.create_table(
        "payout_hand_buttons",
        sa.Column("table_id", sa.String(64), primary_key=True),
        sa.Column("hand_number", sa.BigInteger(), primary_key=True),
        sa.Column("button_seat", sa.Integer(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("payout_hand_buttons")
    op.drop_table("payout_results")
    op.drop_table("payout_tournaments")
    op.drop_index("ix_payout_prizes_status", "payout_prizes")
    with op.batch_alter_table("payout_prizes") as batch:
        for name in ("last_error", "attempts", "tied_count", "seat", "transfer_key"):
            batch.drop_column(name)
