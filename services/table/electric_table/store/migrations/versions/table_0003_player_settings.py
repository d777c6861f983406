"""Players' showdown settings (Muck Winning Hands / Muck Losing Hands), latest per player.

Revision ID: table_0003
Revises: table_0002
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "table_0003"
down_revision: str | Sequence[str] | None = "table_0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "table_player_settings",
        sa.Column("player_id", sa.String(200), primary_key=True),
        sa.Column("muck_winning_hands", sa.Boolean(), nullable=False),
        sa.Column("muck_losing_hands", sa.Boolean(), nullable=False),
        sa.Column("version", sa.BigInteger(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("table_player_settings")
