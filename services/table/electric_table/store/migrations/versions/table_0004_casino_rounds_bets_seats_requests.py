"""Casino rounds, their bets (wallet reservations and owed settlement calls), the casino seats
registration grants, and casino request de-duplication.

Revision ID: table_0004
Revises: table_0003
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "table_0004"
down_revision: str | Sequence[str] | None = "table_0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "table_casino_rounds",
        sa.Column("round_id", sa.String(64), primary_key=True),
        sa.Column("table_id", sa.String(64), nullable=False),
        sa.Column("game", sa.String(8), nullable=False),
        sa.Column("player_id", sa.String(200), nullable=False),
        sa.Column("game_number", sa.String(64), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("acknowledged", sa.Boolean(), nullable=False),
        sa.Column("seed_hex", sa.String(128), nullable=False),
        sa.Column("stream_version", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_table_casino_rounds_table_id", "table_casino_rounds", ["table_id"])
    op.create_index("ix_table_casino_rounds_player_id", "table_casino_rounds", ["player_id"])
    op.create_table(
        "table_casino_bets",
        sa.Column("bet_id", sa.String(128), primary_key=True),
        sa.Column("round_id", sa.String(64), nullable=False),
        sa.Column("player_id", sa.String(200), nullable=False),
        sa.Column("spot", sa.String(16), nullable=False),
        sa.Column("amount_cents", sa.BigInteger(), nullable=False),
        sa.Column("owed_op", sa.String(8), nullable=False),
        sa.Column("op_done", sa.Boolean(), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=False),
    )
    op.create_index("ix_table_casino_bets_round_id", "table_casino_bets", ["round_id"])
    op.create_table(
        "table_casino_seats",
        sa.Column("table_id", sa.String(64), primary_key=True),
        sa.Column("player_id", sa.String(200), primary_key=True),
        sa.Column("game", sa.String(8), nullable=False),
        sa.Column("seat", sa.Integer(), nullable=False),
        sa.Column("session_id", sa.String(64), nullable=False),
    )
    op.create_table(
        "table_casino_requests",
        sa.Column("player_id", sa.String(200), primary_key=True),
        sa.Column("request_id", sa.String(200), primary_key=True),
        sa.Column("rpc", sa.String(32), nullable=False),
        sa.Column("round_id", sa.String(64), nullable=False),
        sa.Column("code", sa.String(32), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("table_casino_requests")
    op.drop_table("table_casino_seats")
    op.drop_index("ix_table_casino_bets_round_id", table_name="table_casino_bets")
    op.drop_table("table_casino_bets")
    op.drop_index("ix_table_casino_rounds_player_id", table_name="table_casino_rounds")
    op.drop_index("ix_table_casino_rounds_table_id", table_name="table_casino_rounds")
    op.drop_table("table_casino_rounds")
