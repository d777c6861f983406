"""The players of each live UTH round who had stakes in it, and whether they saw its result
(AckResult): a UTH round is unfinished for such a player until acknowledged.

Revision ID: table_0006
Revises: table_0005
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "table_0006"
down_revision: str | Sequence[str] | None = "table_0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "table_casino_uth_players",
        sa.Column("round_id", sa.String(64), primary_key=True),
        sa.Column("player_id", sa.String(200), primary_key=True),
        sa.Column("table_id", sa.String(64), nullable=False),
        sa.Column("acknowledged", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index(
        "ix_table_casino_uth_players_player_id", "table_casino_uth_players", ["player_id"]
    )


def downgrade() -> None:
    op.drop_index("ix_table_casino_uth_players_player_id", table_name="table_casino_uth_players")
    op.drop_table("table_casino_uth_players")
