"""Tables and seats: the read model GetTable/WatchTable answer from (table_tables, table_seats).

Revision ID: table_0001
Revises:
Create Date: 2026-11-29
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "table_0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = ("table",)
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "table_tables",
        sa.Column("table_id", sa.String(64), primary_key=True),
        sa.Column("table_name", sa.String(200), nullable=False),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("multiplier", sa.BigInteger(), nullable=False),
        sa.Column("prize_pool_cents", sa.BigInteger(), nullable=False),
        sa.Column("buy_in_cents", sa.BigInteger(), nullable=False),
        sa.Column("starting_stack", sa.BigInteger(), nullable=False),
        sa.Column("stream_version", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "table_seats",
        sa.Column("table_id", sa.String(64), primary_key=True),
        sa.Column("seat", sa.Integer(), primary_key=True),
        sa.Column("player_id", sa.String(200), nullable=False),
        sa.Column("entry_id", sa.String(64), nullable=False),
        sa.Column("display_name", sa.String(200), nullable=False),
        sa.Column("stack", sa.BigInteger(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("table_seats")
    op.drop_table("table_tables")
