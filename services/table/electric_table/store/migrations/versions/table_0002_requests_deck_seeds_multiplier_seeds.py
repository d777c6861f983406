"""Live tables: command de-duplication, withheld deck seeds, revealed multiplier seeds.

Revision ID: table_0002
Revises: table_0001
Create Date: 2026-11-29
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "table_0002"
down_revision: str | Sequence[str] | None = "table_0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "table_requests",
        sa.Column("table_id", sa.String(64), primary_key=True),
        sa.Column("player_id", sa.String(200), primary_key=True),
        sa.Column("request_id", sa.String(200), primary_key=True),
        sa.Column("rpc", sa.String(32), nullable=False),
        sa.Column("code", sa.String(32), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("stream_version", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "table_deck_seeds",
        sa.Column("table_id", sa.String(64), primary_key=True),
        sa.Column("hand_number", sa.BigInteger(), primary_key=True),
        sa.Column("seed_hex", sa.String(128), nullable=False),
    )
    op.create_table(
        "table_multiplier_seeds",
        sa.Column("table_id", sa.String(64), primary_key=True),
        sa.Column("seed_hex", sa.String(128), nullable=False),
        sa.Column("multiplier", sa.BigInteger(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("table_multiplier_seeds")
    op.drop_table("table_deck_seeds")
    op.drop_table("table_requests")
