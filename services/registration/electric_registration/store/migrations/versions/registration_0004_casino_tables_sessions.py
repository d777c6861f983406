"""Casino lobby: ``registration_casino_tables`` and ``registration_casino_sessions``.

Revision ID: registration_0004
Revises: registration_0003
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "registration_0004"
down_revision: str | Sequence[str] | None = "registration_0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "registration_casino_tables",
        sa.Column("table_id", sa.String(64), primary_key=True),
        sa.Column("game", sa.String(16), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("owner_id", sa.String(200), nullable=False),
        sa.Column("opened_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index(
        "ux_registration_casino_tables_game_number",
        "registration_casino_tables",
        ["game", "number"],
        unique=True,
    )
    op.create_table(
        "registration_casino_sessions",
        sa.Column("session_id", sa.String(64), primary_key=True),
        sa.Column("table_id", sa.String(64), nullable=False),
        sa.Column("game", sa.String(16), nullable=False),
        sa.Column("player_id", sa.String(200), nullable=False),
        sa.Column("seat", sa.Integer(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_active_at", sa.DateTime(timezone=True), nullable=False),
    )
    t = "registration_casino_sessions"
    op.create_index(
        "ux_registration_casino_sessions_player", t, ["table_id", "player_id"], unique=True
    )
    op.create_index("ux_registration_casino_sessions_seat", t, ["table_id", "seat"], unique=True)
    op.create_index("ix_registration_casino_sessions_player", t, ["player_id"])
    op.create_index("ix_registration_casino_sessions_active", t, ["last_active_at"])


def downgrade() -> None:
    op.drop_table("registration_casino_sessions")
    op.drop_index("ux_registration_casino_tables_game_number", "registration_casino_tables")
    op.drop_table("registration_casino_tables")
